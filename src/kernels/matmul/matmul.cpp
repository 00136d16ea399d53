// MatMul: numpy matmul semantics resolved into one 2-D GEMM microkernel call
// per broadcast batch index.
#include <memory>

#include "kernels/matmul/gemm_ref.h"
#include "kernels/matmul/matmul_geometry.h"
#include "kernels/matmul/matmul_ops.h"

namespace ember::kernels {
namespace {

template <typename T>
void matmul_batched(const MatMulGeometry& g, const T* a, const T* b, T* c) {
  GemmParams p;
  p.m = g.m;
  p.n = g.n;
  p.k = g.k;
  p.lda = g.k;
  p.ldb = g.n;
  p.ldc = g.n;
  const int64_t batches = shape_numel(g.batch);
  if (shape_numel(g.b_batch) == 1 && shape_numel(g.a_batch) == batches) {
    // One B for every batch and A's batches contiguous: a single tall product.
    p.m = g.m * batches;
    gemm<T>(p, a, b, c);
    return;
  }
  const int64_t a_size = g.m * g.k, b_size = g.k * g.n, c_size = g.m * g.n;
  for_each_batch(g, [&](int64_t ai, int64_t bi, int64_t ci) {
    gemm<T>(p, a + ai * a_size, b + bi * b_size, c + ci * c_size);
  });
}

class MatMulKernel final : public OpKernel {
 public:
  explicit MatMulKernel(DType dtype) : dtype_(dtype) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(MatMulGeometry g, matmul_geometry(ctx.input(0).shape(), ctx.input(1).shape()));
    ctx.set_output(0, dtype_, std::move(g.out_shape));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(MatMulGeometry g, matmul_geometry(ctx.input(0).shape(), ctx.input(1).shape()));
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    Tensor& y = ctx.output(0);
    EMBER_SWITCH_NUMERIC(dtype_, T, matmul_batched<T>(g, a.data_as<T>(), b.data_as<T>(), y.data_as<T>()),
                         return internal_error("MatMul: unexpected dtype {}", dtype_name(dtype_)));
    return Status::ok();
  }

 private:
  DType dtype_;
};

}  // namespace

Result<std::unique_ptr<OpKernel>> create_matmul(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 2));
  const DType a = init.input_dtypes[0], b = init.input_dtypes[1];
  if (a != b) return invalid_argument("A is {} but B is {}", dtype_name(a), dtype_name(b));
  if (a == DType::kF16 || a == DType::kBF16) return create_matmul_lowp(init);
  if (!dtype_is_float(a) && !dtype_is_int(a)) return not_implemented("dtype {} is not supported", dtype_name(a));
  return std::unique_ptr<OpKernel>(std::make_unique<MatMulKernel>(a));
}

}  // namespace ember::kernels
