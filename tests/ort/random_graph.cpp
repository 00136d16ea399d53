#include "random_graph.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <random>

#include "compare.h"
#include "model_builder.h"

namespace ember::ortref {
namespace {

constexpr int64_t kMaxNumel = 256;
constexpr int64_t kMaxRank = 5;

// A value of the chain with what the generator knows about its elements.
struct Val {
  std::string name;
  DType dtype = DType::kUndefined;
  Shape shape;
  // An upper bound on |element|: keeps integers from overflowing (undefined in
  // C++, so runtimes may legitimately differ) and floats finite.
  double bound = 0;
  // Computed only by correctly rounded operations, so bit-identical in any
  // conforming runtime. Discontinuous ops (Cast to integer/bool, Equal, Less) only
  // take exact floats: a one-ulp difference from exp or a reordered sum could
  // otherwise flip their result, which no tolerance can absorb.
  bool exact = true;
  // For inexact values: the coarsest float type rounding differences passed
  // through, whose tolerance the value needs (an f32 tanh cast to f64 still
  // carries f32 error).
  DType precision = DType::kUndefined;
  // For inexact values: the largest bound of any value on their inexact path.
  // Rounding errors scale with it, and cancellation (x - y, sums of mixed signs)
  // can leave a small result carrying the absolute error of large intermediates.
  double peak = 0;
};

enum class Fill { kData, kNonzero, kSmallInts };

bool is_float(DType t) { return t == DType::kF32 || t == DType::kF64 || t == DType::kF16; }

// Of two float types (kUndefined = none), the one with the looser tolerance.
DType coarser(DType a, DType b) {
  auto rtol = [](DType t) { return is_float(t) ? default_tolerance(t).rtol : 0.0; };
  return rtol(a) >= rtol(b) ? a : b;
}

// Bounds under which results stay finite and integers far from overflow.
double limit_of(DType t) {
  switch (t) {
    case DType::kF16: return 3e4;
    case DType::kF32: return 1e30;
    case DType::kF64: return 1e300;
    case DType::kI32: return 1 << 30;
    case DType::kI64: return 1e18;
    default: return 1;
  }
}

double fill_bound(DType t, Fill fill) {
  if (t == DType::kBool) return 1;
  if (fill == Fill::kSmallInts) return 2;
  return dtype_is_int(t) ? 5 : 4;
}

std::optional<Shape> broadcast(const Shape& a, const Shape& b) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// numpy.matmul's shape rule, 1-D operands included.
std::optional<Shape> matmul_shape(Shape a, Shape b) {
  bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a = Shape{1, a[0]};
  if (b_vec) b = Shape{b[0], 1};
  if (a[a.size() - 1] != b[b.size() - 2]) return std::nullopt;
  auto batch = broadcast(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
  if (!batch) return std::nullopt;
  Shape out = *batch;
  if (!a_vec) out.push_back(a[a.size() - 2]);
  if (!b_vec) out.push_back(b[b.size() - 1]);
  return out;
}

// Slice's output length along one axis (ONNX Slice-10+ clamping rules).
int64_t slice_length(int64_t d, int64_t start, int64_t end, int64_t step) {
  if (d == 0) return 0;
  if (start < 0) start += d;
  if (end < 0) end += d;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, d);
    end = std::clamp<int64_t>(end, 0, d);
    return std::max<int64_t>(0, (end - start + step - 1) / step);
  }
  start = std::clamp<int64_t>(start, 0, d - 1);
  end = std::clamp<int64_t>(end, -1, d - 1);
  return std::max<int64_t>(0, (start - end + (-step) - 1) / (-step));
}

std::string attr_string_of(const ir::Attribute& a) {
  switch (a.type) {
    case ir::AttrType::kInt: return fmt::format("{}={}", a.name, a.i);
    case ir::AttrType::kInts: return fmt::format("{}=[{}]", a.name, fmt::join(a.ints, ","));
    default: return a.name;
  }
}

// The default tolerance of the coarsest precision involved, with atol raised to
// a few units of roundoff of the largest intermediate magnitude: ONNX Runtime
// sums f16 MatMul/ReduceSum in f16 where Ember sums in f32, and either side may
// reorder sums, so results that cancel keep the absolute error of their terms.
Tolerance output_tolerance(const Val& o) {
  if (!is_float(o.dtype)) return {0, 0};
  if (o.exact) return default_tolerance(o.dtype);
  constexpr double kRoundoffUnits = 4;
  const DType p = coarser(o.precision, o.dtype);
  const double unit_roundoff = p == DType::kF16 ? 0x1p-11 : p == DType::kF32 ? 0x1p-24 : 0x1p-53;
  Tolerance t = default_tolerance(p);
  t.atol = std::max(t.atol, kRoundoffUnits * unit_roundoff * o.peak);
  return t;
}

class Generator {
 public:
  explicit Generator(uint64_t seed);

