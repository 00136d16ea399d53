// QLinearMatMul (opsets 10 and 21): the exact int32 product of u8/s8 operands
// minus their zero points, requantized as ONNX Runtime does it: f32 multiplier
// a_scale * b_scale[j] / y_scale, float(acc) * multiplier clamped to the output
// range less y_zero_point, rounded half to even, plus y_zero_point. With
// float16 or bfloat16 scales (opset 21) the multiplier is computed in that type,
// as ONNX's reference does: round(round(a_scale * b_scale[j]) / y_scale).
#include <memory>
#include <vector>

#include "kernels/matmul/matmul_geometry.h"
#include "kernels/quant/qgemm_driver.h"
#include "kernels/quant/quant_ops.h"

namespace ember::kernels {
namespace {

enum Input : size_t { kA = 0, kAScale, kAZp, kB, kBScale, kBZp, kYScale, kYZp, kNumInputs };

Status check_per_tensor(const KernelContext& ctx, size_t i, std::string_view what) {
  if (ctx.input(i).numel() == 1) return Status::ok();
  return not_implemented("{} {} must have one element (A and Y are quantized per tensor)", what,
                         ctx.input(i).describe());
}

Status check_per_column(const KernelContext& ctx, size_t i, int64_t n, std::string_view what) {
  const Tensor& t = ctx.input(i);
  if (t.numel() == 1 || (t.numel() == n && t.rank() <= 2)) return Status::ok();
  return not_implemented("{} {} is neither per-tensor nor per-column with {} elements", what, t.describe(), n);
}

uint8_t byte_of(const Tensor& t) { return *static_cast<const uint8_t*>(t.data()); }

int32_t zero_point(const Tensor& t) {
  return t.dtype() == DType::kI8 ? static_cast<int32_t>(static_cast<int8_t>(byte_of(t))) : byte_of(t);
}

template <typename T>
float scale_value(const Tensor& t, int64_t i) {
  return static_cast<float>(t.data_as<T>()[i]);
}

// The per-column multipliers of 16-bit float scales, each rounded as its type.
template <typename T>
std::vector<float> multipliers_16(const KernelContext& ctx, int64_t n) {
  const Tensor& b_scale = ctx.input(kBScale);
  const float a = scale_value<T>(ctx.input(kAScale), 0), y = scale_value<T>(ctx.input(kYScale), 0);
  std::vector<float> out(static_cast<size_t>(b_scale.numel() > 1 ? n : 1));
  for (size_t j = 0; j < out.size(); ++j) {
    const float ab = static_cast<float>(T(a * scale_value<T>(b_scale, static_cast<int64_t>(j))));
    out[j] = static_cast<float>(T(ab / y));
  }
  return out;
}

template <typename TA, typename TB>
void qlinear_matmul_ref(const MatMulGeometry& g, const KernelContext& ctx, const quant::QGemmRequant& rq,
                        Tensor& y) {
  const TA* a = ctx.input(kA).data_as<TA>();
  const TB* b = ctx.input(kB).data_as<TB>();
  const int32_t za = zero_point(ctx.input(kAZp));
  const Tensor& b_zp = ctx.input(kBZp);
  const int64_t zb_stride = b_zp.numel() > 1 ? 1 : 0;
  auto* out = static_cast<uint8_t*>(y.data());
  for_each_batch(g, [&](int64_t ai, int64_t bi, int64_t ci) {
    const TA* am = a + ai * g.m * g.k;
    const TB* bm = b + bi * g.k * g.n;
    uint8_t* ym = out + ci * g.m * g.n;
    for (int64_t i = 0; i < g.m; ++i) {
      for (int64_t j = 0; j < g.n; ++j) {
        const int32_t zb = b_zp.dtype() == DType::kI8 ? b_zp.data_as<int8_t>()[j * zb_stride]
                                                      : b_zp.data_as<uint8_t>()[j * zb_stride];
        uint32_t acc = 0;
        for (int64_t kk = 0; kk < g.k; ++kk) {
          acc += static_cast<uint32_t>((static_cast<int32_t>(am[i * g.k + kk]) - za) *
                                       (static_cast<int32_t>(bm[kk * g.n + j]) - zb));
        }
        const float mult = rq.a_scale * rq.b_scale[j * rq.b_scale_stride] / rq.y_scale;
        ym[i * g.n + j] =
            static_cast<uint8_t>(quant::qgemm_requantize(static_cast<int32_t>(acc), mult, rq.y_zp, rq.y_signed));
      }
    }
  });
}

class QLinearMatMulKernel final : public OpKernel {
 public:
  QLinearMatMulKernel(DType a_type, DType b_type, DType y_type, DType scale_type,
                      std::unique_ptr<quant::QGemmWeights> packed)
      : a_type_(a_type), b_type_(b_type), y_type_(y_type), scale_type_(scale_type), packed_(std::move(packed)),
        table_(&quant::qgemm_table()) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(MatMulGeometry g, matmul_geometry(ctx.input(kA).shape(), ctx.input(kB).shape()));
    EMBER_RETURN_IF_ERROR(check_per_tensor(ctx, kAScale, "a_scale"));
    EMBER_RETURN_IF_ERROR(check_per_tensor(ctx, kAZp, "a_zero_point"));
    EMBER_RETURN_IF_ERROR(check_per_tensor(ctx, kYScale, "y_scale"));
    EMBER_RETURN_IF_ERROR(check_per_tensor(ctx, kYZp, "y_zero_point"));
    EMBER_RETURN_IF_ERROR(check_per_column(ctx, kBScale, g.n, "b_scale"));
    EMBER_RETURN_IF_ERROR(check_per_column(ctx, kBZp, g.n, "b_zero_point"));
    ctx.set_output(0, y_type_, std::move(g.out_shape));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(MatMulGeometry g, matmul_geometry(ctx.input(kA).shape(), ctx.input(kB).shape()));
    quant::QGemmRequant rq;
    std::vector<float> multipliers;
    if (scale_type_ == DType::kF32) {
      rq.a_scale = *ctx.input(kAScale).data_as<float>();
      rq.y_scale = *ctx.input(kYScale).data_as<float>();
      rq.b_scale = ctx.input(kBScale).data_as<float>();
    } else {
      multipliers = scale_type_ == DType::kF16 ? multipliers_16<Float16>(ctx, g.n) : multipliers_16<BFloat16>(ctx, g.n);
      rq.b_scale = multipliers.data();  // a_scale and y_scale stay 1: the multiplier is already whole
    }
    rq.b_scale_stride = ctx.input(kBScale).numel() > 1 ? 1 : 0;
    rq.y_zp = zero_point(ctx.input(kYZp));
    rq.y_signed = y_type_ == DType::kI8;
    Tensor& y = ctx.output(0);
    if (packed_) {
      quant::QGemmA qa;
      qa.is_signed = a_type_ == DType::kI8;
      qa.m = g.m;
      qa.zp = static_cast<const uint8_t*>(ctx.input(kAZp).data());
      const auto* a = static_cast<const uint8_t*>(ctx.input(kA).data());
      for_each_batch(g, [&](int64_t ai, int64_t, int64_t ci) {
        qa.data = a + ai * g.m * g.k;
        quant::run_qgemm(*table_, *packed_, qa, &rq, static_cast<uint8_t*>(y.data()) + ci * g.m * g.n);
      });
      return Status::ok();
    }
    const bool a_u8 = a_type_ == DType::kU8, b_u8 = b_type_ == DType::kU8;
    if (a_u8 && b_u8) qlinear_matmul_ref<uint8_t, uint8_t>(g, ctx, rq, y);
    if (a_u8 && !b_u8) qlinear_matmul_ref<uint8_t, int8_t>(g, ctx, rq, y);
    if (!a_u8 && b_u8) qlinear_matmul_ref<int8_t, uint8_t>(g, ctx, rq, y);
    if (!a_u8 && !b_u8) qlinear_matmul_ref<int8_t, int8_t>(g, ctx, rq, y);
    return Status::ok();
  }

