// MatMul: numpy matmul semantics resolved into 2-D GEMMs. f32 runs on the
// sgemm driver (a constant B packed once at creation); other numeric types and
// EMBER_REFERENCE=1 run gemm_ref, one call per broadcast batch index.
#include <memory>
#include <utility>

#include "kernels/matmul/gemm_ref.h"
#include "kernels/matmul/matmul_geometry.h"
#include "kernels/matmul/matmul_ops.h"
#include "kernels/matmul/sgemm.h"

namespace ember::kernels {
namespace {

template <typename T, typename Gemm>
void matmul_batched(const MatMulGeometry& g, const T* a, const T* b, T* c, Gemm&& gemm_fn) {
  GemmParams p = matrix_params(g);
  if (is_tall(g)) {
    p.m = g.m * shape_numel(g.batch);
    gemm_fn(p, a, b, c);
    return;
  }
  const int64_t a_size = g.m * g.k, b_size = g.k * g.n, c_size = g.m * g.n;
  for_each_batch(g, [&](int64_t ai, int64_t bi, int64_t ci) { gemm_fn(p, a + ai * a_size, b + bi * b_size, c + ci * c_size); });
}

Status infer_matmul(KernelContext& ctx, DType dtype) {
  EMBER_ASSIGN_OR_RETURN(MatMulGeometry g, matmul_geometry(ctx.input(0).shape(), ctx.input(1).shape()));
  ctx.set_output(0, dtype, std::move(g.out_shape));
  return Status::ok();
}

class MatMulRefKernel final : public OpKernel {
 public:
  explicit MatMulRefKernel(DType dtype) : dtype_(dtype) {}

  Status infer(KernelContext& ctx) const override { return infer_matmul(ctx, dtype_); }

  Status run(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(MatMulGeometry g, matmul_geometry(ctx.input(0).shape(), ctx.input(1).shape()));
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    Tensor& y = ctx.output(0);
    EMBER_SWITCH_NUMERIC(dtype_, T,
                         matmul_batched<T>(g, a.data_as<T>(), b.data_as<T>(), y.data_as<T>(),
                                           [](const GemmParams& p, const T* pa, const T* pb, T* pc) { gemm<T>(p, pa, pb, pc); }),
                         return internal_error("MatMul: unexpected dtype {}", dtype_name(dtype_)));
    return Status::ok();
  }

 private:
  DType dtype_;
};

// f32 on the sgemm driver. A constant B whose batch dimensions are all 1 is
// packed at creation and its data never read again.
class MatMulF32Kernel final : public OpKernel {
 public:
  MatMulF32Kernel(const sgemm::SgemmTable& table, sgemm::PackedWeight weight)
      : table_(table), weight_(std::move(weight)) {}

  Status infer(KernelContext& ctx) const override { return infer_matmul(ctx, DType::kF32); }

  Status run(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(MatMulGeometry g, matmul_geometry(ctx.input(0).shape(), ctx.input(1).shape()));
    const float* a = ctx.input(0).data_as<float>();
    float* y = ctx.output(0).data_as<float>();
    if (!weight_.empty()) {
      GemmParams p = matrix_params(g);
      p.m = g.m * shape_numel(g.batch);
      weight_.gemm(table_, p, a, y);
      return Status::ok();
    }
    matmul_batched<float>(g, a, ctx.input(1).data_as<float>(), y,
                          [&](const GemmParams& p, const float* pa, const float* pb, float* pc) {
                            sgemm::gemm(table_, p, pa, pb, pc);
                          });
    return Status::ok();
  }

  bool prepacked_input(size_t i) const override { return i == 1 && !weight_.empty(); }
  int64_t packed_bytes() const override { return weight_.bytes(); }

 private:
  const sgemm::SgemmTable& table_;
  sgemm::PackedWeight weight_;
};

Result<std::unique_ptr<OpKernel>> create_matmul_f32(const KernelInit& init) {
  const sgemm::SgemmTable& table = sgemm::sgemm_table();
  sgemm::PackedWeight weight;
  const Tensor* b = init.constant_inputs.size() > 1 ? init.constant_inputs[1] : nullptr;
  if (b != nullptr && b->rank() >= 1 && b->data() != nullptr) {
    const Shape& s = b->shape();
    const size_t r = s.size();
    const int64_t k = r >= 2 ? s[r - 2] : s[0];
    const int64_t n = r >= 2 ? s[r - 1] : 1;
    if (k * n == b->numel()) weight = sgemm::PackedWeight(table, b->data_as<float>(), n, false, k, n);
  }
  return std::unique_ptr<OpKernel>(std::make_unique<MatMulF32Kernel>(table, std::move(weight)));
}

}  // namespace

Result<std::unique_ptr<OpKernel>> create_matmul(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 2));
  const DType a = init.input_dtypes[0], b = init.input_dtypes[1];
  if (a != b) return invalid_argument("A is {} but B is {}", dtype_name(a), dtype_name(b));
  if ((a == DType::kF16 || a == DType::kBF16) && !reference_mode()) return create_matmul_lowp(init);
  if (!dtype_is_float(a) && !dtype_is_int(a)) return not_implemented("dtype {} is not supported", dtype_name(a));
  if (a == DType::kF32 && !reference_mode()) return create_matmul_f32(init);
  return std::unique_ptr<OpKernel>(std::make_unique<MatMulRefKernel>(a));
}

}  // namespace ember::kernels
