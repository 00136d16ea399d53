// f16 (vcvtph2ps) and bf16 (shift / mask widening) GEMM into f32 FMA, 16
// columns per zmm. A block of MR rows x NP panels keeps MR * NP accumulators
// in registers over all of K; A is widened to f32 in chunks on the stack.
#include <immintrin.h>

#include <cstdint>

#include "kernels/matmul/gemm_lowp.h"

// GCC 12 warns falsely about the _mm512_undefined_* idiom inside srli and
// cvtps_ph (as in elementwise/simd_f32_avx512.inc).
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace ember::kernels {
namespace {

// k-steps of A widened per chunk: MR x 256 floats = 4 KiB of stack at MR = 4.
constexpr int64_t kKChunk = 256;
// Rows per register block for M > 1; 4 rows x 4 panels = 16 accumulators.
constexpr int kMaxRows = 4;
constexpr int kMaxPanelsBlocked = 4;
// At M = 1 eight accumulators cover the FMA latency while B streams.
constexpr int kMaxPanelsRow = 8;

#include "kernels/matmul/gemm_lowp_avx512.inc"

void widen_f16(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = col_mask(n - i);
    _mm512_storeu_ps(y + i, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, x + i)));
  }
}

void widen_bf16(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = col_mask(n - i);
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, x + i));
    _mm512_storeu_si512(y + i, _mm512_slli_epi32(w, 16));
  }
}

void store_f16(uint16_t* c, __m512 v, int64_t cols) {
  _mm256_mask_storeu_epi16(c, col_mask(cols), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

// C[MR rows, cols] of the NP panels at `panels`; the k order of every output is
// the same for any MR and NP, so blocking never changes a result.
template <bool kBf16, int MR, int NP>
void block(const LowpGemmArgs& g, const uint16_t* a, const uint16_t* panels, uint16_t* c, int64_t cols) {
  __m512 acc[MR][NP];
#pragma GCC unroll 32
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 32
    for (int p = 0; p < NP; ++p) acc[r][p] = _mm512_setzero_ps();
  }
  // One spare float so an odd bf16 chunk ends in a zero padding step.
  alignas(64) float af[MR][kKChunk + 16];
  for (int64_t k0 = 0; k0 < g.k; k0 += kKChunk) {
    const int64_t kc = min64(kKChunk, g.k - k0);
    for (int r = 0; r < MR; ++r) {
      if (kBf16) {
        widen_bf16(a + r * g.lda + k0, af[r], kc);
        af[r][kc] = 0.0f;
      } else {
        widen_f16(a + r * g.lda + k0, af[r], kc);
      }
    }
    if (kBf16) {
      const uint16_t* bq = panels + k0 * kLowpPanelCols;
      const __m512i high = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
      for (int64_t kk = 0; kk < kc; kk += 2, bq += 2 * kLowpPanelCols) {
        __m512 even[NP], odd[NP];
#pragma GCC unroll 32
        for (int p = 0; p < NP; ++p) {
          const __m512i w = _mm512_loadu_si512(bq + p * g.panel_stride);
          even[p] = _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
          odd[p] = _mm512_castsi512_ps(_mm512_and_si512(w, high));
        }
#pragma GCC unroll 32
        for (int r = 0; r < MR; ++r) {
          const __m512 a0 = _mm512_set1_ps(af[r][kk]);
          const __m512 a1 = _mm512_set1_ps(af[r][kk + 1]);
#pragma GCC unroll 32
          for (int p = 0; p < NP; ++p) {
            acc[r][p] = _mm512_fmadd_ps(a0, even[p], acc[r][p]);
            acc[r][p] = _mm512_fmadd_ps(a1, odd[p], acc[r][p]);
          }
        }
      }
    } else {
      const uint16_t* bk = panels + k0 * kLowpPanelCols;
      for (int64_t kk = 0; kk < kc; ++kk, bk += kLowpPanelCols) {
        __m512 b[NP];
#pragma GCC unroll 32
        for (int p = 0; p < NP; ++p) {
          b[p] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(bk + p * g.panel_stride)));
        }
#pragma GCC unroll 32
        for (int r = 0; r < MR; ++r) {
          const __m512 av = _mm512_set1_ps(af[r][kk]);
#pragma GCC unroll 32
          for (int p = 0; p < NP; ++p) acc[r][p] = _mm512_fmadd_ps(av, b[p], acc[r][p]);
        }
      }
    }
  }
#pragma GCC unroll 32
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 32
    for (int p = 0; p < NP; ++p) {
      if (p * 16 >= cols) break;
      if (kBf16) {
        store_bf16(c + r * g.ldc + p * 16, acc[r][p], cols - p * 16);
      } else {
        store_f16(c + r * g.ldc + p * 16, acc[r][p], cols - p * 16);
      }
    }
  }
}

// Panels per block: up to 8 for a single row, up to 4 when register-blocked.
template <bool kBf16, int MR>
void rows_block(const LowpGemmArgs& g, const uint16_t* a, const uint16_t* panels, uint16_t* c, int64_t cols) {
  const int64_t np = (cols + 15) / 16;
  if constexpr (MR == 1) {
    switch (np) {
      case 5: return block<kBf16, MR, 5>(g, a, panels, c, cols);
      case 6: return block<kBf16, MR, 6>(g, a, panels, c, cols);
      case 7: return block<kBf16, MR, 7>(g, a, panels, c, cols);
      case 8: return block<kBf16, MR, 8>(g, a, panels, c, cols);
      default: break;
    }
  }
  switch (np) {
    case 1: return block<kBf16, MR, 1>(g, a, panels, c, cols);
    case 2: return block<kBf16, MR, 2>(g, a, panels, c, cols);
    case 3: return block<kBf16, MR, 3>(g, a, panels, c, cols);
    default: return block<kBf16, MR, 4>(g, a, panels, c, cols);
  }
}

template <bool kBf16>
void gemm(const LowpGemmArgs& g) {
  const int64_t group = 16 * (g.m == 1 ? kMaxPanelsRow : kMaxPanelsBlocked);
  for (int64_t j0 = 0; j0 < g.n; j0 += group) {
    const int64_t cols = min64(group, g.n - j0);
    const uint16_t* panels = g.panels + (j0 / 16) * g.panel_stride;
    int64_t i = 0;
    for (; i + kMaxRows <= g.m; i += kMaxRows) {
      rows_block<kBf16, kMaxRows>(g, g.a + i * g.lda, panels, g.c + i * g.ldc + j0, cols);
    }
    const uint16_t* a = g.a + i * g.lda;
    uint16_t* c = g.c + i * g.ldc + j0;
    switch (g.m - i) {
      case 3: rows_block<kBf16, 3>(g, a, panels, c, cols); break;
      case 2: rows_block<kBf16, 2>(g, a, panels, c, cols); break;
      case 1: rows_block<kBf16, 1>(g, a, panels, c, cols); break;
      default: break;
    }
  }
}

void f16_gemm_avx512(const LowpGemmArgs& g) { gemm<false>(g); }
void bf16_gemm_avx512(const LowpGemmArgs& g) { gemm<true>(g); }

}  // namespace

void fill_gemm_lowp_avx512(GemmLowpTable& t) {
  t.f16_gemm = f16_gemm_avx512;
  t.bf16_gemm = bf16_gemm_avx512;
}

}  // namespace ember::kernels
