// InstanceNormalization: per (n, c) statistics over the spatial dims, accumulated in double.
#include <cmath>
#include <memory>

#include "kernels/norm/norm_ops.h"

namespace ember::kernels {
namespace {

template <typename T>
void instance_norm_plane(const T* x, T* y, int64_t n, double scale, double bias, double epsilon) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(static_cast<compute_t<T>>(x[i]));
  const double mean = n > 0 ? sum / static_cast<double>(n) : 0.0;
  double sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(static_cast<compute_t<T>>(x[i])) - mean;
    sq += d * d;
  }
  const double var = n > 0 ? sq / static_cast<double>(n) : 0.0;
  const double a = scale / std::sqrt(var + epsilon);
  const double b = bias - mean * a;
  for (int64_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(static_cast<compute_t<T>>(x[i])) * a + b;
    y[i] = static_cast<T>(static_cast<compute_t<T>>(v));
  }
}

class InstanceNormKernel final : public OpKernel {
 public:
  InstanceNormKernel(DType dtype, float epsilon) : dtype_(dtype), epsilon_(epsilon) {}

  Status infer(KernelContext& ctx) const override {
    const Shape& x = ctx.input(0).shape();
    if (x.size() < 2) return invalid_argument("input must have rank >= 2 (N x C x ...), got {}", shape_to_string(x));
    for (size_t i = 1; i < 3; ++i) {
      const Shape& p = ctx.input(i).shape();
      if (p.size() != 1 || p[0] != x[1]) {
        return invalid_argument("{} {} must have shape [{}] (the channels of input {})", i == 1 ? "scale" : "B",
                                shape_to_string(p), x[1], shape_to_string(x));
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
    EMBER_SWITCH_FLOAT(dtype_, T, {
      const T* xd = x.data_as<T>();
      const T* scale = ctx.input(1).data_as<T>();
      const T* bias = ctx.input(2).data_as<T>();
      T* yd = ctx.output(0).data_as<T>();
      for (int64_t n = 0; n < batch; ++n) {
        for (int64_t c = 0; c < channels; ++c) {
          const int64_t offset = (n * channels + c) * inner;
          instance_norm_plane(xd + offset, yd + offset, inner, static_cast<double>(static_cast<compute_t<T>>(scale[c])),
                              static_cast<double>(static_cast<compute_t<T>>(bias[c])), epsilon_);
        }
      }
    }, return internal_error("InstanceNormalization: unexpected dtype {}", dtype_name(dtype_)));
    return Status::ok();
  }

 private:
  DType dtype_;
  float epsilon_;
};

}  // namespace

Result<std::unique_ptr<OpKernel>> create_instance_normalization(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(check_float_inputs(init, 3, true));
  ir::AttrReader attrs(init.node);
  const float epsilon = attrs.get_float("epsilon", 1e-5f);
  // Opset 1 carries consumed_inputs, which has no meaning here.
  attrs.get_ints("consumed_inputs");
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (!(epsilon >= 0.0f)) return invalid_argument("epsilon must be >= 0, got {}", epsilon);
  return std::unique_ptr<OpKernel>(std::make_unique<InstanceNormKernel>(init.input_dtypes[0], epsilon));
}

}  // namespace ember::kernels
