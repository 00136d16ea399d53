// The com.microsoft contrib ops FastGelu and BiasGelu, as ONNX Runtime defines
// them: a Gelu kind of the unary op table applied to x + bias. (ONNX Gelu and
// Swish, com.microsoft Gelu and QuickGelu are rows of src/ops/unary_ops.def.)
#include <cmath>

#include "kernels/elementwise/unary_kernel.h"

namespace ember::kernels {
namespace elementwise {
namespace {

// y = f(x + bias), bias a 1-D tensor as long as x's last axis (FastGelu's
// optional bias, BiasGelu's bias). f32/f16/bf16 only, as in ONNX Runtime.
class BiasUnaryKernel final : public OpKernel {
 public:
  static constexpr int64_t kBlock = 512;

  BiasUnaryKernel(UnaryKind kind, DType dtype)
      : fn_(unary_table().get(kind)), dtype_(dtype), grain_(unary_grain(kind)) {}

  Status infer(KernelContext& ctx) const override {
    const Shape& x = ctx.input(0).shape();
    const Shape& b = ctx.input(1).shape();
    if (x.empty() || b.size() != 1 || b[0] != x.back()) {
      return invalid_argument("bias has shape {}, expected [{}] (the last dimension of input {})", shape_to_string(b),
                              x.empty() ? 0 : x.back(), shape_to_string(x));
    }
    ctx.set_output(0, dtype_, x);
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int64_t cols = x.shape().back();
    if (cols == 0) return Status::ok();
    const int64_t rows = x.numel() / cols;
    const ConvertTable& cvt = convert_table();
    const void* xp = x.data();
    const void* bp = ctx.input(1).data();
    void* yp = ctx.output(0).data();
    const int64_t grain = cols >= grain_ ? 1 : grain_ / cols;
    threading::parallel_for(rows, grain, [&](int64_t begin, int64_t end) {
      float xb[kBlock];
      float bb[kBlock];
      for (int64_t r = begin; r < end; ++r) {
        for (int64_t c = 0; c < cols; c += kBlock) {
          const int64_t m = cols - c < kBlock ? cols - c : kBlock;
          const int64_t at = r * cols + c;
          load(xp, at, xb, m, cvt);
          load(bp, c, bb, m, cvt);
          for (int64_t i = 0; i < m; ++i) xb[i] += bb[i];
          fn_(xb, xb, m, UnaryParams{});
          store(xb, yp, at, m, cvt);
        }
      }
    });
    return Status::ok();
  }

  int inplace_input() const override { return 0; }

 private:
  void load(const void* src, int64_t at, float* dst, int64_t m, const ConvertTable& cvt) const {
    if (dtype_ == DType::kF32) {
      const float* s = static_cast<const float*>(src) + at;
      for (int64_t i = 0; i < m; ++i) dst[i] = s[i];
    } else {
      (dtype_ == DType::kF16 ? cvt.f16_to_f32 : cvt.bf16_to_f32)(static_cast<const uint16_t*>(src) + at, dst, m);
    }
  }
  void store(const float* src, void* dst, int64_t at, int64_t m, const ConvertTable& cvt) const {
    if (dtype_ == DType::kF32) {
      float* d = static_cast<float*>(dst) + at;
      for (int64_t i = 0; i < m; ++i) d[i] = src[i];
    } else {
      (dtype_ == DType::kF16 ? cvt.f32_to_f16 : cvt.f32_to_bf16)(src, static_cast<uint16_t*>(dst) + at, m);
    }
  }

  UnaryF32Fn fn_;
  DType dtype_;
  int64_t grain_;
};

Status check_half_or_f32(DType t, size_t input, std::string_view op_type) {
  if (t == DType::kF32 || t == DType::kF16 || t == DType::kBF16) return Status::ok();
  return invalid_argument("{}: input {} has dtype {}, expected float, float16 or bfloat16", op_type, input,
                          dtype_name(t));
}

Result<std::unique_ptr<OpKernel>> create_bias_unary(const KernelInit& init, UnaryKind kind, bool bias_optional) {
  EMBER_RETURN_IF_ERROR(check_input_count(init, bias_optional ? 1 : 2, 2));
  const DType dtype = init.input_dtypes[0];
  EMBER_RETURN_IF_ERROR(check_half_or_f32(dtype, 0, init.node.op_type));
  const bool has_bias = init.input_dtypes.size() > 1 && init.input_dtypes[1] != DType::kUndefined;
  if (!has_bias) return std::unique_ptr<OpKernel>(std::make_unique<UnaryTableKernel>(UnarySpec{kind, {}}, dtype));
  if (init.input_dtypes[1] != dtype) {
    return invalid_argument("{}: bias has dtype {}, expected {} like input 0", init.node.op_type,
                            dtype_name(init.input_dtypes[1]), dtype_name(dtype));
  }
  return std::unique_ptr<OpKernel>(std::make_unique<BiasUnaryKernel>(kind, dtype));
}

Result<std::unique_ptr<OpKernel>> create_fast_gelu(const KernelInit& init) {
  return create_bias_unary(init, UnaryKind::kGeluTanh, true);
}
Result<std::unique_ptr<OpKernel>> create_bias_gelu(const KernelInit& init) {
  return create_bias_unary(init, UnaryKind::kGelu, false);
}

}  // namespace
}  // namespace elementwise

void register_gelu_ops(OpRegistry& r) {
  constexpr DTypeSet kHalfOrF32{DType::kF32, DType::kF16, DType::kBF16};
  using namespace elementwise;
  r.add(up_to_newest("com.microsoft", "FastGelu", 1, create_fast_gelu, kHalfOrF32, Fusion::kElementwise));
  r.add(up_to_newest("com.microsoft", "BiasGelu", 1, create_bias_gelu, kHalfOrF32));
}

}  // namespace ember::kernels
