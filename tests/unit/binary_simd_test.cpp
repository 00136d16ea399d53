// Binary elementwise fast paths: every f32 table entry at every ISA level
// against an independent double-precision reference (tails, guard pages on
// either side, unaligned pointers, in place, NaN/Inf/zero/denormal inputs), and
// the op objects' broadcast forms (same shape, scalar, row bias, column, outer,
// general, zero-size) for each dtype family, with results identical at 1 and 2
// threads.
// ctest: every ISA level
// ctest: emulated CPUs
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "base/isa.h"
#include "guard_buffer.h"
#include "kernels/elementwise/binary_ukernels.h"
#include "op_test_util.h"
#include "threading/thread_pool.h"

namespace ember {
namespace {

using kernels::BinaryKind;
using test::make_tensor;
using test::run_op;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

bool same_float(float got, float want) {
  if (std::isnan(want)) return std::isnan(got);
  return std::memcmp(&got, &want, sizeof(float)) == 0;
}

// The reference for each kind in double precision: one rounding of the exact
// result (double holds every f32 sum/product exactly enough for that), and
// Max/Min as the variadic ops define them: a's NaN wins, then b's NaN, ties give b.
float reference(BinaryKind kind, float a, float b) {
  const double x = a, y = b;
  switch (kind) {
    case BinaryKind::kAdd: return static_cast<float>(x + y);
    case BinaryKind::kSub: return static_cast<float>(x - y);
    case BinaryKind::kMul: return static_cast<float>(x * y);
    case BinaryKind::kDiv: return static_cast<float>(x / y);
    case BinaryKind::kMax: return std::isnan(a) ? a : std::isnan(b) ? b : (x > y ? a : b);
    case BinaryKind::kMin: return std::isnan(a) ? a : std::isnan(b) ? b : (x < y ? a : b);
    default: return kNaN;
  }
}

std::vector<float> special_mix(size_t n, uint32_t seed) {
  static const float kSpecial[] = {kNaN, kInf, -kInf, 0.0f, -0.0f, 1e-40f, -1e-40f, 3.4e38f, -1.0f, 1.0f};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-100.0f, 100.0f);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = (rng() % 5 == 0) ? kSpecial[rng() % std::size(kSpecial)] : dist(rng);
  return v;
}

const int64_t kSizes[] = {0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 127, 129, 1000, 1031};
const BinaryKind kKinds[] = {BinaryKind::kAdd, BinaryKind::kSub, BinaryKind::kMul,
                             BinaryKind::kDiv, BinaryKind::kMax, BinaryKind::kMin};

enum class Form { kVV, kVS, kSV };
enum class Alias { kNone, kA, kB };

// Runs one entry with each operand against a guard page (the scalar operand of
// kVS/kSV is one element), first at the end and then at the start, with y
// optionally aliasing a or b, and checks every element.
void check_entry(Isa isa, BinaryKind kind, Form form, Alias alias, int64_t n) {
  const auto& t = kernels::binary_table(isa);
  const int k = static_cast<int>(kind);
  const kernels::BinaryF32Fn fn = form == Form::kVV ? t.vv[k] : form == Form::kVS ? t.vs[k] : t.sv[k];
  const size_t len = static_cast<size_t>(n) + 2;
  const std::vector<float> a0 = special_mix(len, static_cast<uint32_t>(n * 7 + k));
  const std::vector<float> b0 = special_mix(len, static_cast<uint32_t>(n * 13 + k + 1));
  const std::span<const float> a_values = std::span(a0).subspan(1, form == Form::kSV ? 1 : static_cast<size_t>(n));
  const std::span<const float> b_values = std::span(b0).subspan(1, form == Form::kVS ? 1 : static_cast<size_t>(n));
  for (test::GuardAt at : test::kBothGuards) {
    test::GuardedBuffer<float> a(a_values, at), b(b_values, at);
    test::GuardedBuffer<float> y(static_cast<size_t>(n), at);
    float* py = alias == Alias::kA ? a.data() : alias == Alias::kB ? b.data() : y.data();
    fn(a.data(), b.data(), py, n);
    const std::string where = std::string(isa_name(isa)) + " kind " + std::to_string(k) + " form " +
                              std::to_string(static_cast<int>(form)) + " alias " +
                              std::to_string(static_cast<int>(alias)) + " n " + std::to_string(n) + " " +
                              test::guard_name(at);
    for (int64_t i = 0; i < n; ++i) {
      const float av = form == Form::kSV ? a0[1] : a0[1 + i];
      const float bv = form == Form::kVS ? b0[1] : b0[1 + i];
      const float want = reference(kind, av, bv);
      ASSERT_TRUE(same_float(py[i], want)) << where << " at " << i << ": op(" << av << ", " << bv << ") = " << py[i]
                                           << ", want " << want;
    }
  }
}

TEST(BinaryMicrokernels, EveryEntryEveryIsaMatchesReference) {
  for (Isa isa : available_isas()) {
    for (BinaryKind kind : kKinds) {
      for (int64_t n : kSizes) {
        check_entry(isa, kind, Form::kVV, Alias::kNone, n);
        check_entry(isa, kind, Form::kVS, Alias::kNone, n);
        check_entry(isa, kind, Form::kSV, Alias::kNone, n);
      }
    }
  }
}

TEST(BinaryMicrokernels, InPlace) {
  for (Isa isa : available_isas()) {
    for (BinaryKind kind : kKinds) {
      for (int64_t n : {int64_t{17}, int64_t{65}, int64_t{1031}}) {
        check_entry(isa, kind, Form::kVV, Alias::kA, n);
        check_entry(isa, kind, Form::kVV, Alias::kB, n);
        check_entry(isa, kind, Form::kVS, Alias::kA, n);
        check_entry(isa, kind, Form::kSV, Alias::kB, n);
      }
    }
  }
}

TEST(BinaryMicrokernels, MaxMinNaNAndSignedZero) {
  for (Isa isa : available_isas()) {
    const auto& t = kernels::binary_table(isa);
    const float a[] = {kNaN, 1.0f, kNaN, 0.0f, -0.0f, -kInf, kInf};
    const float b[] = {1.0f, kNaN, kNaN, -0.0f, 0.0f, kInf, -kInf};
    float mx[7], mn[7];
    t.vv[static_cast<int>(BinaryKind::kMax)](a, b, mx, 7);
    t.vv[static_cast<int>(BinaryKind::kMin)](a, b, mn, 7);
    for (int i = 0; i < 3; ++i) {
      EXPECT_TRUE(std::isnan(mx[i]) && std::isnan(mn[i])) << isa_name(isa) << " at " << i;
    }
    // Equal operands give b, as the reference `(a != a || a > b) ? a : b` does.
    EXPECT_TRUE(std::signbit(mx[3]) && std::signbit(mn[3])) << isa_name(isa);
    EXPECT_TRUE(!std::signbit(mx[4]) && !std::signbit(mn[4])) << isa_name(isa);
    EXPECT_EQ(mx[5], kInf);
    EXPECT_EQ(mn[5], -kInf);
    EXPECT_EQ(mx[6], kInf);
    EXPECT_EQ(mn[6], -kInf);
  }
}

// ---- op level ----

template <typename T>
double to_double(T v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    return static_cast<float>(v);
  } else {
    return static_cast<double>(v);
  }
}

