// MatMulInteger: exact int32 products of u8/s8 operands minus their zero points.
#include <memory>

#include "kernels/matmul/matmul_geometry.h"
#include "kernels/quant/integer_gemm.h"
#include "kernels/quant/qgemm_driver.h"
#include "kernels/quant/quant_ops.h"

namespace ember::kernels {
namespace {

// Zero points may be per tensor (one element) or per row of A / column of B.
Status check_zero_point(const KernelContext& ctx, size_t i, int64_t per_axis, std::string_view what) {
  if (!ctx.has_input(i)) return Status::ok();
  const Tensor& zp = ctx.input(i);
  const int64_t numel = zp.numel();
  if (numel == 1) return Status::ok();
  if (numel == per_axis && zp.rank() <= 2) return Status::ok();
  return not_implemented("{} {} is neither per-tensor nor per-{} with {} elements", what, zp.describe(),
                         i == 2 ? "row" : "column", per_axis);
}

template <typename TA, typename TB>
void matmul_integer_batched(const MatMulGeometry& g, const Tensor& a, const Tensor* a_zp, const Tensor& b,
                            const Tensor* b_zp, Tensor& y) {
  IntegerGemmParams p;
  p.m = g.m;
  p.n = g.n;
  p.k = g.k;
  p.lda = g.k;
  p.ldb = g.n;
  p.ldc = g.n;
  p.a_zp_stride = a_zp && a_zp->numel() > 1 ? 1 : 0;
  p.b_zp_stride = b_zp && b_zp->numel() > 1 ? 1 : 0;
  const TA* a_zp_data = a_zp ? a_zp->data_as<TA>() : nullptr;
  const TB* b_zp_data = b_zp ? b_zp->data_as<TB>() : nullptr;
  const int64_t a_size = g.m * g.k, b_size = g.k * g.n, c_size = g.m * g.n;
  for_each_batch(g, [&](int64_t ai, int64_t bi, int64_t ci) {
    gemm_integer_ref<TA, TB>(p, a.data_as<TA>() + ai * a_size, a_zp_data, b.data_as<TB>() + bi * b_size, b_zp_data,
                             y.data_as<int32_t>() + ci * c_size);
  });
}

// The prepacked path: constant 2-D B and a constant (or absent) B zero point.
void matmul_integer_packed(const quant::QGemmTable& table, const quant::QGemmWeights& w, const MatMulGeometry& g,
                           const Tensor& a, const Tensor* a_zp, Tensor& y) {
  quant::QGemmA qa;
  qa.is_signed = a.dtype() == DType::kI8;
  qa.m = g.m;
  qa.zp = a_zp ? static_cast<const uint8_t*>(a_zp->data()) : nullptr;
  qa.zp_stride = a_zp && a_zp->numel() > 1 ? 1 : 0;
  const auto* a_data = static_cast<const uint8_t*>(a.data());
  for_each_batch(g, [&](int64_t ai, int64_t, int64_t ci) {
    qa.data = a_data + ai * g.m * g.k;
    quant::run_qgemm(table, w, qa, nullptr, y.data_as<int32_t>() + ci * g.m * g.n);
  });
}

class MatMulIntegerKernel final : public OpKernel {
 public:
  MatMulIntegerKernel(DType a_type, DType b_type, std::unique_ptr<quant::QGemmWeights> packed)
      : a_type_(a_type), b_type_(b_type), packed_(std::move(packed)), table_(&quant::qgemm_table()) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(MatMulGeometry g, matmul_geometry(ctx.input(0).shape(), ctx.input(1).shape()));
    EMBER_RETURN_IF_ERROR(check_zero_point(ctx, 2, g.m, "a_zero_point"));
    EMBER_RETURN_IF_ERROR(check_zero_point(ctx, 3, g.n, "b_zero_point"));
    ctx.set_output(0, DType::kI32, std::move(g.out_shape));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(MatMulGeometry g, matmul_geometry(ctx.input(0).shape(), ctx.input(1).shape()));
    const Tensor* a_zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    const Tensor* b_zp = ctx.has_input(3) ? &ctx.input(3) : nullptr;
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    Tensor& y = ctx.output(0);
    if (packed_) {
      matmul_integer_packed(*table_, *packed_, g, a, a_zp, y);
      return Status::ok();
    }
    const bool a_u8 = a_type_ == DType::kU8, b_u8 = b_type_ == DType::kU8;
    if (a_u8 && b_u8) matmul_integer_batched<uint8_t, uint8_t>(g, a, a_zp, b, b_zp, y);
    if (a_u8 && !b_u8) matmul_integer_batched<uint8_t, int8_t>(g, a, a_zp, b, b_zp, y);
    if (!a_u8 && b_u8) matmul_integer_batched<int8_t, uint8_t>(g, a, a_zp, b, b_zp, y);
    if (!a_u8 && !b_u8) matmul_integer_batched<int8_t, int8_t>(g, a, a_zp, b, b_zp, y);
    return Status::ok();
  }

  bool prepacked_input(size_t i) const override { return packed_ && (i == 1 || i == 3); }
  int64_t packed_bytes() const override { return packed_ ? packed_->bytes() : 0; }

 private:
  DType a_type_, b_type_;
  std::unique_ptr<quant::QGemmWeights> packed_;  // null: the reference loop
  const quant::QGemmTable* table_;
};

// Packs a constant 2-D B whose zero point is constant or absent and per tensor
// or per column; anything else runs the reference loop.
std::unique_ptr<quant::QGemmWeights> pack_constant_b(const KernelInit& init) {
  const auto constant = [&](size_t i) { return i < init.constant_inputs.size() ? init.constant_inputs[i] : nullptr; };
  return quant::pack_constant_weights(constant(1), constant(3), input_dtype(init, 3) != DType::kUndefined);
}

}  // namespace

Result<std::unique_ptr<OpKernel>> create_matmul_integer(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 2));
  const auto is_8bit = [](DType t) { return t == DType::kU8 || t == DType::kI8; };
  const DType a = init.input_dtypes[0], b = init.input_dtypes[1];
  if (!is_8bit(a) || !is_8bit(b)) {
    return invalid_argument("A and B must be uint8 or int8, got {} and {}", dtype_name(a), dtype_name(b));
  }
  for (size_t i = 2; i < 4 && i < init.input_dtypes.size(); ++i) {
    const DType zp = init.input_dtypes[i];
    const DType want = i == 2 ? a : b;
    if (zp != DType::kUndefined && zp != want) {
      return invalid_argument("{} is {} but its operand is {}", i == 2 ? "a_zero_point" : "b_zero_point",
                              dtype_name(zp), dtype_name(want));
    }
  }
  return std::unique_ptr<OpKernel>(std::make_unique<MatMulIntegerKernel>(a, b, pack_constant_b(init)));
}

}  // namespace ember::kernels
