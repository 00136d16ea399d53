// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: reference kernels.
//
// Inputs are seen as [N, C, D] (D = product of the trailing dims) and targets as
// [N, D]. Element (n, d) with target t contributes -log_prob[n, t, d] * w, where
// w = weight[t] (1 without weights) and w = 0 when t == ignore_index; "mean"
// divides the weighted sum by the sum of w, as ONNX's reference does.
#include <cmath>
#include <limits>
#include <optional>

#include "kernels/reduce/reduce_ops.h"

namespace ember::kernels {
namespace {

enum class LossReduction { kNone, kSum, kMean };

struct LossGeometry {
  int64_t n = 0, c = 0, d = 1;
};

struct LossParams {
  LossReduction reduction;
  std::optional<int64_t> ignore_index;
};

LossGeometry loss_geometry(const Tensor& input) {
  LossGeometry g{input.dim(0), input.dim(1), 1};
  for (int64_t i = 2; i < input.rank(); ++i) g.d *= input.dim(i);
  return g;
}

Status check_loss_shapes(const KernelContext& ctx, std::string_view input_name, std::string_view target_name) {
  const Tensor& input = ctx.input(0);
  const Tensor& target = ctx.input(1);
  if (input.rank() < 2) return invalid_argument("input '{}' must have rank >= 2, got {}", input_name, input.describe());
  bool ok = target.rank() == input.rank() - 1 && target.dim(0) == input.dim(0);
  for (int64_t i = 1; ok && i < target.rank(); ++i) ok = target.dim(i) == input.dim(i + 1);
  if (!ok) {
    return invalid_argument("input '{}' {} must have shape (N, D1..Dk) of input '{}' {}", target_name,
                            target.describe(), input_name, input.describe());
  }
  if (ctx.has_input(2) && (ctx.input(2).rank() != 1 || ctx.input(2).dim(0) != input.dim(1))) {
    return invalid_argument("input 'weight' {} must have shape [C] = [{}]", ctx.input(2).describe(), input.dim(1));
  }
  return Status::ok();
}

void set_loss_output(KernelContext& ctx, LossReduction reduction) {
  const Tensor& target = ctx.input(1);
  ctx.set_output(0, ctx.input(0).dtype(), reduction == LossReduction::kNone ? target.shape() : Shape{});
}

// `log_prob(n, t, d)` gives the log-probability of class t at (n, d).
template <typename T, typename Tind, typename LogProb>
Status weighted_loss(const Tind* target, const T* weight, const LossGeometry& g, const LossParams& p,
                     LogProb&& log_prob, T* out) {
  using C = compute_t<T>;
  double loss_sum = 0;
  double weight_sum = 0;
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t d = 0; d < g.d; ++d) {
      const int64_t i = n * g.d + d;
      const int64_t t = static_cast<int64_t>(target[i]);
      double loss = 0;
      double w = 0;
      if (!p.ignore_index || t != *p.ignore_index) {
        if (t < 0 || t >= g.c) return invalid_argument("target value {} at index {} is outside [0, {})", t, i, g.c);
        w = weight ? static_cast<double>(static_cast<C>(weight[t])) : 1.0;
        loss = -log_prob(n, t, d) * w;
      }
      if (p.reduction == LossReduction::kNone) out[i] = static_cast<T>(static_cast<C>(loss));
      loss_sum += loss;
      weight_sum += w;
    }
  }
  if (p.reduction == LossReduction::kSum) out[0] = static_cast<T>(static_cast<C>(loss_sum));
  if (p.reduction == LossReduction::kMean) out[0] = static_cast<T>(static_cast<C>(loss_sum / weight_sum));
  return Status::ok();
}

template <typename T, typename Tind>
Status nll_typed(KernelContext& ctx, const LossParams& p) {
  using C = compute_t<T>;
  const Tensor& input = ctx.input(0);
  const LossGeometry g = loss_geometry(input);
  const T* x = input.data_as<T>();
  const T* weight = ctx.has_input(2) ? ctx.input(2).data_as<T>() : nullptr;
  auto log_prob = [&](int64_t n, int64_t t, int64_t d) {
    return static_cast<double>(static_cast<C>(x[(n * g.c + t) * g.d + d]));
  };
  return weighted_loss<T, Tind>(ctx.input(1).data_as<Tind>(), weight, g, p, log_prob, ctx.output(0).data_as<T>());
}

