// BatchNormalization in inference mode: y = (x - mean) / sqrt(var + epsilon) * scale + B
// with the running statistics given as inputs.
#include <cmath>
#include <memory>

#include "kernels/norm/norm_ops.h"

namespace ember::kernels {
namespace {

class BatchNormKernel final : public OpKernel {
 public:
  // spatial=false (opsets < 9) gives every element of X[n] its own statistics:
  // the parameters then have shape X.shape[1:].
  BatchNormKernel(DType dtype, float epsilon, bool spatial) : dtype_(dtype), epsilon_(epsilon), spatial_(spatial) {}

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
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
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
  DType dtype_;
  float epsilon_;
  bool spatial_;
};

}  // namespace

Result<std::unique_ptr<OpKernel>> create_batch_normalization(const KernelInit& init) {
  // Opset 15 lets scale/B and mean/var have float types of their own.
  EMBER_RETURN_IF_ERROR(check_float_inputs(init, 5, init.node.opset < 15));
  ir::AttrReader attrs(init.node);
  const float epsilon = attrs.get_float("epsilon", 1e-5f);
  attrs.get_float("momentum", 0.9f);
  const int64_t training_mode = attrs.get_int("training_mode", 0);
  const int64_t spatial = attrs.get_int("spatial", 1);
  // Opsets 1 and 6 carry consumed_inputs/is_test; inference ignores both.
  attrs.get_ints("consumed_inputs");
  attrs.get_int("is_test", 0);
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (training_mode != 0) return not_implemented("training_mode={} is not supported (inference only)", training_mode);
  if (spatial != 0 && spatial != 1) return invalid_argument("spatial must be 0 or 1, got {}", spatial);
  const auto& outputs = init.node.outputs;
  for (size_t i = 1; i < outputs.size(); ++i) {
    if (outputs[i] != ir::kNoValue) {
      return not_implemented("output {} (a training statistic) is requested; only inference is supported", i);
    }
  }
  if (!(epsilon >= 0.0f)) return invalid_argument("epsilon must be >= 0, got {}", epsilon);
  return std::unique_ptr<OpKernel>(std::make_unique<BatchNormKernel>(init.input_dtypes[0], epsilon, spatial == 1));
}

}  // namespace ember::kernels