template <typename T>
T from_double(double v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    return T(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else {
    return static_cast<T>(v);
  }
}

// Values in [lo, hi] with a few NaN/Inf for float types; whole numbers for integers.
template <typename T>
Tensor random_tensor(const Shape& shape, uint32_t seed, double lo = -50, double hi = 50, bool nonzero = false) {
  Tensor t = Tensor::allocate(dtype_of<T>, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  T* p = t.data_as<T>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = dist(rng);
    if constexpr (std::is_integral_v<T>) v = std::round(v);
    if constexpr (std::is_unsigned_v<T>) v = std::fabs(v);
    if (nonzero && v == 0) v = 1;
    if constexpr (std::is_same_v<T, bool>) {
      p[i] = rng() % 2 == 0;
    } else {
      if constexpr (!std::is_integral_v<T>) {
        if (rng() % 16 == 0) v = (rng() % 2 == 0) ? kNaN : (rng() % 2 == 0 ? kInf : -kInf);
      }
      p[i] = from_double<T>(v);
    }
  }
  return t;
}

Shape broadcast_of(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank, 1);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t da = d + a.size() >= rank ? a[d + a.size() - rank] : 1;
    const int64_t db = d + b.size() >= rank ? b[d + b.size() - rank] : 1;
    out[d] = da == 1 ? db : da;
  }
  return out;
}

