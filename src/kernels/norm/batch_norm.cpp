// BatchNormalization: y = (x - mean) / sqrt(var + epsilon) * scale + B. Inference
// takes mean and var from the inputs; training mode (opset 14's training_mode=1)
// uses the batch's own statistics per channel and also outputs the updated
// running statistics input * momentum + batch * (1 - momentum).
#include <cmath>
#include <memory>

#include "kernels/norm/norm_ops.h"

namespace ember::kernels {
namespace {

class BatchNormKernel final : public OpKernel {
 public:
  // spatial=false (opsets < 9) gives every element of X[n] its own statistics:
  // the parameters then have shape X.shape[1:].
  BatchNormKernel(DType dtype, float epsilon, bool spatial, bool training, float momentum)
      : dtype_(dtype), epsilon_(epsilon), spatial_(spatial), training_(training), momentum_(momentum) {}

  Status infer(KernelContext& ctx) const override {
    const Shape& x = ctx.input(0).shape();
    if (x.size() < 2) return invalid_argument("X must have rank >= 2 (N x C x ...), got {}", shape_to_string(x));
    const Shape param_shape = spatial_ ? Shape{x[1]} : Shape(x.begin() + 1, x.end());
    static constexpr const char* kNames[] = {"X", "scale", "B", "input_mean", "input_var"};
    for (size_t i = 1; i < 5; ++i) {
      const Tensor& p = ctx.input(i);
      if (p.numel() != shape_numel(param_shape)) {
        return invalid_argument("{} {} must have shape {} for X {}", kNames[i], shape_to_string(p.shape()),
                                shape_to_string(param_shape), shape_to_string(x));
      }
    }
    ctx.set_output(0, dtype_, x);
    for (size_t i = 1; i < 3; ++i) ctx.set_output(i, ctx.input(i + 2).dtype(), ctx.input(i + 2).shape());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    if (training_) return run_training(ctx);
    const Tensor& x = ctx.input(0);
    const int64_t batch = x.dim(0), channels = x.dim(1);
    int64_t inner = 1;
    for (int64_t d = 2; d < x.rank(); ++d) inner *= x.dim(d);
    // Spatial: one affine map per channel; otherwise one per element of X[n].
    const int64_t run_length = spatial_ ? inner : 1;
    EMBER_SWITCH_FLOAT(dtype_, T, {
      const T* xd = x.data_as<T>();
      T* yd = ctx.output(0).data_as<T>();
      for (int64_t n = 0; n < batch; ++n) {
        for (int64_t c = 0; c < channels; ++c) {
          const int64_t offset = (n * channels + c) * inner;
          for (int64_t s0 = 0; s0 < inner; s0 += run_length) {
            const int64_t p = spatial_ ? c : c * inner + s0;
            const double a = read_double(ctx.input(1), p) / std::sqrt(read_double(ctx.input(4), p) + epsilon_);
            const double b = read_double(ctx.input(2), p) - read_double(ctx.input(3), p) * a;
            for (int64_t s = s0; s < s0 + run_length; ++s) {
              const double v = static_cast<double>(static_cast<compute_t<T>>(xd[offset + s])) * a + b;
              yd[offset + s] = static_cast<T>(static_cast<compute_t<T>>(v));
            }
          }
        }
      }
    }, return internal_error("BatchNormalization: unexpected dtype {}", dtype_name(dtype_)));
    return Status::ok();
  }

