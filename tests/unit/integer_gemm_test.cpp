// Integer GEMM: the packed microkernels at every ISA level against the
// reference loop (integer_gemm.h), exactly; MatMulInteger and QLinearMatMul
// through the registry on both their packed (constant B) and reference paths.
// The microkernels' A, zero points, scales and outputs sit against guard pages.
// ctest: every ISA level
// ctest: emulated CPUs
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "base/isa.h"
#include "guard_buffer.h"
#include "kernels/quant/integer_gemm.h"
#include "kernels/quant/qgemm_driver.h"
#include "op_test_util.h"
#include "threading/thread_pool.h"

namespace ember {
namespace {

using kernels::IntegerGemmParams;
using kernels::gemm_integer_ref;
namespace quant = kernels::quant;

enum class Zp { kNone, kTensor, kAxis, kLow, kHigh };

struct Case {
  int64_t m, n, k;
  bool a_signed, b_signed;
  Zp a_zp, b_zp;
};

std::vector<uint8_t> random_bytes(int64_t count, std::mt19937& rng, Zp extreme = Zp::kNone) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> v(static_cast<size_t>(count));
  for (auto& x : v) x = static_cast<uint8_t>(byte(rng));
  // Operands only at the ends of the u8 and s8 ranges (0, 255, -128, 127), to
  // meet zero points at the other end: the largest |products|.
  if (extreme == Zp::kLow) {
    constexpr uint8_t kEnds[] = {0x00, 0xFF, 0x80, 0x7F};
    for (auto& x : v) x = kEnds[x & 3];
  }
  return v;
}

// The zero points for one operand: absent, per tensor, per row/column or at
// either end of the type's range (0 / 255 for u8, -128 / 127 for s8).
std::vector<uint8_t> zero_points(Zp zp, int64_t per_axis, bool is_signed, std::mt19937& rng) {
  switch (zp) {
    case Zp::kNone: return {};
    case Zp::kTensor: return random_bytes(1, rng);
    case Zp::kAxis: return random_bytes(per_axis, rng);
    case Zp::kLow: return {static_cast<uint8_t>(is_signed ? 0x80 : 0x00)};
    case Zp::kHigh: return {static_cast<uint8_t>(is_signed ? 0x7F : 0xFF)};
  }
  return {};
}

std::vector<int32_t> reference(const Case& c, const std::vector<uint8_t>& a, const std::vector<uint8_t>& a_zp,
                               const std::vector<uint8_t>& b, const std::vector<uint8_t>& b_zp) {
  IntegerGemmParams p;
  p.m = c.m, p.n = c.n, p.k = c.k, p.lda = c.k, p.ldb = c.n, p.ldc = c.n;
  p.a_zp_stride = a_zp.size() > 1 ? 1 : 0;
  p.b_zp_stride = b_zp.size() > 1 ? 1 : 0;
  std::vector<int32_t> out(static_cast<size_t>(c.m * c.n));
  const auto run = [&]<typename TA, typename TB>() {
    gemm_integer_ref<TA, TB>(p, reinterpret_cast<const TA*>(a.data()),
                             a_zp.empty() ? nullptr : reinterpret_cast<const TA*>(a_zp.data()),
                             reinterpret_cast<const TB*>(b.data()),
                             b_zp.empty() ? nullptr : reinterpret_cast<const TB*>(b_zp.data()), out.data());
  };
  if (!c.a_signed && !c.b_signed) run.template operator()<uint8_t, uint8_t>();
  if (!c.a_signed && c.b_signed) run.template operator()<uint8_t, int8_t>();
  if (c.a_signed && !c.b_signed) run.template operator()<int8_t, uint8_t>();
  if (c.a_signed && c.b_signed) run.template operator()<int8_t, int8_t>();
  return out;
}

// An independent output stage: f32 product, clamp, round half to even.
uint8_t requantize_expected(int32_t acc, float mult, int32_t zp, bool is_signed) {
  const double lo = is_signed ? -128 : 0, hi = is_signed ? 127 : 255;
  const float f = static_cast<float>(acc) * mult;
  double r = std::lrint(static_cast<double>(f)) + zp;
  r = r < lo ? lo : r > hi ? hi : r;
  return static_cast<uint8_t>(static_cast<int32_t>(r));
}

void check_case(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  const auto a = random_bytes(c.m * c.k, rng, c.a_zp == Zp::kHigh ? Zp::kLow : Zp::kNone);
  const auto b = random_bytes(c.k * c.n, rng, c.b_zp == Zp::kHigh ? Zp::kLow : Zp::kNone);
  const auto a_zp = zero_points(c.a_zp, c.m, c.a_signed, rng);
  const auto b_zp = zero_points(c.b_zp, c.n, c.b_signed, rng);
  const auto want = reference(c, a, a_zp, b, b_zp);
  const quant::QGemmWeights w = quant::pack_qgemm_weights(b.data(), c.b_signed, c.k, c.n,
                                                          b_zp.empty() ? nullptr : b_zp.data(), b_zp.size() > 1);
  quant::QGemmA qa;
  qa.data = a.data();
  qa.is_signed = c.a_signed;
  qa.m = c.m;
  qa.zp = a_zp.empty() ? nullptr : a_zp.data();
  qa.zp_stride = a_zp.size() > 1 ? 1 : 0;
  std::vector<float> b_scale(static_cast<size_t>(c.n));
  for (auto& s : b_scale) s = std::uniform_real_distribution<float>(0.5f, 2.0f)(rng);
  quant::QGemmRequant rq;
  rq.a_scale = 0.02f;
  rq.y_scale = 0.5f * std::sqrt(static_cast<float>(c.k) + 1.0f);
  rq.b_scale = b_scale.data();
  rq.b_scale_stride = 1;
  rq.y_zp = c.a_signed ? -3 : 131;
  rq.y_signed = c.a_signed;
  std::vector<uint8_t> want_q(want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const float mult = rq.a_scale * b_scale[i % static_cast<size_t>(c.n)] / rq.y_scale;
    want_q[i] = requantize_expected(want[i], mult, rq.y_zp, rq.y_signed);
  }
  // A, its zero points, the scales and the outputs against guard pages.
  for (test::GuardAt at : test::kBothGuards) {
    const test::GuardedBuffer<uint8_t> guarded_a(a, at), guarded_a_zp(a_zp, at);
    const test::GuardedBuffer<float> guarded_b_scale(b_scale, at);
    qa.data = guarded_a.data();
    qa.zp = a_zp.empty() ? nullptr : guarded_a_zp.data();
    rq.b_scale = guarded_b_scale.data();
    for (Isa isa : available_isas()) {
      for (int threads : {1, 2}) {
        threading::ScopedThreadLimit limit(threads);
        test::GuardedBuffer<int32_t> got(want.size(), 0x5A5A5A5A, at);
        quant::run_qgemm(quant::qgemm_table(isa), w, qa, nullptr, got.data());
        ASSERT_EQ(std::vector<int32_t>(got.begin(), got.end()), want)
            << isa_name(isa) << " threads " << threads << " M" << c.m << " N" << c.n << " K" << c.k << " a_signed "
            << c.a_signed << " b_signed " << c.b_signed << " " << test::guard_name(at);
        test::GuardedBuffer<uint8_t> got_q(want.size(), 0x5A, at);
        quant::run_qgemm(quant::qgemm_table(isa), w, qa, &rq, got_q.data());
        ASSERT_EQ(std::vector<uint8_t>(got_q.begin(), got_q.end()), want_q)
            << "requantized, " << isa_name(isa) << " threads " << threads << " M" << c.m << " N" << c.n << " K"
            << c.k << " " << test::guard_name(at);
      }
    }
  }
}

TEST(IntegerGemm, EveryKTailEveryTypeAndIsa) {
  uint32_t seed = 1;
  for (int64_t k : {0, 1, 3, 4, 5, 15, 16, 17, 31, 33, 63, 64, 65, 127, 129, 1031}) {
    for (int64_t m : {1, 5}) {
      for (int64_t n : {17, 65}) {
        for (int t = 0; t < 4; ++t) {
          check_case({m, n, k, (t & 1) != 0, (t & 2) != 0, Zp::kTensor, Zp::kTensor}, seed++);
        }
      }
    }
  }
}

TEST(IntegerGemm, EveryMAndNTail) {
  uint32_t seed = 100;
  for (int64_t m : {0, 1, 3, 4, 5, 15, 16, 17, 65, 129}) {
    for (int64_t n : {1, 3, 15, 16, 17, 31, 33, 63, 64, 65, 129}) {
      for (int64_t k : {5, 64}) {
        check_case({m, n, k, (seed & 1) != 0, (seed & 2) != 0, Zp::kAxis, Zp::kAxis}, seed);
        ++seed;
      }
    }
  }
}

TEST(IntegerGemm, ZeroPointsAtTheExtremes) {
  uint32_t seed = 500;
  for (Zp za : {Zp::kNone, Zp::kLow, Zp::kHigh}) {
    for (Zp zb : {Zp::kNone, Zp::kLow, Zp::kHigh, Zp::kAxis}) {
      for (int t = 0; t < 4; ++t) {
        check_case({7, 70, 1029, (t & 1) != 0, (t & 2) != 0, za, zb}, seed++);
      }
    }
  }
}

// Runs one node whose inputs listed in `constant` are session constants (the
// packed path); run_op's inputs are all run-time values (the reference path).
Result<std::vector<Tensor>> run_with_constants(const std::string& op, std::vector<const Tensor*> inputs,
                                               std::vector<bool> constant) {
  ir::Node node;
  node.name = "test_" + op;
  node.op_type = op;
  node.opset = 21;
  std::vector<DType> dtypes;
  std::vector<const Tensor*> constants;
  for (size_t i = 0; i < inputs.size(); ++i) {
    dtypes.push_back(inputs[i] ? inputs[i]->dtype() : DType::kUndefined);
    constants.push_back(constant[i] ? inputs[i] : nullptr);
  }
  node.num_explicit_inputs = inputs.size();
  kernels::KernelInit init{node, dtypes, constants, nullptr};
  EMBER_ASSIGN_OR_RETURN(auto kernel, kernels::create_kernel(init));
  return kernels::evaluate(*kernel, inputs, 1);
}

Tensor random_tensor(DType dtype, Shape shape, std::mt19937& rng) {
  Tensor t = Tensor::allocate(dtype, shape);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int64_t i = 0; i < t.numel(); ++i) static_cast<uint8_t*>(t.data())[i] = static_cast<uint8_t>(byte(rng));
  return t;
}