// Flat index into `in` of output element `i` under numpy broadcasting.
int64_t source_index(const Shape& in, const Shape& out, int64_t i) {
  int64_t index = 0, stride = 1;
  for (size_t d = out.size(); d-- > 0;) {
    const int64_t coord = i % out[d];
    i /= out[d];
    const size_t k = d + in.size();
    if (k >= out.size()) {
      const int64_t dim = in[k - out.size()];
      if (dim != 1) index += coord * stride;
      stride *= dim;
    }
  }
  return index;
}

template <typename T>
bool same_value(T got, T want) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    return (std::isnan(static_cast<float>(want)) && std::isnan(static_cast<float>(got))) || got.bits == want.bits;
  } else if constexpr (std::is_floating_point_v<T>) {
    return (std::isnan(want) && std::isnan(got)) || std::memcmp(&got, &want, sizeof(T)) == 0;
  } else {
    return got == want;
  }
}

// Runs `op` at 1 and 2 threads and checks both against ref(a, b) (in double,
// rounded to the output type once) and against each other bit for bit.
template <typename T, typename O = T>
void check_op(const std::string& op, const Shape& as, const Shape& bs, const std::function<double(double, double)>& ref,
              bool nonzero_b = false, std::vector<ir::Attribute> attrs = {}) {
  Tensor a = random_tensor<T>(as, 11);
  Tensor b = random_tensor<T>(bs, 12, -50, 50, nonzero_b);
  const Shape out_shape = broadcast_of(as, bs);
  std::vector<Tensor> results;
  for (int threads : {1, 2}) {
    threading::ScopedThreadLimit limit(threads);
    auto r = run_op(op, {&a, &b}, attrs);
    ASSERT_TRUE(r.is_ok()) << op << ": " << r.status().to_string();
    results.push_back(std::move(r.value()[0]));
  }
  const std::string what = op + " " + shape_to_string(as) + " with " + shape_to_string(bs);
  ASSERT_EQ(results[0].shape(), out_shape) << what;
  ASSERT_EQ(results[0].dtype(), dtype_of<O>) << what;
  ASSERT_EQ(std::memcmp(results[0].data(), results[1].data(), results[0].nbytes()), 0) << what << ": 1 vs 2 threads";
  const O* got = results[0].data_as<O>();
  for (int64_t i = 0; i < results[0].numel(); ++i) {
    const T x = a.data_as<T>()[source_index(as, out_shape, i)];
    const T y = b.data_as<T>()[source_index(bs, out_shape, i)];
    double r = ref(to_double(x), to_double(y));
    if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) r = static_cast<float>(r);
    const O want = from_double<O>(r);
    ASSERT_TRUE(same_value(got[i], want)) << what << " at " << i << ": op(" << to_double(x) << ", " << to_double(y)
                                          << ") = " << to_double(got[i]) << ", want " << to_double(want);
  }
}

// Shapes covering every path: flat (same, scalar), row bias, column, outer,
// general strided, zero-size, and sizes past the parallel grain.
const std::vector<std::pair<Shape, Shape>> kShapeCases = {
    {{3, 37}, {3, 37}},     {{5, 33}, {}},          {{}, {5, 33}},        {{1}, {200}},
    {{4, 65}, {65}},        {{2, 3, 17}, {3, 17}},  {{17}, {4, 17}},      {{4, 65}, {4, 1}},
    {{2, 3, 17}, {3, 1}},   {{4, 1}, {4, 65}},      {{5, 1}, {1, 7}},     {{1, 9}, {6, 1}},
    {{2, 1, 3, 5}, {4, 1, 5}}, {{2, 3, 1}, {1, 1, 4}}, {{3, 1, 4, 1}, {3, 2, 1, 5}},
    {{0, 3}, {3}},          {{2, 0}, {2, 1}},       {{40000}, {40000}},   {{3, 40000}, {}},
    {{600, 129}, {129}},    {{600, 129}, {600, 1}}, {{64, 3, 200}, {64, 1, 200}}};

