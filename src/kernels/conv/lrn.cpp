// LRN: y = x / (bias + alpha / size * sum of x^2 over the channels
// [c - floor((size-1)/2), c + ceil((size-1)/2)] inside [0, C))^beta.
#include <algorithm>
#include <cmath>
#include <memory>

#include "kernels/conv/conv_ops.h"

namespace ember::kernels {
namespace {

struct LrnParams {
  float alpha = 1e-4f, beta = 0.75f, bias = 1.0f;
  int64_t size = 1;
};

template <typename T>
void lrn_ref(const LrnParams& p, int64_t batch, int64_t channels, int64_t spatial, const T* x, T* y) {
  using Acc = compute_t<T>;
  const int64_t before = (p.size - 1) / 2, after = p.size - 1 - before;
  const Acc scale = static_cast<Acc>(p.alpha) / static_cast<Acc>(p.size);
  for (int64_t n = 0; n < batch; ++n) {
    const T* xn = x + n * channels * spatial;
    T* yn = y + n * channels * spatial;
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t lo = std::max<int64_t>(0, c - before), hi = std::min(channels - 1, c + after);
      for (int64_t s = 0; s < spatial; ++s) {
        Acc square_sum = Acc(0);
        for (int64_t i = lo; i <= hi; ++i) {
          const Acc v = static_cast<Acc>(xn[i * spatial + s]);
          square_sum += v * v;
        }
        const Acc v = static_cast<Acc>(xn[c * spatial + s]);
        const Acc base = static_cast<Acc>(p.bias) + scale * square_sum;
        yn[c * spatial + s] = static_cast<T>(v / std::pow(base, static_cast<Acc>(p.beta)));
      }
    }
  }
}

class LrnKernel final : public OpKernel {
 public:
  LrnKernel(DType dtype, LrnParams params) : dtype_(dtype), params_(params) {}

  Status infer(KernelContext& ctx) const override {
    const Shape& x = ctx.input(0).shape();
    if (x.size() < 2) return invalid_argument("X {} must be N x C x spatial", shape_to_string(x));
    ctx.set_output(0, dtype_, x);
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int64_t batch = x.dim(0), channels = x.dim(1);
    const int64_t spatial = batch * channels == 0 ? 0 : x.numel() / (batch * channels);
    EMBER_SWITCH_FLOAT(dtype_, T, lrn_ref<T>(params_, batch, channels, spatial, x.data_as<T>(), ctx.output(0).data_as<T>()),
                       return internal_error("LRN: unexpected dtype {}", dtype_name(dtype_)));
    return Status::ok();
  }

 private:
  DType dtype_;
  LrnParams params_;
};

}  // namespace

Result<std::unique_ptr<OpKernel>> create_lrn(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 1));
  const DType t = init.input_dtypes[0];
  if (!dtype_is_float(t)) return not_implemented("dtype {} is not supported (float types only)", dtype_name(t));
  ir::AttrReader reader(init.node);
  reader.require("size");
  LrnParams p;
  p.alpha = reader.get_float("alpha", 1e-4f);
  p.beta = reader.get_float("beta", 0.75f);
  p.bias = reader.get_float("bias", 1.0f);
  p.size = reader.get_int("size", 1);
  EMBER_RETURN_IF_ERROR(reader.status());
  if (p.size < 1) return invalid_argument("size must be >= 1, got {}", p.size);
  return std::unique_ptr<OpKernel>(std::make_unique<LrnKernel>(t, p));
}

}  // namespace ember::kernels