std::vector<uint8_t> bytes_of(const Tensor& t) {
  const auto* p = static_cast<const uint8_t*>(t.data());
  return std::vector<uint8_t>(p, p + t.numel() * static_cast<int64_t>(dtype_size(t.dtype())));
}

TEST(MatMulIntegerOp, PackedAndReferencePathsAgreeWithBroadcastBatches) {
  std::mt19937 rng(7);
  for (DType at : {DType::kU8, DType::kI8}) {
    for (DType bt : {DType::kU8, DType::kI8}) {
      const Tensor a = random_tensor(at, {2, 3, 5, 37}, rng);
      const Tensor b = random_tensor(bt, {37, 19}, rng);
      const Tensor a_zp = random_tensor(at, {5}, rng);
      const Tensor b_zp = random_tensor(bt, {19}, rng);
      auto ref = test::run_op("MatMulInteger", {&a, &b, &a_zp, &b_zp});
      ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
      ASSERT_EQ((*ref)[0].shape(), (Shape{2, 3, 5, 19}));
      for (int threads : {1, 2}) {
        threading::ScopedThreadLimit limit(threads);
        auto packed = run_with_constants("MatMulInteger", {&a, &b, &a_zp, &b_zp}, {false, true, false, true});
        ASSERT_TRUE(packed.is_ok()) << packed.status().to_string();
        EXPECT_EQ(test::values_of<int32_t>((*packed)[0]), test::values_of<int32_t>((*ref)[0]));
      }
      // Spot check of one output against a direct sum.
      const auto av = [&](int64_t i) { return at == DType::kI8 ? a.data_as<int8_t>()[i] : a.data_as<uint8_t>()[i]; };
      const auto bv = [&](int64_t i) { return bt == DType::kI8 ? b.data_as<int8_t>()[i] : b.data_as<uint8_t>()[i]; };
      const int32_t za = at == DType::kI8 ? a_zp.data_as<int8_t>()[4] : a_zp.data_as<uint8_t>()[4];
      const int32_t zb = bt == DType::kI8 ? b_zp.data_as<int8_t>()[18] : b_zp.data_as<uint8_t>()[18];
      int32_t sum = 0;
      const int64_t row = (1 * 3 + 2) * 5 + 4;
      for (int64_t kk = 0; kk < 37; ++kk) sum += (av(row * 37 + kk) - za) * (bv(kk * 19 + 18) - zb);
      EXPECT_EQ((*ref)[0].data_as<int32_t>()[row * 19 + 18], sum);
    }
  }
}

