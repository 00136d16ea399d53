// MatMul and MatMulInteger: numpy matmul semantics resolved into one 2-D GEMM
// microkernel call per broadcast batch index.
#include <memory>

#include "kernels/common/shape_util.h"
#include "kernels/matmul/gemm_ref.h"
#include "kernels/matmul/matmul_ops.h"

namespace ember::kernels {
namespace {

// The numpy matmul view of two operand shapes. A 1-D A is read as [1,K] and a
// 1-D B as [K,1]; the added dim is absent from out_shape.
struct MatMulGeometry {
  int64_t m = 1, n = 1, k = 1;
  Shape a_batch, b_batch, batch;
  Shape out_shape;
};

Result<MatMulGeometry> matmul_geometry(const Shape& a, const Shape& b) {
  if (a.empty() || b.empty()) {
    return invalid_argument("inputs must have rank >= 1, got A {} and B {}", shape_to_string(a), shape_to_string(b));
  }
  MatMulGeometry g;
  const size_t ra = a.size(), rb = b.size();
  g.m = ra >= 2 ? a[ra - 2] : 1;
  g.k = a[ra - 1];
  const int64_t b_k = rb >= 2 ? b[rb - 2] : b[0];
  g.n = rb >= 2 ? b[rb - 1] : 1;
  if (g.k != b_k) {
    return invalid_argument("inner dimensions differ: A {} has K={} but B {} has K={}", shape_to_string(a), g.k,
                            shape_to_string(b), b_k);
  }
  if (ra > 2) g.a_batch.assign(a.begin(), a.end() - 2);
  if (rb > 2) g.b_batch.assign(b.begin(), b.end() - 2);
  auto batch = broadcast_shapes(g.a_batch, g.b_batch);
  if (!batch.is_ok()) {
    return invalid_argument("batch dimensions of A {} and B {} do not broadcast", shape_to_string(a), shape_to_string(b));
  }
  g.batch = std::move(batch).value();
  g.out_shape = g.batch;
  if (ra >= 2) g.out_shape.push_back(g.m);
  if (rb >= 2) g.out_shape.push_back(g.n);
  return g;
}

// Calls fn(a_matrix, b_matrix, c_matrix) with the matrix indices of every batch
// index of the output, in order; an odometer keeps it free of divisions.
template <typename Fn>
void for_each_batch(const MatMulGeometry& g, Fn&& fn) {
  const int64_t count = shape_numel(g.batch);
  const Shape a_strides = broadcast_strides(g.a_batch, g.batch);
  const Shape b_strides = broadcast_strides(g.b_batch, g.batch);
  Shape index(g.batch.size(), 0);
  int64_t a_off = 0, b_off = 0;
  for (int64_t t = 0; t < count; ++t) {
    fn(a_off, b_off, t);
    for (size_t d = index.size(); d-- > 0;) {
      a_off += a_strides[d];
      b_off += b_strides[d];
      if (++index[d] < g.batch[d]) break;
      a_off -= a_strides[d] * g.batch[d];
      b_off -= b_strides[d] * g.batch[d];
      index[d] = 0;
    }
  }
}

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

class MatMulIntegerKernel final : public OpKernel {
 public:
  MatMulIntegerKernel(DType a_type, DType b_type) : a_type_(a_type), b_type_(b_type) {}

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
    const bool a_u8 = a_type_ == DType::kU8, b_u8 = b_type_ == DType::kU8;
    if (a_u8 && b_u8) matmul_integer_batched<uint8_t, uint8_t>(g, a, a_zp, b, b_zp, y);
    if (a_u8 && !b_u8) matmul_integer_batched<uint8_t, int8_t>(g, a, a_zp, b, b_zp, y);
    if (!a_u8 && b_u8) matmul_integer_batched<int8_t, uint8_t>(g, a, a_zp, b, b_zp, y);
    if (!a_u8 && !b_u8) matmul_integer_batched<int8_t, int8_t>(g, a, a_zp, b, b_zp, y);
    return Status::ok();
  }

 private:
  DType a_type_, b_type_;
};

}  // namespace

Status require_inputs(const KernelInit& init, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (i >= init.input_dtypes.size() || init.input_dtypes[i] == DType::kUndefined) {
      return invalid_model("input {} is required", i);
    }
  }
  return Status::ok();
}


Result<std::unique_ptr<OpKernel>> create_matmul(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 2));
  const DType a = init.input_dtypes[0], b = init.input_dtypes[1];
  if (a != b) return invalid_argument("A is {} but B is {}", dtype_name(a), dtype_name(b));
  if (!dtype_is_float(a) && !dtype_is_int(a)) return not_implemented("dtype {} is not supported", dtype_name(a));
  return std::unique_ptr<OpKernel>(std::make_unique<MatMulKernel>(a));
}

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
  return std::unique_ptr<OpKernel>(std::make_unique<MatMulIntegerKernel>(a, b));
}

}  // namespace ember::kernels
