#pragma once
// The numpy matmul view of two operand shapes, shared by MatMul and the integer
// matmuls: [..., M, K] x [..., K, N] with broadcast batch dimensions.
#include <cstdint>

#include "base/status.h"
#include "base/tensor.h"
#include "kernels/common/shape_util.h"
#include "kernels/matmul/gemm_ref.h"

namespace ember::kernels {

// A 1-D A is read as [1,K] and a 1-D B as [K,1]; the added dim is absent from
// out_shape.
struct MatMulGeometry {
  int64_t m = 1, n = 1, k = 1;
  Shape a_batch, b_batch, batch;
  Shape out_shape;
};

Result<MatMulGeometry> matmul_geometry(const Shape& a, const Shape& b);

// One B for every batch and A's batches contiguous: the whole product is a
// single tall GEMM of batch * m rows.
inline bool is_tall(const MatMulGeometry& g) {
  return shape_numel(g.b_batch) == 1 && shape_numel(g.a_batch) == shape_numel(g.batch);
}

// One batch index of g as a 2-D GEMM over contiguous row-major matrices.
inline GemmParams matrix_params(const MatMulGeometry& g) {
  GemmParams p;
  p.m = g.m;
  p.n = g.n;
  p.k = g.k;
  p.lda = g.k;
  p.ldb = g.n;
  p.ldc = g.n;
  return p;
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

}  // namespace ember::kernels