TEST(MatMulIntegerOp, ZeroSizedOutputs) {
  std::mt19937 rng(8);
  const Tensor a = random_tensor(DType::kU8, {0, 16}, rng);
  const Tensor b = random_tensor(DType::kI8, {16, 5}, rng);
  auto packed = run_with_constants("MatMulInteger", {&a, &b}, {false, true});
  ASSERT_TRUE(packed.is_ok()) << packed.status().to_string();
  EXPECT_EQ((*packed)[0].shape(), (Shape{0, 5}));
}

TEST(QLinearMatMulOp, PackedAndReferencePathsAgree) {
  std::mt19937 rng(9);
  for (DType at : {DType::kU8, DType::kI8}) {
    for (DType bt : {DType::kU8, DType::kI8}) {
      for (bool per_column : {false, true}) {
        const int64_t n = 23;
        const Tensor a = random_tensor(at, {3, 6, 70}, rng);
        const Tensor b = random_tensor(bt, {70, n}, rng);
        const Tensor a_scale = test::make_tensor<float>({}, {0.03f});
        const Tensor a_zp = random_tensor(at, {}, rng);
        std::vector<float> bs(per_column ? n : 1);
        for (auto& s : bs) s = std::uniform_real_distribution<float>(0.005f, 0.02f)(rng);
        const Tensor b_scale = test::make_tensor<float>({static_cast<int64_t>(bs.size())}, bs);
        const Tensor b_zp = random_tensor(bt, {static_cast<int64_t>(bs.size())}, rng);
        const Tensor y_scale = test::make_tensor<float>({}, {0.05f});
        const Tensor y_zp = random_tensor(at, {}, rng);
        std::vector<const Tensor*> in = {&a, &a_scale, &a_zp, &b, &b_scale, &b_zp, &y_scale, &y_zp};
        auto ref = test::run_op("QLinearMatMul", in, {}, 1, 21);
        ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
        for (int threads : {1, 2}) {
          threading::ScopedThreadLimit limit(threads);
          auto packed =
              run_with_constants("QLinearMatMul", in, {false, false, false, true, true, true, false, false});
          ASSERT_TRUE(packed.is_ok()) << packed.status().to_string();
          EXPECT_EQ((*packed)[0].dtype(), (*ref)[0].dtype());
          EXPECT_EQ(bytes_of((*packed)[0]), bytes_of((*ref)[0]));
        }
      }
    }
  }
}

}  // namespace
}  // namespace ember