  bool prepacked_input(size_t i) const override { return packed_ && (i == kB || i == kBZp); }
  int64_t packed_bytes() const override { return packed_ ? packed_->bytes() : 0; }

 private:
  DType a_type_, b_type_, y_type_;
  DType scale_type_;  // of all three scales: f32, f16 or bf16
  std::unique_ptr<quant::QGemmWeights> packed_;  // null: the reference loop
  const quant::QGemmTable* table_;
};

// Packs a constant 2-D B whose constant zero point is per tensor or per column.
std::unique_ptr<quant::QGemmWeights> pack_constant_b(const KernelInit& init) {
  if (init.constant_inputs.size() <= kBZp) return nullptr;
  return quant::pack_constant_weights(init.constant_inputs[kB], init.constant_inputs[kBZp], true);
}

}  // namespace

Result<std::unique_ptr<OpKernel>> create_qlinear_matmul(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, kNumInputs));
  const auto is_8bit = [](DType t) { return t == DType::kU8 || t == DType::kI8; };
  const DType a = init.input_dtypes[kA], b = init.input_dtypes[kB], y = init.input_dtypes[kYZp];
  if (!is_8bit(a) || !is_8bit(b) || !is_8bit(y)) {
    return not_implemented("a, b and y_zero_point must be uint8 or int8, got {}, {} and {}", dtype_name(a),
                           dtype_name(b), dtype_name(y));
  }
  const DType scale = init.input_dtypes[kAScale];
  if (scale != DType::kF32 && scale != DType::kF16 && scale != DType::kBF16) {
    return not_implemented("a_scale is {}, expected float32, float16 or bfloat16", dtype_name(scale));
  }
  const struct {
    size_t input;
    DType want;
    const char* name;
  } checks[] = {{kAZp, a, "a_zero_point"}, {kBZp, b, "b_zero_point"}, {kBScale, scale, "b_scale"},
                {kYScale, scale, "y_scale"}};
  for (const auto& c : checks) {
    if (init.input_dtypes[c.input] != c.want) {
      return not_implemented("{} is {}, expected {}", c.name, dtype_name(init.input_dtypes[c.input]),
                             dtype_name(c.want));
    }
  }
  return std::unique_ptr<OpKernel>(std::make_unique<QLinearMatMulKernel>(a, b, y, scale, pack_constant_b(init)));
}

}  // namespace ember::kernels