double ref_add(double x, double y) { return x + y; }
double ref_sub(double x, double y) { return x - y; }
double ref_mul(double x, double y) { return x * y; }
double ref_div(double x, double y) { return x / y; }

template <typename T>
void check_arithmetic() {
  for (const auto& [as, bs] : kShapeCases) {
    check_op<T>("Add", as, bs, ref_add);
    check_op<T>("Sub", as, bs, ref_sub);
    check_op<T>("Mul", as, bs, ref_mul);
    if constexpr (std::is_integral_v<T>) {
      check_op<T>("Div", as, bs, [](double x, double y) { return std::trunc(x / y); }, true);
    } else {
      check_op<T>("Div", as, bs, ref_div);
    }
  }
}

TEST(BinaryOps, ArithmeticF32) { check_arithmetic<float>(); }
TEST(BinaryOps, ArithmeticF16) { check_arithmetic<Float16>(); }
TEST(BinaryOps, ArithmeticBF16) { check_arithmetic<BFloat16>(); }
TEST(BinaryOps, ArithmeticF64) { check_arithmetic<double>(); }
TEST(BinaryOps, ArithmeticInt32) { check_arithmetic<int32_t>(); }
TEST(BinaryOps, ArithmeticInt64) { check_arithmetic<int64_t>(); }
TEST(BinaryOps, ArithmeticUint8) {
  check_op<uint8_t>("Add", {4, 65}, {65}, [](double x, double y) { return std::fmod(x + y + 512, 256); });
}

template <typename T>
void check_compare() {
  for (const auto& [as, bs] : kShapeCases) {
    check_op<T, bool>("Less", as, bs, [](double x, double y) { return x < y; });
    check_op<T, bool>("GreaterOrEqual", as, bs, [](double x, double y) { return x >= y; });
    check_op<T, bool>("Equal", as, bs, [](double x, double y) { return x == y; });
  }
}

TEST(BinaryOps, CompareF32) { check_compare<float>(); }
TEST(BinaryOps, CompareF16) { check_compare<Float16>(); }
TEST(BinaryOps, CompareInt64) { check_compare<int64_t>(); }

TEST(BinaryOps, Logical) {
  for (const auto& [as, bs] : kShapeCases) {
    check_op<bool, bool>("And", as, bs, [](double x, double y) { return x != 0 && y != 0; });
    check_op<bool, bool>("Or", as, bs, [](double x, double y) { return x != 0 || y != 0; });
    check_op<bool, bool>("Xor", as, bs, [](double x, double y) { return (x != 0) != (y != 0); });
  }
}

TEST(BinaryOps, Mod) {
  for (const auto& [as, bs] : kShapeCases) {
    check_op<int32_t>("Mod", as, bs, [](double x, double y) { return x - y * std::floor(x / y); }, true);
    check_op<float>("Mod", as, bs, [](double x, double y) { return std::fmod(x, y); }, false,
                    {test::attr_int("fmod", 1)});
    // fmod=0 on floats: numpy.mod, the divisor's sign (x - y * floor(x / y); by an infinite
    // divisor, x when it has the divisor's sign or is zero, else the divisor).
    check_op<float>("Mod", as, bs, [](double x, double y) {
      if (std::isinf(y) && std::isfinite(x)) return x == 0 || (x < 0) == (y < 0) ? x : y;
      return x - y * std::floor(x / y);
    }, false);
  }
}

