#pragma once
// Reference integer GEMM: the exact contract every integer microkernel meets.
#include <cstdint>

namespace ember::kernels {

// C[i,j] = sum_k (A[i,k] - a_zp[i]) * (B[k,j] - b_zp[j]) exactly in int32. Zero
// points are read with a stride: 0 for a per-tensor value, 1 per row/column.
struct IntegerGemmParams {
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t a_zp_stride = 0, b_zp_stride = 0;
};

template <typename TA, typename TB>
void gemm_integer_ref(const IntegerGemmParams& p, const TA* a, const TA* a_zp, const TB* b, const TB* b_zp,
                      int32_t* c) {
  for (int64_t i = 0; i < p.m; ++i) {
    int32_t* crow = c + i * p.ldc;
    for (int64_t j = 0; j < p.n; ++j) crow[j] = 0;
    const int32_t za = a_zp ? static_cast<int32_t>(a_zp[i * p.a_zp_stride]) : 0;
    for (int64_t kk = 0; kk < p.k; ++kk) {
      const int32_t av = static_cast<int32_t>(a[i * p.lda + kk]) - za;
      const TB* brow = b + kk * p.ldb;
      for (int64_t j = 0; j < p.n; ++j) {
        const int32_t zb = b_zp ? static_cast<int32_t>(b_zp[j * p.b_zp_stride]) : 0;
        // Summed modulo 2^32 (unsigned: no signed-overflow UB), as the SIMD kernels wrap.
        crow[j] = static_cast<int32_t>(static_cast<uint32_t>(crow[j]) +
                                       static_cast<uint32_t>(av * (static_cast<int32_t>(brow[j]) - zb)));
      }
    }
  }
}

}  // namespace ember::kernels
