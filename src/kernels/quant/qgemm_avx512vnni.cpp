// AVX-512 VNNI integer GEMM: vpdpbusd sums four u8 x s8 products per int32
// lane without saturation (|4 * 255 * 128| < 2^31; the accumulator wraps like
// the reference), 16 columns of a packed panel per zmm.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/quant/qgemm.h"

namespace ember::kernels::quant {
namespace {

// A 4 x 4 tile: 16 accumulators, 4 B panels and an A broadcast of the 32 zmm.
// At M = 128, K = 2048, N = 8192 it runs at ~200 GMAC/s on one core, about 90%
// of the 233 GMAC/s a register-only vpdpbusd loop reaches here; 6 rows were no
// faster (CPU time of a scratch loop over run_qgemm).
constexpr int kMaxRows = 4;
constexpr int kMaxPanels = 4;

void store_row(const QGemmCall& c, int64_t row, int64_t panel, __m512i acc) {
  const int64_t col = panel * kQGemmPanelCols;
  const int64_t valid = c.n - col < kQGemmPanelCols ? c.n - col : kQGemmPanelCols;
  const __mmask16 mask = static_cast<__mmask16>(valid >= 16 ? 0xFFFF : (1u << valid) - 1u);
  const __m512i zb = _mm512_loadu_si512(c.col_zp + col);
  const __m512i term = _mm512_loadu_si512(c.col_term + col);
  __m512i v = _mm512_add_epi32(acc, _mm512_mullo_epi32(_mm512_set1_epi32(c.row_zp[row]), term));
  v = _mm512_sub_epi32(v, _mm512_mullo_epi32(_mm512_set1_epi32(c.row_sum[row]), zb));
  if (c.c) {
    _mm512_mask_storeu_epi32(c.c + row * c.ldc + col, mask, v);
    return;
  }
  const __m512 lo = _mm512_set1_ps(static_cast<float>((c.y_signed ? -128 : 0) - c.y_zp));
  const __m512 hi = _mm512_set1_ps(static_cast<float>((c.y_signed ? 127 : 255) - c.y_zp));
  __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(v), _mm512_loadu_ps(c.mult + col));
  f = _mm512_min_ps(_mm512_max_ps(f, lo), hi);
  const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(f), _mm512_set1_epi32(c.y_zp));
  _mm512_mask_cvtepi32_storeu_epi8(c.q + row * c.ldc + col, mask, q);
}

// One k-group of R rows by P panels: A's four bytes of row r broadcast straight
// from memory (flipped to u8 when A is s8), B's 64 bytes of each panel.
template <int R, int P, bool kFlip>
inline __attribute__((always_inline)) void step(__m512i (&acc)[R][P], const int8_t* b, int64_t stride,
                                                const uint8_t* a, int64_t lda) {
  __m512i bv[P];
#pragma GCC unroll 4
  for (int p = 0; p < P; ++p) bv[p] = _mm512_loadu_si512(b + p * stride);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    int32_t word;
    memcpy(&word, a + r * lda, 4);
    __m512i av = _mm512_set1_epi32(word);
    if (kFlip) av = _mm512_xor_si512(av, _mm512_set1_epi8(static_cast<char>(0x80)));
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) acc[r][p] = _mm512_dpbusd_epi32(acc[r][p], av, bv[p]);
  }
}

// R rows by P panels of accumulators, over the whole of K. The last partial
// k-group of A is copied to a zero-padded block (its padding meets B's zero
// padding rows).
template <int R, int P, bool kFlip>
void tile(const QGemmCall& c, int64_t row0, int64_t panel0) {
  __m512i acc[R][P];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) acc[r][p] = _mm512_setzero_si512();
  }
  const uint8_t* a = c.a + row0 * c.lda;
  const int8_t* b = c.panels + panel0 * c.panel_stride;
  const int64_t full = c.k / 4;
  for (int64_t g = 0; g < full; ++g) step<R, P, kFlip>(acc, b + g * 64, c.panel_stride, a + g * 4, c.lda);
  if (full * 4 < c.k) {
    uint8_t last[R][4];
    for (int r = 0; r < R; ++r) {
      for (int64_t t = 0; t < 4; ++t) last[r][t] = full * 4 + t < c.k ? a[r * c.lda + full * 4 + t] : 0;
    }
    step<R, P, kFlip>(acc, b + full * 64, c.panel_stride, &last[0][0], 4);
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) store_row(c, row0 + r, panel0 + p, acc[r][p]);
  }
}

template <int R, bool kFlip>
void row_block(const QGemmCall& c, int64_t row0) {
  int64_t p = 0;
  for (; p + kMaxPanels <= c.num_panels; p += kMaxPanels) tile<R, kMaxPanels, kFlip>(c, row0, p);
  switch (c.num_panels - p) {
    case 3: tile<R, 3, kFlip>(c, row0, p); break;
    case 2: tile<R, 2, kFlip>(c, row0, p); break;
    case 1: tile<R, 1, kFlip>(c, row0, p); break;
    default: break;
  }
}

// The m % kMaxRows rows left after the full row blocks.
template <int R, bool kFlip>
void row_tail(const QGemmCall& c, int64_t row0, int64_t rows) {
  if constexpr (R > 0) {
    if (rows == R) {
      row_block<R, kFlip>(c, row0);
    } else {
      row_tail<R - 1, kFlip>(c, row0, rows);
    }
  }
}

template <bool kFlip>
void gemm(const QGemmCall& c) {
  int64_t i = 0;
  for (; i + kMaxRows <= c.m; i += kMaxRows) row_block<kMaxRows, kFlip>(c, i);
  row_tail<kMaxRows - 1, kFlip>(c, i, c.m - i);
}

void u8s8_gemm_avx512vnni(const QGemmCall& c) {
  if (c.a_xor) {
    gemm<true>(c);
  } else {
    gemm<false>(c);
  }
}

}  // namespace

void fill_qgemm_avx512vnni(QGemmTable& t) {
  t.gemm = u8s8_gemm_avx512vnni;
}

}  // namespace ember::kernels::quant