// Pow by a scalar exponent: the special exponents against double pow, within
// one rounding of x*x*x for 3; the general exponent goes through std::pow.
TEST(BinaryOps, PowScalarExponent) {
  for (float e : {2.0f, 3.0f, 1.0f, 0.5f, 1.7f}) {
    Tensor x = random_tensor<float>({3, 40000}, 21, -20, 20);
    x.data_as<float>()[0] = -0.0f;
    x.data_as<float>()[1] = -kInf;
    x.data_as<float>()[2] = kInf;
    x.data_as<float>()[3] = kNaN;
    x.data_as<float>()[4] = 1e-40f;
    Tensor ex = make_tensor<float>({}, {e});
    std::vector<Tensor> results;
    for (int threads : {1, 2}) {
      threading::ScopedThreadLimit limit(threads);
      auto r = run_op("Pow", {&x, &ex});
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      results.push_back(std::move(r.value()[0]));
    }
    ASSERT_EQ(std::memcmp(results[0].data(), results[1].data(), results[0].nbytes()), 0) << "exponent " << e;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const float xv = x.data_as<float>()[i];
      const float got = results[0].data_as<float>()[i];
      const float want = static_cast<float>(std::pow(static_cast<double>(xv), static_cast<double>(e)));
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(got)) << "pow(" << xv << ", " << e << ") = " << got;
      } else if (std::isinf(want) || want == 0) {
        ASSERT_EQ(got, want) << "pow(" << xv << ", " << e << ")";
        ASSERT_EQ(std::signbit(got), std::signbit(want)) << "pow(" << xv << ", " << e << ")";
      } else {
        ASSERT_NEAR(got, want, 3e-7 * std::fabs(want)) << "pow(" << xv << ", " << e << ")";
      }
    }
  }
}

TEST(BinaryOps, PowBroadcastAndIntegers) {
  check_op<float>("Pow", {4, 65}, {65}, [](double x, double y) { return std::pow(static_cast<float>(x), static_cast<float>(y)); });
  Tensor b = make_tensor<int64_t>({5}, {2, -3, 0, 7, 3});
  Tensor e = make_tensor<int64_t>({}, {3});
  auto r = run_op("Pow", {&b, &e});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(test::values_of<int64_t>(r.value()[0]), (std::vector<int64_t>{8, -27, 0, 343, 27}));
}

// ---- Where ----

template <typename T>
void check_where(const Shape& cs, const Shape& xs, const Shape& ys) {
  Tensor c = random_tensor<bool>(cs, 31);
  Tensor x = random_tensor<T>(xs, 32);
  Tensor y = random_tensor<T>(ys, 33);
  const Shape out_shape = broadcast_of(cs, broadcast_of(xs, ys));
  std::vector<Tensor> results;
  for (int threads : {1, 2}) {
    threading::ScopedThreadLimit limit(threads);
    auto r = run_op("Where", {&c, &x, &y});
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    results.push_back(std::move(r.value()[0]));
  }
  const std::string what = shape_to_string(cs) + " " + shape_to_string(xs) + " " + shape_to_string(ys);
  ASSERT_EQ(results[0].shape(), out_shape) << what;
  ASSERT_EQ(std::memcmp(results[0].data(), results[1].data(), results[0].nbytes()), 0) << what << ": 1 vs 2 threads";
  for (int64_t i = 0; i < results[0].numel(); ++i) {
    const bool cv = c.data_as<bool>()[source_index(cs, out_shape, i)];
    const T want = cv ? x.data_as<T>()[source_index(xs, out_shape, i)] : y.data_as<T>()[source_index(ys, out_shape, i)];
    ASSERT_TRUE(same_value(results[0].data_as<T>()[i], want)) << what << " at " << i;
  }
}

template <typename T>
void check_where_shapes() {
  check_where<T>({3, 37}, {3, 37}, {3, 37});
  check_where<T>({3, 37}, {}, {3, 37});
  check_where<T>({3, 37}, {3, 37}, {1});
  check_where<T>({50000}, {}, {});
  check_where<T>({}, {4, 9}, {4, 9});
  check_where<T>({4, 1}, {1, 9}, {4, 9});
  check_where<T>({2, 1, 5}, {3, 1}, {2, 3, 5});
  check_where<T>({1, 1, 8, 8}, {2, 4, 8, 8}, {});  // attention-mask form
  check_where<T>({600, 129}, {129}, {600, 1});
  check_where<T>({0, 4}, {4}, {});
}

TEST(WhereOp, F32) { check_where_shapes<float>(); }
TEST(WhereOp, F16) { check_where_shapes<Float16>(); }
TEST(WhereOp, Int64) { check_where_shapes<int64_t>(); }
TEST(WhereOp, Uint8) { check_where_shapes<uint8_t>(); }
TEST(WhereOp, Bool) { check_where_shapes<bool>(); }

