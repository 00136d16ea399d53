#include "kernels/matmul/gemm_ref.h"

namespace ember::kernels {

void gemm_f32_ref(const GemmParams& p, const float* a, const float* b, float* c) {
  for (int64_t i = 0; i < p.m; ++i) {
    float* crow = c + i * p.ldc;
    if (p.beta == 0.0f) {
      for (int64_t j = 0; j < p.n; ++j) crow[j] = 0.0f;
    } else if (p.beta != 1.0f) {
      for (int64_t j = 0; j < p.n; ++j) crow[j] *= p.beta;
    }
    if (!p.trans_b) {
      for (int64_t kk = 0; kk < p.k; ++kk) {
        const float av = p.alpha * (p.trans_a ? a[kk * p.lda + i] : a[i * p.lda + kk]);
        const float* brow = b + kk * p.ldb;
        for (int64_t j = 0; j < p.n; ++j) crow[j] += av * brow[j];
      }
      continue;
    }
    // B^T: rows of B are the dot-product operands, contiguous in k.
    for (int64_t j = 0; j < p.n; ++j) {
      const float* brow = b + j * p.ldb;
      float acc = 0.0f;
      for (int64_t kk = 0; kk < p.k; ++kk) acc += (p.trans_a ? a[kk * p.lda + i] : a[i * p.lda + kk]) * brow[kk];
      crow[j] += p.alpha * acc;
    }
  }
}

}  // namespace ember::kernels
