// Gelu family: ONNX Gelu (opset 20) and Swish (opset 24), and the com.microsoft
// contrib ops Gelu, FastGelu, QuickGelu and BiasGelu, as ONNX Runtime defines them.
#include <climits>
#include <cmath>

#include "kernels/elementwise/unary_kernel.h"

namespace ember::kernels {
namespace elementwise {
namespace {

// Reference functors for the dtypes the table does not cover (f64).
struct GeluOp {
  static constexpr TypeSet kTypes = TypeSet::kFloat;
  bool tanh_form;
  explicit GeluOp(ir::AttrReader& a) : tanh_form(a.get_string("approximate", "none") == "tanh") {}
  template <typename C> C operator()(C x) const {
    if (tanh_form) return C(0.5) * x * (C(1) + std::tanh(C(0.7978845608028654) * (x + C(0.044715) * x * x * x)));
    return C(0.5) * x * (C(1) + std::erf(x * C(0.7071067811865476)));
  }
};

// x sigmoid(alpha x), split at 0 so exp never overflows.
struct SwishOp {
  static constexpr TypeSet kTypes = TypeSet::kFloat;
  float alpha;
  explicit SwishOp(ir::AttrReader& a) : alpha(a.get_float("alpha", 1.0f)) {}
  template <typename C> C operator()(C x) const {
    const C u = C(alpha) * x;
    return u >= C(0) ? x / (C(1) + std::exp(-u)) : x * std::exp(u) / (C(1) + std::exp(u));
  }
};

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

Result<std::unique_ptr<OpKernel>> create_contrib_unary(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(check_input_count(init, 1, 1));
  EMBER_RETURN_IF_ERROR(check_half_or_f32(init.input_dtypes[0], 0, init.node.op_type));
  EMBER_ASSIGN_OR_RETURN(std::optional<UnarySpec> spec, unary_spec(init.node));
  return std::unique_ptr<OpKernel>(std::make_unique<UnaryTableKernel>(*spec, init.input_dtypes[0]));
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
  using namespace elementwise;
  add_op(r, "Gelu", 20, create_unary_table<GeluOp>);
  add_op(r, "Swish", 24, create_unary_table<SwishOp>);
  r.add(OpEntry{"com.microsoft", "Gelu", 1, INT_MAX, create_contrib_unary});
  r.add(OpEntry{"com.microsoft", "QuickGelu", 1, INT_MAX, create_contrib_unary});
  r.add(OpEntry{"com.microsoft", "FastGelu", 1, INT_MAX, create_fast_gelu});
  r.add(OpEntry{"com.microsoft", "BiasGelu", 1, INT_MAX, create_bias_gelu});
}

}  // namespace ember::kernels
