#pragma once
// Reference GEMM microkernels: plain loops over row-major pointers and leading
// dimensions with BLAS conventions. Optimized microkernels replace these behind
// the same signatures; the op objects only ever call through gemm<T>().
#include <cstdint>
#include <type_traits>

#include "base/dtype.h"

namespace ember::kernels {

struct GemmParams {
  bool trans_a = false;  // A is stored K x M
  bool trans_b = false;  // B is stored N x K
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  float alpha = 1.0f;
  // 0 makes C write-only: its previous contents (possibly NaN) are never read.
  float beta = 0.0f;
};

// C = alpha * op(A) * op(B) + beta * C in f32 with f32 accumulation. Without
// trans_b the loop order is i-k-j so the inner loop streams rows of B and C.
void gemm_f32_ref(const GemmParams& p, const float* a, const float* b, float* c);

// Integer GEMM accumulates modulo 2^64 and truncates to T (the wrap-around two's
// complement hardware gives) instead of risking undefined signed overflow.
template <typename T>
struct GemmAccumulator {
  using type = std::conditional_t<std::is_integral_v<T>, uint64_t, compute_t<T>>;
};

// The same contract as gemm_f32_ref for every other numeric type: dot-product
// order with an accumulator of compute_t<T> (f16/bf16 sum in f32).
template <typename T>
void gemm_ref(const GemmParams& p, const T* a, const T* b, T* c) {
  using Acc = typename GemmAccumulator<T>::type;
  using Scale = std::conditional_t<std::is_same_v<T, double>, double, std::conditional_t<std::is_integral_v<T>, double, float>>;
  const bool plain = p.alpha == 1.0f && p.beta == 0.0f;
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n; ++j) {
      Acc acc = Acc(0);
      for (int64_t kk = 0; kk < p.k; ++kk) {
        T av = p.trans_a ? a[kk * p.lda + i] : a[i * p.lda + kk];
        T bv = p.trans_b ? b[j * p.ldb + kk] : b[kk * p.ldb + j];
        acc += static_cast<Acc>(av) * static_cast<Acc>(bv);
      }
      T& out = c[i * p.ldc + j];
      if (plain) {
        out = static_cast<T>(acc);
        continue;
      }
      // For integers, read the wrapped sum back as T before scaling.
      Scale value = static_cast<Scale>(p.alpha) * static_cast<Scale>(static_cast<compute_t<T>>(static_cast<T>(acc)));
      if (p.beta != 0.0f) value += static_cast<Scale>(p.beta) * static_cast<Scale>(static_cast<compute_t<T>>(out));
      out = static_cast<T>(value);
    }
  }
}

// The single dispatch point from op objects to a GEMM microkernel.
template <typename T>
void gemm(const GemmParams& p, const T* a, const T* b, T* c) {
  if constexpr (std::is_same_v<T, float>) {
    gemm_f32_ref(p, a, b, c);
  } else {
    gemm_ref<T>(p, a, b, c);
  }
}

}  // namespace ember::kernels