// Log-softmax over the class axis of column (n, d), computed on demand so no
// scratch buffer is needed when the log_prob output is omitted.
template <typename T, typename Tind>
Status sce_typed(KernelContext& ctx, const LossParams& p) {
  using C = compute_t<T>;
  const Tensor& scores = ctx.input(0);
  const LossGeometry g = loss_geometry(scores);
  const T* x = scores.data_as<T>();
  auto value = [&](int64_t n, int64_t c, int64_t d) {
    return static_cast<double>(static_cast<C>(x[(n * g.c + c) * g.d + d]));
  };
  auto column_log_norm = [&](int64_t n, int64_t d) {
    double max = -std::numeric_limits<double>::infinity();
    for (int64_t c = 0; c < g.c; ++c) max = std::max(max, value(n, c, d));
    double sum = 0;
    for (int64_t c = 0; c < g.c; ++c) sum += std::exp(value(n, c, d) - max);
    return max + std::log(sum);
  };
  if (ctx.has_output(1)) {
    T* lp = ctx.output(1).data_as<T>();
    for (int64_t n = 0; n < g.n; ++n) {
      for (int64_t d = 0; d < g.d; ++d) {
        const double norm = column_log_norm(n, d);
        for (int64_t c = 0; c < g.c; ++c) {
          lp[(n * g.c + c) * g.d + d] = static_cast<T>(static_cast<C>(value(n, c, d) - norm));
        }
      }
    }
  }
  const T* weight = ctx.has_input(2) ? ctx.input(2).data_as<T>() : nullptr;
  auto log_prob = [&](int64_t n, int64_t t, int64_t d) { return value(n, t, d) - column_log_norm(n, d); };
  return weighted_loss<T, Tind>(ctx.input(1).data_as<Tind>(), weight, g, p, log_prob, ctx.output(0).data_as<T>());
}

class LossKernel final : public OpKernel {
 public:
  LossKernel(bool softmax, LossParams params) : softmax_(softmax), params_(params) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_RETURN_IF_ERROR(check_loss_shapes(ctx, softmax_ ? "scores" : "input", softmax_ ? "labels" : "target"));
    set_loss_output(ctx, params_.reduction);
    if (softmax_) ctx.set_output(1, ctx.input(0).dtype(), ctx.input(0).shape());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const DType dtype = ctx.input(0).dtype();
    const bool wide_index = ctx.input(1).dtype() == DType::kI64;
    EMBER_SWITCH_FLOAT(
        dtype, T,
        if (softmax_) return wide_index ? (sce_typed<T, int64_t>(ctx, params_)) : (sce_typed<T, int32_t>(ctx, params_));
        return wide_index ? (nll_typed<T, int64_t>(ctx, params_)) : (nll_typed<T, int32_t>(ctx, params_)), break);
    return internal_error("loss: unexpected dtype {}", dtype_name(dtype));
  }

 private:
  bool softmax_;
  LossParams params_;
};

}  // namespace

KernelResult create_loss(const KernelInit& init) {
  const ir::Node& node = init.node;
  const bool softmax = node.op_type == "SoftmaxCrossEntropyLoss";
  ir::AttrReader attrs(node);
  const std::string reduction = attrs.get_string("reduction", "mean");
  LossParams params{LossReduction::kMean, std::nullopt};
  if (attrs.has("ignore_index")) params.ignore_index = attrs.get_int("ignore_index", 0);
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (reduction == "none") {
    params.reduction = LossReduction::kNone;
  } else if (reduction == "sum") {
    params.reduction = LossReduction::kSum;
  } else if (reduction != "mean") {
    return invalid_argument("attribute 'reduction' must be none, sum or mean, got '{}'", reduction);
  }
  const auto& dtypes = init.input_dtypes;
  if (dtypes.size() < 2 || dtypes.size() > 3) return invalid_argument("expects 2 or 3 inputs, got {}", dtypes.size());
  if (dtypes[0] == DType::kString) return not_implemented("string tensors are not supported");
  if (!dtype_is_float(dtypes[0])) {
    return invalid_argument("input 0 must be floating-point, got {}", dtype_name(dtypes[0]));
  }
  if (dtypes[1] != DType::kI32 && dtypes[1] != DType::kI64) {
    return invalid_argument("input 1 (target) must be int32 or int64, got {}", dtype_name(dtypes[1]));
  }
  if (dtypes.size() == 3 && dtypes[2] != DType::kUndefined && dtypes[2] != dtypes[0]) {
    return invalid_argument("input 'weight' must be {} like input 0, got {}", dtype_name(dtypes[0]),
                            dtype_name(dtypes[2]));
  }
  return std::unique_ptr<OpKernel>(std::make_unique<LossKernel>(softmax, params));
}

}  // namespace ember::kernels