  RandomGraph build();

 private:
  int64_t uniform(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  template <typename C>
  std::remove_cvref_t<decltype(std::declval<const C&>()[0])> pick(const C& c) {
    return c[static_cast<size_t>(uniform(0, static_cast<int64_t>(std::size(c)) - 1))];
  }

  int64_t random_dim(int64_t lo = 1) {
    static constexpr int64_t kDims[] = {1, 1, 2, 2, 3, 3, 4, 5};
    if (allow_zero_ && chance(0.08)) return 0;
    return std::max(lo, pick(kDims));
  }
  Shape random_shape(int64_t rank) {
    Shape s(static_cast<size_t>(rank));
    do {
      for (auto& d : s) d = random_dim();
    } while (shape_numel(s) > 64);
    return s;
  }
  // A shape that broadcasts with `s`: equal, a suffix with some dims set to 1,
  // or larger (extra leading dims, or > 1 where `s` has 1).
  Shape partner_shape(const Shape& s);

  Tensor random_tensor(DType t, const Shape& shape, Fill fill);
  Val fresh(DType t, Shape shape, Fill fill = Fill::kData);
  std::string aux(const Tensor& t);
  Tensor int_tensor(const std::vector<int64_t>& v, DType t = DType::kI64);
  Val emit(const std::string& op, const std::vector<std::string>& inputs, Val out,
           std::vector<ir::Attribute> attrs = {});

  std::optional<Val> try_op(const std::string& op, const Val& v);
  std::optional<Val> dispatch(const std::string& op, const Val& v);
  std::optional<Val> binary(const std::string& op, const Val& v);
  std::optional<Val> unary(const std::string& op, const Val& v);
  std::optional<Val> where(const Val& v);
  std::optional<Val> comparison(const std::string& op, const Val& v);
  std::optional<Val> cast(const Val& v);
  std::optional<Val> transpose(const Val& v);
  std::optional<Val> reshape(const Val& v);
  std::optional<Val> concat(const Val& v);
  std::optional<Val> reduce(const std::string& op, const Val& v);
  std::optional<Val> softmax(const Val& v);
  std::optional<Val> matmul(const Val& v);
  std::optional<Val> gather(const Val& v);
  std::optional<Val> slice(const Val& v);
  std::optional<Val> unsqueeze(const Val& v);
  std::optional<Val> expand(const Val& v);

  std::mt19937_64 rng_;
  ModelBuilder builder_;
  RandomGraph graph_;
  bool allow_zero_ = false;
  int next_id_ = 0;
  std::map<std::string, std::string> about_;  // value name -> "name:dtype[shape] (how)"
};

Generator::Generator(uint64_t seed) : rng_(seed) {
  static constexpr int kOpsets[] = {13, 17, 18, 21};
  graph_.seed = seed;
  graph_.opset = pick(kOpsets);
  builder_.set_opset("", graph_.opset);
  allow_zero_ = chance(0.15);
}

Shape Generator::partner_shape(const Shape& s) {
  const size_t r = s.size();
  int mode = static_cast<int>(uniform(0, 2));
  if (mode == 0) return s;
  if (mode == 1) {
    size_t keep = static_cast<size_t>(uniform(0, static_cast<int64_t>(r)));
    Shape out(s.end() - keep, s.end());
    for (auto& d : out)
      if (chance(0.3)) d = 1;
    return out;
  }
  Shape out;
  if (r < kMaxRank - 1 && chance(0.5)) out.push_back(random_dim());
  for (int64_t d : s) out.push_back(d == 1 && chance(0.5) ? random_dim() : (chance(0.2) ? 1 : d));
  return out;
}

Tensor Generator::random_tensor(DType t, const Shape& shape, Fill fill) {
  Tensor out = Tensor::allocate(t, shape);
  std::uniform_real_distribution<double> real(-4, 4);
  for (int64_t i = 0; i < out.numel(); ++i) {
    double x;
    if (fill == Fill::kSmallInts) {
      x = static_cast<double>(uniform(-2, 2));
    } else if (fill == Fill::kNonzero) {
      double mag = dtype_is_int(t) ? static_cast<double>(uniform(1, 5)) : 0.5 + std::fabs(real(rng_)) * 0.875;
      x = chance(0.5) ? mag : -mag;
    } else {
      x = dtype_is_int(t) ? static_cast<double>(uniform(-5, 5)) : real(rng_);
    }
    EMBER_SWITCH_ALL(t, T, {
      if constexpr (std::is_same_v<T, bool>) {
        out.data_as<bool>()[i] = chance(0.5);
      } else {
        out.data_as<T>()[i] = static_cast<T>(static_cast<compute_t<T>>(x));
      }
    }, break);
  }
  return out;
}

Val Generator::fresh(DType t, Shape shape, Fill fill) {
  Val v{fmt::format("t{}", next_id_++), t, shape, fill_bound(t, fill), true};
  Tensor value = random_tensor(t, shape, fill);
  bool initializer = chance(0.4);
  if (initializer) {
    builder_.add_initializer(v.name, value);
  } else {
    builder_.add_input(v.name, t, std::vector<int64_t>(shape.begin(), shape.end()));
    graph_.inputs.emplace_back(v.name, std::move(value));
  }
  about_[v.name] = fmt::format("{}:{}{} ({})", v.name, dtype_name(t), shape_to_string(shape),
                               initializer ? "initializer" : "input");
  return v;
}

// Shape, axes and index operands: usually initializers, sometimes graph inputs
// so the runtime has to handle values it only learns at run time.
std::string Generator::aux(const Tensor& t) {
  std::string name = fmt::format("t{}", next_id_++);
  std::string values;
  for (int64_t i = 0; i < t.numel(); ++i) values += (i ? "," : "") + std::to_string(read_int(t, i));
  bool initializer = chance(0.85);
  if (initializer) {
    builder_.add_initializer(name, t);
  } else {
    builder_.add_input(name, t.dtype(), std::vector<int64_t>(t.shape().begin(), t.shape().end()));
    graph_.inputs.emplace_back(name, t.clone());
  }
  about_[name] = fmt::format("{}:{}{}={{{}}} ({})", name, dtype_name(t.dtype()), shape_to_string(t.shape()), values,
                             initializer ? "initializer" : "input");
  return name;
}

Tensor Generator::int_tensor(const std::vector<int64_t>& v, DType t) {
  Tensor out = Tensor::allocate(t, Shape{static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == DType::kI32) {
      out.data_as<int32_t>()[i] = static_cast<int32_t>(v[i]);
    } else {
      out.data_as<int64_t>()[i] = v[i];
    }
  }
  return out;
}

Val Generator::emit(const std::string& op, const std::vector<std::string>& inputs, Val out,
                    std::vector<ir::Attribute> attrs) {
  out.name = fmt::format("v{}", next_id_++);
  std::vector<std::string> in_text, attr_text;
  for (const std::string& i : inputs) in_text.push_back(about_.count(i) ? about_[i] : i);
  for (const ir::Attribute& a : attrs) attr_text.push_back(attr_string_of(a));
  graph_.description += fmt::format("  {} = {}({}) -> {}{}{}{}\n", out.name, op, fmt::join(in_text, ", "),
                                    dtype_name(out.dtype), shape_to_string(out.shape),
                                    attr_text.empty() ? "" : " ", fmt::join(attr_text, " "));
  about_[out.name] = fmt::format("{}:{}{}", out.name, dtype_name(out.dtype), shape_to_string(out.shape));
  builder_.add_node(op, inputs, {out.name}, std::move(attrs));
  graph_.op_types.push_back(op);
  return out;
}

std::optional<Val> Generator::binary(const std::string& op, const Val& v) {
  if (v.dtype == DType::kBool) return std::nullopt;
  const bool div = op == "Div";
  Shape ps = partner_shape(v.shape);
  auto out_shape = broadcast(v.shape, ps);
  if (!out_shape || shape_numel(*out_shape) > kMaxNumel) return std::nullopt;
  double pb = fill_bound(v.dtype, Fill::kData);
  double bound = op == "Add" || op == "Sub" ? v.bound + pb
                 : op == "Mul"              ? v.bound * pb
                 : div                      ? (dtype_is_int(v.dtype) ? v.bound : v.bound * 2)
                                            : std::max(v.bound, pb);
  if (bound > limit_of(v.dtype)) return std::nullopt;
  // The divisor is always a fresh nonzero operand: integer division by zero is
  // undefined, and float division by zero only tests inf arithmetic.
  Val p = fresh(v.dtype, ps, div ? Fill::kNonzero : Fill::kData);
  bool swap = !div && chance(0.5);
  Val out{"", v.dtype, *out_shape, bound, v.exact && v.dtype != DType::kF16};
  return emit(op, swap ? std::vector{p.name, v.name} : std::vector{v.name, p.name}, out);
}

std::optional<Val> Generator::unary(const std::string& op, const Val& v) {
  const bool float_only = op != "Abs" && op != "Neg";
  if (v.dtype == DType::kBool || (float_only && !is_float(v.dtype))) return std::nullopt;
  Val out = v;
  if (op == "Sigmoid" || op == "Tanh") out.bound = 1;
  if (op == "Exp") out.bound = v.bound > 700 ? INFINITY : std::exp(v.bound);
  if (out.bound > limit_of(v.dtype)) return std::nullopt;
  out.exact = v.exact && (op == "Relu" || op == "Abs" || op == "Neg");
  return emit(op, {v.name}, out);
}

std::optional<Val> Generator::where(const Val& v) {
  static constexpr DType kTypes[] = {DType::kF32, DType::kF64, DType::kF16, DType::kI32, DType::kI64};
  Shape s1 = partner_shape(v.shape), s2 = partner_shape(v.shape);
  auto o1 = broadcast(v.shape, s1);
  auto out_shape = o1 ? broadcast(*o1, s2) : std::nullopt;
  if (!out_shape || shape_numel(*out_shape) > kMaxNumel) return std::nullopt;
  if (v.dtype == DType::kBool) {
    DType t = pick(kTypes);
    Val a = fresh(t, s1), b = fresh(t, s2);
    return emit("Where", {v.name, a.name, b.name}, Val{"", t, *out_shape, a.bound, true});
  }
  Val cond = fresh(DType::kBool, s1), other = fresh(v.dtype, s2);
  Val out{"", v.dtype, *out_shape, std::max(v.bound, other.bound), v.exact};
  return emit("Where", chance(0.5) ? std::vector{cond.name, v.name, other.name}
                                   : std::vector{cond.name, other.name, v.name}, out);
}

std::optional<Val> Generator::comparison(const std::string& op, const Val& v) {
  if (!v.exact || (op == "Less" && v.dtype == DType::kBool)) return std::nullopt;
  Shape ps = partner_shape(v.shape);
  auto out_shape = broadcast(v.shape, ps);
  if (!out_shape || shape_numel(*out_shape) > kMaxNumel) return std::nullopt;
  // Small integers, so that Equal sees some equal pairs.
  Val p = fresh(v.dtype, ps, Fill::kSmallInts);
  Val out{"", DType::kBool, *out_shape, 1, true};
  return emit(op, chance(0.5) ? std::vector{p.name, v.name} : std::vector{v.name, p.name}, out);
}

std::optional<Val> Generator::cast(const Val& v) {
  static constexpr DType kTypes[] = {DType::kF32, DType::kF64, DType::kF16, DType::kI32, DType::kI64, DType::kBool};
  DType to = pick(kTypes);
  if (to == v.dtype) return std::nullopt;
  if (is_float(v.dtype) && !is_float(to) && !v.exact) return std::nullopt;
  if (v.bound > limit_of(to) && to != DType::kBool) return std::nullopt;
  Val out{"", to, v.shape, to == DType::kBool ? 1 : v.bound, v.exact};
  return emit("Cast", {v.name}, out, {attr_int("to", static_cast<int64_t>(to))});
}

std::optional<Val> Generator::transpose(const Val& v) {
  if (v.shape.empty()) return std::nullopt;
  std::vector<int64_t> perm(v.shape.size());
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
  const bool default_perm = chance(0.2);  // no attribute: reverse the dims
  if (default_perm) {
    std::reverse(perm.begin(), perm.end());
  } else {
    std::shuffle(perm.begin(), perm.end(), rng_);
  }
  Val out = v;
  for (size_t i = 0; i < perm.size(); ++i) out.shape[i] = v.shape[static_cast<size_t>(perm[i])];
  std::vector<ir::Attribute> attrs;
  if (!default_perm) attrs.push_back(attr_ints("perm", perm));
  return emit("Transpose", {v.name}, out, std::move(attrs));
}

std::optional<Val> Generator::reshape(const Val& v) {
  const bool empty = shape_numel(v.shape) == 0;
  // allowzero (opset 14) is the only way to ask for a literal 0 dim.
  if (empty && graph_.opset < 14) return std::nullopt;
  std::vector<int64_t> target;
  for (int64_t d : v.shape) {
    int64_t r = uniform(0, 9);
    if (r < 3 && !target.empty()) {
      target.back() *= d;
    } else if (r < 5 && d % 2 == 0 && d > 2) {
      target.push_back(2);
      target.push_back(d / 2);
    } else if (!(d == 1 && r == 9)) {
      target.push_back(d);
    }
    if (chance(0.1)) target.push_back(1);
  }
  while (static_cast<int64_t>(target.size()) > kMaxRank) {
    target[target.size() - 2] *= target.back();
    target.pop_back();
  }
  Val out = v;
  out.shape = Shape(target.begin(), target.end());
  std::vector<int64_t> spec = target;
  std::vector<ir::Attribute> attrs;
  if (empty) {
    attrs.push_back(attr_int("allowzero", 1));
  } else {
    for (size_t i = 0; i < spec.size(); ++i)
      if (i < v.shape.size() && spec[i] == v.shape[i] && chance(0.3)) spec[i] = 0;  // 0 copies the input dim
    if (!spec.empty() && chance(0.3)) spec[static_cast<size_t>(uniform(0, static_cast<int64_t>(spec.size()) - 1))] = -1;
  }
  return emit("Reshape", {v.name, aux(int_tensor(spec))}, out, std::move(attrs));
}

std::optional<Val> Generator::concat(const Val& v) {
  if (v.shape.empty()) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(v.shape.size());
  const int64_t axis = uniform(0, rank - 1);
  std::vector<Shape> parts(static_cast<size_t>(uniform(1, 2)), v.shape);
  Val out = v;
  for (Shape& p : parts) {
    p[static_cast<size_t>(axis)] = allow_zero_ && chance(0.2) ? 0 : uniform(1, 3);
    out.shape[static_cast<size_t>(axis)] += p[static_cast<size_t>(axis)];
  }
  if (shape_numel(out.shape) > kMaxNumel) return std::nullopt;
  std::vector<std::string> names;
  for (const Shape& p : parts) names.push_back(fresh(v.dtype, p).name);
  names.insert(names.begin() + uniform(0, static_cast<int64_t>(names.size())), v.name);
  out.bound = std::max(v.bound, fill_bound(v.dtype, Fill::kData));
  return emit("Concat", names, out, {attr_int("axis", chance(0.3) ? axis - rank : axis)});
}

std::optional<Val> Generator::reduce(const std::string& op, const Val& v) {
  const bool mean = op == "ReduceMean";
  // ReduceMean is left to floats: an integer mean's rounding is unspecified.
  if (v.dtype == DType::kBool || (mean && !is_float(v.dtype))) return std::nullopt;
  // ONNX Runtime 1.30 gets output shapes wrong when reducing an empty tensor
  // (e.g. [2,0,1] over axes {0,2} without keepdims gives [2,0], not [0]).
  if (shape_numel(v.shape) == 0) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(v.shape.size());
  const bool all_axes = rank == 0 || chance(0.2);
  std::vector<int64_t> axes;
  if (!all_axes) {
    for (int64_t a = 0; a < rank; ++a)
      if (chance(0.5)) axes.push_back(chance(0.3) ? a - rank : a);
    if (axes.empty()) axes.push_back(uniform(0, rank - 1));
    std::shuffle(axes.begin(), axes.end(), rng_);
  }
  const bool keepdims = chance(0.5);
  Val out = v;
  out.shape.clear();
  int64_t count = 1;
  for (int64_t a = 0; a < rank; ++a) {
    const bool reduced =
        all_axes || std::count(axes.begin(), axes.end(), a) || std::count(axes.begin(), axes.end(), a - rank);
    if (reduced) count *= v.shape[static_cast<size_t>(a)];
    if (!reduced) out.shape.push_back(v.shape[static_cast<size_t>(a)]);
    if (reduced && keepdims) out.shape.push_back(1);
  }
  out.bound = mean ? v.bound : v.bound * static_cast<double>(std::max<int64_t>(count, 1));
  if (out.bound > limit_of(v.dtype)) return std::nullopt;
  out.exact = v.exact && (dtype_is_int(v.dtype) || (v.dtype != DType::kF16 && count <= (mean ? 1 : 2)));
  std::vector<ir::Attribute> attrs;
  if (!keepdims) attrs.push_back(attr_int("keepdims", 0));
  std::vector<std::string> inputs{v.name};
  const bool axes_as_input = !mean || graph_.opset >= 18;
  if (!all_axes && axes_as_input) inputs.push_back(aux(int_tensor(axes)));
  if (!all_axes && !axes_as_input) attrs.push_back(attr_ints("axes", axes));
  return emit(op, inputs, out, std::move(attrs));
}

std::optional<Val> Generator::softmax(const Val& v) {
  if (!is_float(v.dtype) || v.shape.empty()) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(v.shape.size());
  Val out = v;
  out.bound = 1;
  out.exact = false;
  if (chance(0.3)) return emit("Softmax", {v.name}, out);
  return emit("Softmax", {v.name}, out, {attr_int("axis", uniform(-rank, rank - 1))});
}

std::optional<Val> Generator::matmul(const Val& v) {
  if (v.dtype == DType::kBool || v.shape.empty()) return std::nullopt;
  const size_t r = v.shape.size();
  const bool left = r == 1 || chance(0.6);  // v @ w, else w @ v
  const int64_t k = left ? v.shape[r - 1] : v.shape[r - 2];
  // ONNX Runtime 1.30 mishandles empty MatMuls: it fails to broadcast a zero
  // batch dim or a 1-D operand against an empty one ("cannot broadcast on dim
  // 0"), and leaves the output uninitialized when K is 0 instead of zero-filling.
  const bool empty = shape_numel(v.shape) == 0;
  if (k == 0 || (r > 2 && std::count(v.shape.begin(), v.shape.end() - 2, 0))) return std::nullopt;
  Shape w;
  if (left) {
    if (r >= 3 && chance(0.3)) w.push_back(chance(0.5) ? 1 : v.shape[r - 3]);
    w.push_back(k);
    if (empty || chance(0.8)) w.push_back(uniform(1, 4));
  } else {
    if (empty || chance(0.8)) w.push_back(uniform(1, 4));
    w.push_back(k);
  }
  auto out_shape = left ? matmul_shape(v.shape, w) : matmul_shape(w, v.shape);
  if (!out_shape || shape_numel(*out_shape) > kMaxNumel) return std::nullopt;
  const double bound = v.bound * fill_bound(v.dtype, Fill::kData) * static_cast<double>(std::max<int64_t>(k, 1));
  Val out{"", v.dtype, *out_shape, bound,
          v.exact && (dtype_is_int(v.dtype) || (v.dtype != DType::kF16 && k <= 1))};
  if (out.bound > limit_of(v.dtype)) return std::nullopt;
  Val p = fresh(v.dtype, w);
  return emit("MatMul", left ? std::vector{v.name, p.name} : std::vector{p.name, v.name}, out);
}

std::optional<Val> Generator::gather(const Val& v) {
  if (v.shape.empty()) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(v.shape.size());
  const int64_t axis = uniform(0, rank - 1);
  const int64_t d = v.shape[static_cast<size_t>(axis)];
  Shape ishape(static_cast<size_t>(uniform(0, 2)));
  for (auto& x : ishape) x = uniform(1, 3);
  if (d == 0) ishape = Shape{0};
  Val out = v;
  out.shape = Shape(v.shape.begin(), v.shape.begin() + axis);
  for (int64_t x : ishape) out.shape.push_back(x);
  for (int64_t a = axis + 1; a < rank; ++a) out.shape.push_back(v.shape[static_cast<size_t>(a)]);
  if (shape_numel(out.shape) > kMaxNumel) return std::nullopt;
  Tensor indices = Tensor::allocate(chance(0.3) ? DType::kI32 : DType::kI64, ishape);
  for (int64_t i = 0; i < indices.numel(); ++i) {
    int64_t idx = uniform(-d, d - 1);  // negative indices count from the end
    if (indices.dtype() == DType::kI32) {
      indices.data_as<int32_t>()[i] = static_cast<int32_t>(idx);
    } else {
      indices.data_as<int64_t>()[i] = idx;
    }
  }
  return emit("Gather", {v.name, aux(indices)}, out, {attr_int("axis", chance(0.3) ? axis - rank : axis)});
}

std::optional<Val> Generator::slice(const Val& v) {
  if (v.shape.empty()) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(v.shape.size());
  std::vector<int64_t> order(static_cast<size_t>(rank));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng_);
  order.resize(static_cast<size_t>(uniform(1, rank)));
  const bool positional = chance(0.25);  // axes omitted: starts/ends apply to axes 0..n-1
  if (positional) std::iota(order.begin(), order.end(), 0);
  std::vector<int64_t> starts, ends, axes, steps;
  Val out = v;
  for (int64_t a : order) {
    const int64_t d = v.shape[static_cast<size_t>(a)];
    static constexpr int64_t kSteps[] = {1, 1, 1, 2, -1, -2};
    int64_t step = positional ? 1 : pick(kSteps);
    int64_t start = uniform(-d - 2, d + 2), end = uniform(-d - 2, d + 2);
    if (chance(0.15)) end = step > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
    starts.push_back(start);
    ends.push_back(end);
    axes.push_back(chance(0.3) ? a - rank : a);
    steps.push_back(step);
    out.shape[static_cast<size_t>(a)] = slice_length(d, start, end, step);
  }
  const DType index_type = chance(0.3) ? DType::kI32 : DType::kI64;
  for (auto* list : {&starts, &ends})
    for (int64_t& x : *list) x = std::clamp<int64_t>(x, index_type == DType::kI32 ? INT32_MIN : INT64_MIN,
                                                      index_type == DType::kI32 ? INT32_MAX : INT64_MAX);
  std::vector<std::string> inputs{v.name, aux(int_tensor(starts, index_type)), aux(int_tensor(ends, index_type))};
  const bool unit_steps = std::all_of(steps.begin(), steps.end(), [](int64_t s) { return s == 1; });
  if (!positional || !unit_steps || chance(0.5)) {
    inputs.push_back(aux(int_tensor(axes, index_type)));
    if (!unit_steps || chance(0.5)) inputs.push_back(aux(int_tensor(steps, index_type)));
  }
  return emit("Slice", inputs, out);
}

std::optional<Val> Generator::unsqueeze(const Val& v) {
  const int64_t n = uniform(1, 2);
  const int64_t out_rank = static_cast<int64_t>(v.shape.size()) + n;
  if (out_rank > kMaxRank) return std::nullopt;
  std::vector<int64_t> positions(static_cast<size_t>(out_rank));
  std::iota(positions.begin(), positions.end(), 0);
  std::shuffle(positions.begin(), positions.end(), rng_);
  positions.resize(static_cast<size_t>(n));
  Val out = v;
  out.shape.clear();
  for (int64_t i = 0, src = 0; i < out_rank; ++i) {
    bool inserted = std::count(positions.begin(), positions.end(), i) > 0;
    out.shape.push_back(inserted ? 1 : v.shape[static_cast<size_t>(src++)]);
  }
  for (int64_t& p : positions)
    if (chance(0.3)) p -= out_rank;
  return emit("Unsqueeze", {v.name, aux(int_tensor(positions))}, out);
}

std::optional<Val> Generator::expand(const Val& v) {
  std::vector<int64_t> target;
  if (static_cast<int64_t>(v.shape.size()) < kMaxRank && chance(0.4)) target.push_back(uniform(1, 3));
  // Expand broadcasts both ways: a target dim of 1 keeps the input's dim.
  for (int64_t d : v.shape) target.push_back(d == 1 ? uniform(1, 3) : (chance(0.3) ? 1 : d));
  auto out_shape = broadcast(v.shape, Shape(target.begin(), target.end()));
  if (!out_shape || shape_numel(*out_shape) > kMaxNumel) return std::nullopt;
  Val out = v;
  out.shape = *out_shape;
  return emit("Expand", {v.name, aux(int_tensor(target))}, out);
}

std::optional<Val> Generator::try_op(const std::string& op, const Val& v) {
  std::optional<Val> out = dispatch(op, v);
  if (out && !out->exact) {
    out->precision = coarser(v.precision, is_float(out->dtype) ? out->dtype : DType::kUndefined);
    out->peak = std::max({v.peak, v.bound, out->bound});
  }
  return out;
}

std::optional<Val> Generator::dispatch(const std::string& op, const Val& v) {
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Max" || op == "Min") return binary(op, v);
  if (op == "Relu" || op == "Sigmoid" || op == "Tanh" || op == "Exp" || op == "Abs" || op == "Neg")
    return unary(op, v);
  if (op == "Where") return where(v);
  if (op == "Equal" || op == "Less") return comparison(op, v);
  if (op == "Cast") return cast(v);
  if (op == "Transpose") return transpose(v);
  if (op == "Reshape") return reshape(v);
  if (op == "Concat") return concat(v);
  if (op == "ReduceSum" || op == "ReduceMean") return reduce(op, v);
  if (op == "Softmax") return softmax(v);
  if (op == "MatMul") return matmul(v);
  if (op == "Gather") return gather(v);
  if (op == "Slice") return slice(v);
  if (op == "Unsqueeze") return unsqueeze(v);
  return expand(v);
}

RandomGraph Generator::build() {
  static constexpr DType kStartTypes[] = {DType::kF32, DType::kF32, DType::kF32, DType::kF64,
                                          DType::kF16, DType::kI32, DType::kI64};
  const DType start_type = pick(kStartTypes);
  Val v{"x", start_type, random_shape(uniform(0, 4)), fill_bound(start_type, Fill::kData), true};
  builder_.add_input(v.name, v.dtype, std::vector<int64_t>(v.shape.begin(), v.shape.end()));
  graph_.inputs.emplace_back(v.name, random_tensor(v.dtype, v.shape, Fill::kData));
  about_[v.name] = fmt::format("x:{}{} (input)", dtype_name(v.dtype), shape_to_string(v.shape));
  std::vector<Val> produced;
  const int64_t length = uniform(1, 6);
  for (int64_t step = 0; step < length; ++step) {
    std::optional<Val> next;
    for (int attempt = 0; attempt < 50 && !next; ++attempt) next = try_op(pick(kRandomGraphOps), v);
    if (!next) break;
    v = *next;
    produced.push_back(v);
  }
  if (produced.empty()) produced.push_back(v = *unary("Neg", v));  // the start type is never bool
  std::vector<Val> outputs{v};
  if (produced.size() > 1 && chance(0.25))
    outputs.push_back(produced[static_cast<size_t>(uniform(0, static_cast<int64_t>(produced.size()) - 2))]);
  for (const Val& o : outputs) {
    builder_.add_output(o.name, o.dtype, std::vector<int64_t>(o.shape.begin(), o.shape.end()));
    graph_.outputs.push_back(o.name);
    graph_.tolerances.push_back(output_tolerance(o));
  }
  graph_.description = fmt::format("seed {} opset {} outputs [{}]\n{}", graph_.seed, graph_.opset,
                                   fmt::join(graph_.outputs, ", "), graph_.description);
  graph_.model = builder_.serialize();
  return std::move(graph_);
}

}  // namespace

RandomGraph make_random_graph(uint64_t seed) { return Generator(seed).build(); }

}  // namespace ember::ortref
