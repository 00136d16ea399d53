// f16 (F16C) and bf16 (shift / mask widening) GEMM into f32 FMA, a 16-column
// panel as two ymm. Blocks of MR rows x NP panels keep 2 * MR * NP accumulators
// in the 16 ymm registers over all of K; A is widened to f32 in chunks.
#include <immintrin.h>

#include <cstdint>

#include "kernels/matmul/gemm_lowp.h"

namespace ember::kernels {
namespace {

constexpr int64_t kKChunk = 256;
// M > 1: 4 rows x 1 panel = 8 accumulators; M = 1: 4 panels, 8 accumulators.
constexpr int kMaxRows = 4;
constexpr int kMaxPanelsRow = 4;

int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

// x[0, n) widened to f32; the partial last 8 go through a zeroed copy.
template <bool kBf16>
void widen(const uint16_t* x, float* y, int64_t n) {
  auto widen8 = [](__m128i h) {
    if (kBf16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    return _mm256_cvtph_ps(h);
  };
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, widen8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
  if (i < n) {
    uint16_t tail[8] = {};
    __builtin_memcpy(tail, x + i, static_cast<size_t>(n - i) * 2);
    _mm256_storeu_ps(y + i, widen8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(tail))));
  }
}

__m128i round_f16(__m256 v) { return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }

// Round to nearest even in the high half; a NaN keeps its payload, made quiet.
__m128i round_bf16(__m256 v) {
  const __m256i u = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb);
  const __m256i is_nan =
      _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
  const __m256i quiet = _mm256_or_si256(u, _mm256_set1_epi32(0x00400000));
  const __m256i high = _mm256_srli_epi32(_mm256_blendv_epi8(rounded, quiet, is_nan), 16);
  return _mm_packus_epi32(_mm256_castsi256_si128(high), _mm256_extracti128_si256(high, 1));
}

template <bool kBf16>
void store8(uint16_t* c, __m256 v, int64_t cols) {
  const __m128i h = kBf16 ? round_bf16(v) : round_f16(v);
  if (cols >= 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(c), h);
    return;
  }
  uint16_t tail[8];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(tail), h);
  __builtin_memcpy(c, tail, static_cast<size_t>(cols) * 2);
}

// C[MR rows, cols] of the NP panels at `panels`, k in order for every output.
template <bool kBf16, int MR, int NP>
void block(const LowpGemmArgs& g, const uint16_t* a, const uint16_t* panels, uint16_t* c, int64_t cols) {
  __m256 acc[MR][2 * NP];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 16
    for (int h = 0; h < 2 * NP; ++h) acc[r][h] = _mm256_setzero_ps();
  }
  // Spare floats so an odd bf16 chunk ends in a zero padding step.
  alignas(32) float af[MR][kKChunk + 8];
  for (int64_t k0 = 0; k0 < g.k; k0 += kKChunk) {
    const int64_t kc = min64(kKChunk, g.k - k0);
    for (int r = 0; r < MR; ++r) {
      widen<kBf16>(a + r * g.lda + k0, af[r], kc);
      af[r][kc] = 0.0f;
    }
    if (kBf16) {
      const uint16_t* bq = panels + k0 * kLowpPanelCols;
      const __m256i high = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
      for (int64_t kk = 0; kk < kc; kk += 2, bq += 2 * kLowpPanelCols) {
        __m256 even[2 * NP], odd[2 * NP];
#pragma GCC unroll 16
        for (int h = 0; h < 2 * NP; ++h) {
          const uint16_t* src = bq + (h / 2) * g.panel_stride + (h % 2) * 16;
          const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
          even[h] = _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
          odd[h] = _mm256_castsi256_ps(_mm256_and_si256(w, high));
        }
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) {
          const __m256 a0 = _mm256_broadcast_ss(&af[r][kk]);
          const __m256 a1 = _mm256_broadcast_ss(&af[r][kk + 1]);
#pragma GCC unroll 16
          for (int h = 0; h < 2 * NP; ++h) {
            acc[r][h] = _mm256_fmadd_ps(a0, even[h], acc[r][h]);
            acc[r][h] = _mm256_fmadd_ps(a1, odd[h], acc[r][h]);
          }
        }
      }
    } else {
      const uint16_t* bk = panels + k0 * kLowpPanelCols;
      for (int64_t kk = 0; kk < kc; ++kk, bk += kLowpPanelCols) {
        __m256 b[2 * NP];
#pragma GCC unroll 16
        for (int h = 0; h < 2 * NP; ++h) {
          const uint16_t* src = bk + (h / 2) * g.panel_stride + (h % 2) * 8;
          b[h] = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src)));
        }
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) {
          const __m256 av = _mm256_broadcast_ss(&af[r][kk]);
#pragma GCC unroll 16
          for (int h = 0; h < 2 * NP; ++h) acc[r][h] = _mm256_fmadd_ps(av, b[h], acc[r][h]);
        }
      }
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 16
    for (int h = 0; h < 2 * NP; ++h) {
      if (h * 8 >= cols) break;
      store8<kBf16>(c + r * g.ldc + h * 8, acc[r][h], cols - h * 8);
    }
  }
}

template <bool kBf16, int MR>
void rows_block(const LowpGemmArgs& g, const uint16_t* a, const uint16_t* panels, uint16_t* c, int64_t cols) {
  if constexpr (MR == 1) {
    switch ((cols + 15) / 16) {
      case 2: return block<kBf16, 1, 2>(g, a, panels, c, cols);
      case 3: return block<kBf16, 1, 3>(g, a, panels, c, cols);
      case 4: return block<kBf16, 1, 4>(g, a, panels, c, cols);
      default: break;
    }
  }
  block<kBf16, MR, 1>(g, a, panels, c, cols);
}

template <bool kBf16>
void gemm(const LowpGemmArgs& g) {
  const int64_t group = 16 * (g.m == 1 ? kMaxPanelsRow : 1);
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

void f16_gemm_avx2(const LowpGemmArgs& g) { gemm<false>(g); }
void bf16_gemm_avx2(const LowpGemmArgs& g) { gemm<true>(g); }

}  // namespace

void fill_gemm_lowp_avx2(GemmLowpTable& t) {
  t.f16_gemm = f16_gemm_avx2;
  t.bf16_gemm = bf16_gemm_avx2;
}

}  // namespace ember::kernels
