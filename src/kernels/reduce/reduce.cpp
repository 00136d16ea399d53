// ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
// ReduceLogSum, ReduceLogSumExp, ReduceSumSquare.
//
// f32 Sum/Mean/SumSquare/L1/L2/LogSum/Max/Min over one block of axes run on the
// row microkernels (kernels/norm/row_ukernels.h): a reduced last axis is a row
// sum, a reduced leading or middle axis accumulates input rows into a vector of
// outputs. Sums widen to double as the reference does, and every output sums its
// inputs in an order fixed by the shape alone, so results do not depend on the
// thread count. Everything else runs the reference loops below.
//
// Floating inputs accumulate in double (ONNX's tests allow rtol 1e-3, and long
// f32 sums drift past that in f32). Integer inputs accumulate in 64 bits with
// wrap-around, then convert to the output type as numpy's astype would.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/norm/row_io.h"
#include "kernels/norm/row_ukernels.h"
#include "kernels/reduce/reduce_ops.h"
#include "kernels/reduce/reduce_plan.h"
#include "threading/thread_pool.h"

namespace ember::kernels {
namespace {

enum class ReduceKind { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

struct ReduceOpInfo {
  std::string_view op_type;
  ReduceKind kind;
  int axes_input_since;  // opset from which `axes` is an input instead of an attribute
};

constexpr std::array<ReduceOpInfo, 10> kReduceOps = {{
    {"ReduceSum", ReduceKind::kSum, 13},
    {"ReduceMean", ReduceKind::kMean, 18},
    {"ReduceMax", ReduceKind::kMax, 18},
    {"ReduceMin", ReduceKind::kMin, 18},
    {"ReduceProd", ReduceKind::kProd, 18},
    {"ReduceL1", ReduceKind::kL1, 18},
    {"ReduceL2", ReduceKind::kL2, 18},
    {"ReduceLogSum", ReduceKind::kLogSum, 18},
    {"ReduceLogSumExp", ReduceKind::kLogSumExp, 18},
    {"ReduceSumSquare", ReduceKind::kSumSquare, 18},
}};

template <typename T>
inline constexpr bool kIsFloat = std::is_floating_point_v<compute_t<T>>;

// Accumulator: double for floating types; uint64 for integers, so sums and
// products wrap without undefined behaviour (two's complement gives the same bits).
template <typename T>
using acc_t = std::conditional_t<kIsFloat<T>, double, uint64_t>;
// How an integer accumulator's bits are read back.
template <typename T>
using wide_t = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;

template <typename T>
double to_double(T v) {
  return static_cast<double>(static_cast<compute_t<T>>(v));
}

// double -> T; for integers NaN gives 0 and out-of-range values saturate.
template <typename T>
T from_double(double d) {
  if constexpr (kIsFloat<T>) {
    return static_cast<T>(static_cast<compute_t<T>>(d));
  } else {
    if (std::isnan(d)) return T{0};
    if (d <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (d >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(d);
  }
}

template <typename C>
bool is_nan(C x) {
  if constexpr (std::is_floating_point_v<C>) {
    return std::isnan(x);
  } else {
    return false;
  }
}

template <typename T>
acc_t<T> abs_acc(T v) {
  if constexpr (kIsFloat<T>) {
    return std::abs(to_double(v));
  } else if constexpr (std::is_signed_v<T>) {
    const uint64_t bits = static_cast<uint64_t>(v);
    return v < 0 ? uint64_t{0} - bits : bits;
  } else {
    return static_cast<uint64_t>(v);
  }
}

// Max and Min compare in the compute type and propagate NaN, like numpy.
template <ReduceKind kKind, typename T, typename Visit>
T reduce_extreme(Visit&& visit) {
  using C = compute_t<T>;
  using Limits = std::numeric_limits<C>;
  constexpr bool kMax = kKind == ReduceKind::kMax;
  C acc;
  if constexpr (Limits::has_infinity) {
    acc = kMax ? -Limits::infinity() : Limits::infinity();
  } else {
    acc = kMax ? Limits::lowest() : Limits::max();
  }
  visit([&](T v) {
    const C x = static_cast<C>(v);
    if ((kMax ? x > acc : x < acc) || is_nan(x)) acc = x;
  });
  return static_cast<T>(acc);
}

// log(sum(exp(x))) shifted by the maximum so large inputs do not overflow.
template <typename T, typename Visit>
T reduce_log_sum_exp(Visit&& visit) {
  double max = -std::numeric_limits<double>::infinity();
  visit([&](T v) {
    const double x = to_double(v);
    if (x > max || std::isnan(x)) max = x;
  });
  if (!std::isfinite(max)) return from_double<T>(max);
  double sum = 0;
  visit([&](T v) { sum += std::exp(to_double(v) - max); });
  return from_double<T>(max + std::log(sum));
}

template <ReduceKind kKind, typename T>
void accumulate(acc_t<T>& acc, T v) {
  acc_t<T> x;
  if constexpr (kIsFloat<T>) {
    x = to_double(v);
  } else {
    x = static_cast<uint64_t>(v);  // sign-extends signed values
  }
  if constexpr (kKind == ReduceKind::kProd) {
    acc *= x;
  } else if constexpr (kKind == ReduceKind::kSumSquare || kKind == ReduceKind::kL2) {
    acc += x * x;
  } else if constexpr (kKind == ReduceKind::kL1) {
    acc += abs_acc(v);
  } else {
    acc += x;
  }
}

template <ReduceKind kKind, typename T>
T finish(acc_t<T> acc, int64_t n) {
  if constexpr (kIsFloat<T>) {
    double r = acc;
    if constexpr (kKind == ReduceKind::kMean) r = acc / static_cast<double>(n);
    if constexpr (kKind == ReduceKind::kL2) r = std::sqrt(acc);
    if constexpr (kKind == ReduceKind::kLogSum) r = std::log(acc);
    return from_double<T>(r);
  } else {
    using W = wide_t<T>;
    const W w = static_cast<W>(acc);
    if constexpr (kKind == ReduceKind::kMean) {
      return n == 0 ? T{0} : static_cast<T>(w / static_cast<W>(n));
    } else if constexpr (kKind == ReduceKind::kL2) {
      return from_double<T>(std::sqrt(static_cast<double>(w)));
    } else if constexpr (kKind == ReduceKind::kLogSum) {
      return from_double<T>(std::log(static_cast<double>(w)));
    } else {
      return static_cast<T>(w);
    }
  }
}

// One output from the `n` values `visit` yields (visit(fn) calls fn(value) for
// each; LogSumExp visits twice).
template <ReduceKind kKind, typename T, typename Visit>
T reduce_one(Visit&& visit, int64_t n) {
  if constexpr (kKind == ReduceKind::kMax || kKind == ReduceKind::kMin) {
    return reduce_extreme<kKind, T>(visit);
  } else if constexpr (kKind == ReduceKind::kLogSumExp) {
    return reduce_log_sum_exp<T>(visit);
  } else {
    acc_t<T> acc = kKind == ReduceKind::kProd ? 1 : 0;
    visit([&](T v) { accumulate<kKind>(acc, v); });
    return finish<kKind, T>(acc, n);
  }
}

template <ReduceKind kKind, typename T>
void reduce_tensor(const T* in, T* out, const ReducePlan& plan) {
  const int64_t n = plan.reduced_count;
  if (plan.blocked) {
    const int64_t inner = plan.inner;
    for (int64_t o = 0; o < plan.outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const T* base = in + o * n * inner + i;
        auto visit = [&](auto&& fn) {
          for (int64_t r = 0; r < n; ++r) fn(base[r * inner]);
        };
        out[o * inner + i] = reduce_one<kKind, T>(visit, n);
      }
    }
    return;
  }
  for_each_output_base(plan, [&](int64_t o, int64_t base) {
    auto visit = [&](auto&& fn) { for_each_reduced_offset(base, plan, [&](int64_t offset) { fn(in[offset]); }); };
    out[o] = reduce_one<kKind, T>(visit, n);
  });
}

template <ReduceKind kKind>
Status reduce_dispatch(const Tensor& x, Tensor& y, const ReducePlan& plan) {
  if constexpr (kKind == ReduceKind::kMax || kKind == ReduceKind::kMin) {
    if (x.dtype() == DType::kBool) {
      reduce_tensor<kKind, bool>(x.data_as<bool>(), y.data_as<bool>(), plan);
      return Status::ok();
    }
  }
  EMBER_SWITCH_NUMERIC(x.dtype(), T, (reduce_tensor<kKind, T>(x.data_as<T>(), y.data_as<T>(), plan));
                       return Status::ok(), break);
  return internal_error("reduce: unexpected dtype {}", dtype_name(x.dtype()));
}

// Input elements per parallel_for task. ReduceSum over rows of 1024 f32, 1 vs 2
// threads: 16 Ki elements 1.55 -> 1.21 us, 8 Ki 0.87 -> 0.82 us (method in
// docs/benchmarks/2026-11-30-thread-grains.md).
constexpr int64_t kReduceElementsPerTask = 8192;

bool has_fast_path(ReduceKind kind) {
  return kind == ReduceKind::kSum || kind == ReduceKind::kMean || kind == ReduceKind::kSumSquare ||
         kind == ReduceKind::kL1 || kind == ReduceKind::kL2 || kind == ReduceKind::kLogSum ||
         kind == ReduceKind::kMax || kind == ReduceKind::kMin;
}

int accumulate_kind(ReduceKind kind) {
  if (kind == ReduceKind::kSumSquare || kind == ReduceKind::kL2) return kAccumulateSquare;
  if (kind == ReduceKind::kL1) return kAccumulateAbs;
  return kAccumulateSum;
}

float finish_f32(ReduceKind kind, double acc, int64_t n) {
  if (kind == ReduceKind::kMean) return static_cast<float>(acc / static_cast<double>(n));
  if (kind == ReduceKind::kL2) return static_cast<float>(std::sqrt(acc));
  if (kind == ReduceKind::kLogSum) return static_cast<float>(std::log(acc));
  return static_cast<float>(acc);
}

// Output o = reduction of the contiguous row x[o * n, (o + 1) * n).
void reduce_rows_f32(const RowTable& t, ReduceKind kind, const float* x, float* y, int64_t n, int64_t begin,
                     int64_t end) {
  for (int64_t o = begin; o < end; ++o) {
    const float* row = x + o * n;
    if (kind == ReduceKind::kMax) {
      y[o] = t.max(row, n);
    } else if (kind == ReduceKind::kMin) {
      y[o] = t.min(row, n);
    } else {
      const int k = accumulate_kind(kind);
      const double acc = k == kAccumulateSquare ? t.sum_sq_f64(row, n)
                         : k == kAccumulateAbs  ? t.sum_abs_f64(row, n)
                                                : t.sum_f64(row, n);
      y[o] = finish_f32(kind, acc, n);
    }
  }
}

// Outputs [c0, c0 + len) of slice o: input rows o * n * inner + r * inner + c0
// for r in [0, n) accumulated into a vector, one row at a time.
void reduce_columns_f32(const RowTable& t, ReduceKind kind, const float* x, float* y, int64_t n, int64_t inner,
                        int64_t o, int64_t c0, int64_t len) {
  const float* base = x + o * n * inner + c0;
  float* out = y + o * inner + c0;
  if (kind == ReduceKind::kMax || kind == ReduceKind::kMin) {
    std::copy(base, base + len, out);
    for (int64_t r = 1; r < n; ++r) (kind == ReduceKind::kMax ? t.max_into : t.min_into)(base + r * inner, out, len);
    return;
  }
  double acc[kRowBlock];
  std::fill(acc, acc + len, 0.0);
  const int k = accumulate_kind(kind);
  for (int64_t r = 0; r < n; ++r) t.accumulate_f64(base + r * inner, acc, len, k);
  for (int64_t c = 0; c < len; ++c) out[c] = finish_f32(kind, acc[c], n);
}

// False when the reference must run (other kinds or dtypes, several reduced
// blocks, nothing to reduce).
bool reduce_fast_f32(const RowTable& t, ReduceKind kind, const Tensor& x, Tensor& y, const ReducePlan& plan) {
  if (x.dtype() != DType::kF32 || !plan.blocked || !has_fast_path(kind) || plan.reduced_count == 0 ||
      plan.output_count == 0) {
    return false;
  }
  const float* xd = x.data_as<float>();
  float* yd = y.data_as<float>();
  const int64_t n = plan.reduced_count, inner = plan.inner;
  if (inner == 1) {
    const int64_t grain = std::max<int64_t>(1, kReduceElementsPerTask / n);
    threading::parallel_for(plan.outer, grain,
                            [&](int64_t begin, int64_t end) { reduce_rows_f32(t, kind, xd, yd, n, begin, end); });
    return true;
  }
  const int64_t blocks = (inner + kRowBlock - 1) / kRowBlock;
  const int64_t grain = std::max<int64_t>(1, kReduceElementsPerTask / (n * std::min(inner, kRowBlock)));
  threading::parallel_for(plan.outer * blocks, grain, [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {
      const int64_t c0 = (u % blocks) * kRowBlock;
      reduce_columns_f32(t, kind, xd, yd, n, inner, u / blocks, c0, std::min(kRowBlock, inner - c0));
    }
  });
  return true;
}

class ReduceKernel final : public OpKernel {
 public:
  ReduceKernel(ReduceKind kind, bool axes_from_input, std::vector<int64_t> axes, bool keepdims, bool noop)
      : kind_(kind),
        axes_from_input_(axes_from_input),
        axes_(std::move(axes)),
        keepdims_(keepdims),
        noop_(noop),
        table_(row_table()) {}

  Status infer(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    EMBER_ASSIGN_OR_RETURN(AxisMask mask, resolve_mask(ctx));
    ctx.set_output(0, x.dtype(), reduced_shape(x.shape(), mask, keepdims_));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    EMBER_ASSIGN_OR_RETURN(AxisMask mask, resolve_mask(ctx));
    const ReducePlan plan = make_reduce_plan(x.shape(), mask);
    Tensor& y = ctx.output(0);
    if (reduce_fast_f32(table_, kind_, x, y, plan)) return Status::ok();
    switch (kind_) {
      case ReduceKind::kSum: return reduce_dispatch<ReduceKind::kSum>(x, y, plan);
      case ReduceKind::kMean: return reduce_dispatch<ReduceKind::kMean>(x, y, plan);
      case ReduceKind::kMax: return reduce_dispatch<ReduceKind::kMax>(x, y, plan);
      case ReduceKind::kMin: return reduce_dispatch<ReduceKind::kMin>(x, y, plan);
      case ReduceKind::kProd: return reduce_dispatch<ReduceKind::kProd>(x, y, plan);
      case ReduceKind::kL1: return reduce_dispatch<ReduceKind::kL1>(x, y, plan);
      case ReduceKind::kL2: return reduce_dispatch<ReduceKind::kL2>(x, y, plan);
      case ReduceKind::kLogSum: return reduce_dispatch<ReduceKind::kLogSum>(x, y, plan);
      case ReduceKind::kLogSumExp: return reduce_dispatch<ReduceKind::kLogSumExp>(x, y, plan);
      case ReduceKind::kSumSquare: return reduce_dispatch<ReduceKind::kSumSquare>(x, y, plan);
    }
    return internal_error("reduce: unknown kind");
  }

 private:
  // Empty or absent axes mean all axes, or none when noop_with_empty_axes is set
  // (each element is then reduced alone: ReduceSumSquare squares, ReduceL1 takes |x|).
  Result<AxisMask> resolve_mask(const KernelContext& ctx) const {
    const int64_t rank = ctx.input(0).rank();
    if (rank > kMaxReduceRank) return invalid_argument("input rank {} is above the supported {}", rank, kMaxReduceRank);
    const AxisMask empty_axes_mask = noop_ ? 0 : all_axes_mask(rank);
    if (!axes_from_input_) {
      if (axes_.empty()) return all_axes_mask(rank);
      return axes_to_mask(axes_, rank, "attribute 'axes'");
    }
    if (!ctx.has_input(1) || ctx.input(1).numel() == 0) return empty_axes_mask;
    if (!ctx.has_value(1)) return needs_value(1);
    EMBER_ASSIGN_OR_RETURN(Shape axes, read_ints(ctx.input(1), "input 'axes'"));
    return axes_to_mask(axes, rank, "input 'axes'");
  }

  ReduceKind kind_;
  bool axes_from_input_;
  std::vector<int64_t> axes_;
  bool keepdims_;
  bool noop_;
  const RowTable& table_;
};

}  // namespace

KernelResult create_reduce(const KernelInit& init) {
  const ir::Node& node = init.node;
  const ReduceOpInfo* info = nullptr;
  for (const ReduceOpInfo& op : kReduceOps) {
    if (op.op_type == node.op_type) info = &op;
  }
  if (!info) return internal_error("create_reduce does not implement {}", node.op_type);
  const bool axes_from_input = node.opset >= info->axes_input_since;

  ir::AttrReader attrs(node);
  const bool keepdims = attrs.get_int("keepdims", 1) != 0;
  bool noop = false;
  std::vector<int64_t> axes;
  if (axes_from_input) {
    noop = attrs.get_int("noop_with_empty_axes", 0) != 0;
    if (attrs.has("axes")) {
      return invalid_argument("'axes' is an input, not an attribute, from opset {} (model uses opset {})",
                              info->axes_input_since, node.opset);
    }
  } else {
    axes = attrs.get_ints("axes");
  }
  EMBER_RETURN_IF_ERROR(attrs.status());

  const size_t max_inputs = axes_from_input ? 2 : 1;
  if (init.input_dtypes.empty() || init.input_dtypes.size() > max_inputs) {
    return invalid_argument("expects 1 to {} inputs at opset {}, got {}", max_inputs, node.opset,
                            init.input_dtypes.size());
  }
  const DType dtype = init.input_dtypes[0];
  if (dtype == DType::kString) return not_implemented("string tensors are not supported");
  const bool bool_ok = info->kind == ReduceKind::kMax || info->kind == ReduceKind::kMin;
  if (!dtype_is_float(dtype) && !dtype_is_int(dtype) && !(bool_ok && dtype == DType::kBool)) {
    return invalid_argument("input 'data' has unsupported dtype {}", dtype_name(dtype));
  }
  if (init.input_dtypes.size() == 2 && init.input_dtypes[1] != DType::kUndefined &&
      !dtype_is_int(init.input_dtypes[1])) {
    return invalid_argument("input 'axes' must be int64, got {}", dtype_name(init.input_dtypes[1]));
  }
  return std::unique_ptr<OpKernel>(
      std::make_unique<ReduceKernel>(info->kind, axes_from_input, std::move(axes), keepdims, noop));
}

}  // namespace ember::kernels
