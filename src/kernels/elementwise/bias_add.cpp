// com.microsoft BiasAdd as ONNX Runtime's contrib spec defines it: Y = X + bias
// + skip, with X and skip [batch, sequence, channels] and bias [channels];
// float32 or float16 (summed in f32, rounded once).
#include <memory>

#include "kernels/elementwise/elementwise_common.h"

namespace ember::kernels {
namespace {

class BiasAddKernel final : public OpKernel {
 public:
  explicit BiasAddKernel(DType dtype) : dtype_(dtype) {}

  Status infer(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& bias = ctx.input(1);
    const Tensor& skip = ctx.input(2);
    if (x.rank() != 3) return invalid_argument("input 'X' {} must be 3-D [batch, sequence, channels]", x.describe());
    if (bias.rank() != 1 || bias.dim(0) != x.dim(2)) {
      return invalid_argument("input 'bias' {} must be [channels={}]", bias.describe(), x.dim(2));
    }
    if (skip.shape() != x.shape()) {
      return invalid_argument("input 'skip' {} must have the shape of 'X' {}", skip.describe(), x.describe());
    }
    ctx.set_output(0, dtype_, x.shape());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int64_t channels = x.dim(2);
    const int64_t n = x.numel();
    EMBER_SWITCH_FLOAT(dtype_, T, {
      using C = compute_t<T>;
      const T* xp = x.data_as<T>();
      const T* bp = ctx.input(1).data_as<T>();
      const T* sp = ctx.input(2).data_as<T>();
      T* y = ctx.output(0).data_as<T>();
      for (int64_t i = 0; i < n; ++i) {
        y[i] = static_cast<T>(static_cast<C>(xp[i]) + static_cast<C>(bp[i % channels]) + static_cast<C>(sp[i]));
      }
    }, return internal_error("BiasAdd: unexpected dtype {}", dtype_name(dtype_)));
    return Status::ok();
  }

 private:
  DType dtype_;
};

Result<std::unique_ptr<OpKernel>> create_bias_add(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 3));
  const DType t = init.input_dtypes[0];
  if (t != DType::kF32 && t != DType::kF16) {
    return invalid_argument("input 'X' has dtype {}; BiasAdd takes float32 or float16", dtype_name(t));
  }
  for (size_t i : {1, 2}) {
    if (init.input_dtypes[i] != t) {
      return invalid_argument("input {} has dtype {}, expected {} like 'X'", i, dtype_name(init.input_dtypes[i]),
                              dtype_name(t));
    }
  }
  return std::unique_ptr<OpKernel>(std::make_unique<BiasAddKernel>(t));
}

}  // namespace

void register_bias_add_ops(OpRegistry& r) {
  r.add(up_to_newest("com.microsoft", "BiasAdd", 1, create_bias_add, {DType::kF32, DType::kF16}));
}

}  // namespace ember::kernels