// ---- variadic Sum/Max/Min/Mean ----

template <typename T>
void check_variadic(const std::string& op, const std::vector<Shape>& shapes,
                    const std::function<double(const std::vector<double>&)>& ref) {
  std::vector<Tensor> inputs;
  std::vector<const Tensor*> ptrs;
  Shape out_shape = shapes[0];
  for (size_t i = 0; i < shapes.size(); ++i) {
    inputs.push_back(random_tensor<T>(shapes[i], static_cast<uint32_t>(40 + i)));
    out_shape = broadcast_of(out_shape, shapes[i]);
  }
  for (const Tensor& t : inputs) ptrs.push_back(&t);
  std::vector<Tensor> results;
  for (int threads : {1, 2}) {
    threading::ScopedThreadLimit limit(threads);
    auto r = run_op(op, ptrs);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    results.push_back(std::move(r.value()[0]));
  }
  ASSERT_EQ(results[0].shape(), out_shape) << op;
  ASSERT_EQ(std::memcmp(results[0].data(), results[1].data(), results[0].nbytes()), 0) << op << ": 1 vs 2 threads";
  for (int64_t i = 0; i < results[0].numel(); ++i) {
    std::vector<double> v;
    for (size_t k = 0; k < inputs.size(); ++k) {
      v.push_back(to_double(inputs[k].data_as<T>()[source_index(shapes[k], out_shape, i)]));
    }
    double r = ref(v);
    if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) r = static_cast<float>(r);
    const T want = from_double<T>(r);
    ASSERT_TRUE(same_value(results[0].data_as<T>()[i], want))
        << op << " at " << i << ": " << to_double(results[0].data_as<T>()[i]) << ", want " << to_double(want);
  }
}

// References in f32 steps for f32 (the op rounds after each input, left to right).
template <typename T>
void check_variadic_ops(const std::vector<Shape>& shapes) {
  using Acc = std::conditional_t<std::is_same_v<T, double> || std::is_integral_v<T>, double, float>;
  auto sum = [](const std::vector<double>& v) {
    Acc acc = static_cast<Acc>(v[0]);
    for (size_t i = 1; i < v.size(); ++i) acc = static_cast<Acc>(acc + static_cast<Acc>(v[i]));
    return static_cast<double>(acc);
  };
  auto extreme = [](bool max) {
    return [max](const std::vector<double>& v) {
      double acc = v[0];
      for (size_t i = 1; i < v.size(); ++i) {
        if (std::isnan(acc)) break;
        if (std::isnan(v[i]) || (max ? v[i] >= acc : v[i] <= acc)) acc = v[i];
      }
      return acc;
    };
  };
  check_variadic<T>("Sum", shapes, sum);
  check_variadic<T>("Max", shapes, extreme(true));
  check_variadic<T>("Min", shapes, extreme(false));
  check_variadic<T>("Mean", shapes, [sum](const std::vector<double>& v) {
    const double s = sum(v);
    if constexpr (std::is_integral_v<T>) {
      return std::trunc(s / static_cast<double>(v.size()));
    } else {
      return static_cast<double>(static_cast<Acc>(static_cast<Acc>(s) / static_cast<Acc>(v.size())));
    }
  });
}

template <typename T>
void check_variadic_shapes() {
  check_variadic_ops<T>({{3, 37}});
  check_variadic_ops<T>({{3, 37}, {3, 37}, {3, 37}});
  check_variadic_ops<T>({{3, 37}, {37}, {}, {3, 1}});
  check_variadic_ops<T>({{1}, {1, 5}, {4, 1}});
  check_variadic_ops<T>({{40000}, {40000}});
  check_variadic_ops<T>({{0, 3}, {3}});
}

TEST(VariadicOps, F32) { check_variadic_shapes<float>(); }
TEST(VariadicOps, F16) { check_variadic_shapes<Float16>(); }
TEST(VariadicOps, F64) { check_variadic_shapes<double>(); }
TEST(VariadicOps, Int32) { check_variadic_shapes<int32_t>(); }

}  // namespace
}  // namespace ember