 private:
  // Per channel over N and the spatial dims (opset 14 has no spatial attribute).
  Status run_training(KernelContext& ctx) const {
    const Tensor& x = ctx.input(0);
    const int64_t batch = x.dim(0), channels = x.dim(1);
    int64_t inner = 1;
    for (int64_t d = 2; d < x.rank(); ++d) inner *= x.dim(d);
    const double count = static_cast<double>(batch * inner);
    EMBER_SWITCH_FLOAT(dtype_, T, {
      const T* xd = x.data_as<T>();
      T* yd = ctx.output(0).data_as<T>();
      auto value = [xd](int64_t i) { return static_cast<double>(static_cast<compute_t<T>>(xd[i])); };
      for (int64_t c = 0; c < channels; ++c) {
        double sum = 0;
        for (int64_t n = 0; n < batch; ++n) {
          for (int64_t s = 0; s < inner; ++s) sum += value((n * channels + c) * inner + s);
        }
        const double mean = count > 0 ? sum / count : 0.0;
        double sq = 0;
        for (int64_t n = 0; n < batch; ++n) {
          for (int64_t s = 0; s < inner; ++s) {
            const double d = value((n * channels + c) * inner + s) - mean;
            sq += d * d;
          }
        }
        const double var = count > 0 ? sq / count : 0.0;
        const double a = read_double(ctx.input(1), c) / std::sqrt(var + epsilon_);
        const double b = read_double(ctx.input(2), c) - mean * a;
        for (int64_t n = 0; n < batch; ++n) {
          const int64_t offset = (n * channels + c) * inner;
          for (int64_t s = 0; s < inner; ++s) {
            yd[offset + s] = static_cast<T>(static_cast<compute_t<T>>(value(offset + s) * a + b));
          }
        }
        for (size_t i = 1; i < 3; ++i) {
          if (!ctx.has_output(i)) continue;
          const double batch_stat = i == 1 ? mean : var;
          const double running = read_double(ctx.input(i + 2), c) * momentum_ + batch_stat * (1.0 - momentum_);
          EMBER_RETURN_IF_ERROR(write_double(ctx.output(i), c, running));
        }
      }
    }, return internal_error("BatchNormalization: unexpected dtype {}", dtype_name(dtype_)));
    return Status::ok();
  }

  static Status write_double(Tensor& t, int64_t i, double v) {
    EMBER_SWITCH_FLOAT(t.dtype(), T, t.data_as<T>()[i] = static_cast<T>(static_cast<compute_t<T>>(v)),
                       return internal_error("BatchNormalization: statistics dtype {}", dtype_name(t.dtype())));
    return Status::ok();
  }

  DType dtype_;
  float epsilon_;
  bool spatial_;
  bool training_;
  float momentum_;
};

}  // namespace

Result<std::unique_ptr<OpKernel>> create_batch_normalization(const KernelInit& init) {
  // Opset 15 lets scale/B and mean/var have float types of their own.
  EMBER_RETURN_IF_ERROR(check_float_inputs(init, 5, init.node.opset < 15));
  ir::AttrReader attrs(init.node);
  const float epsilon = attrs.get_float("epsilon", 1e-5f);
  const float momentum = attrs.get_float("momentum", 0.9f);
  const int64_t training_mode = attrs.get_int("training_mode", 0);
  const int64_t spatial = attrs.get_int("spatial", 1);
  // Opsets 1 and 6 carry consumed_inputs/is_test; inference ignores both.
  attrs.get_ints("consumed_inputs");
  attrs.get_int("is_test", 0);
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (spatial != 0 && spatial != 1) return invalid_argument("spatial must be 0 or 1, got {}", spatial);
  if (training_mode != 0 && training_mode != 1) {
    return invalid_argument("training_mode must be 0 or 1, got {}", training_mode);
  }
  // Opset 14 replaced the older training outputs (mean, var, saved_mean,
  // saved_var of opsets 1-9, filled when is_test=0) with running_mean and
  // running_var, filled when training_mode=1.
  const bool training = init.node.opset >= 14 && training_mode == 1;
  const auto& outputs = init.node.outputs;
  for (size_t i = training ? 3 : 1; i < outputs.size(); ++i) {
    if (outputs[i] != ir::kNoValue) {
      return not_implemented("output {} (a training statistic) is requested; only training_mode=1 of opset 14 "
                             "onward computes running statistics", i);
    }
  }
  if (!(epsilon >= 0.0f)) return invalid_argument("epsilon must be >= 0, got {}", epsilon);
  return std::unique_ptr<OpKernel>(
      std::make_unique<BatchNormKernel>(init.input_dtypes[0], epsilon, spatial == 1, training, momentum));
}

}  // namespace ember::kernels
