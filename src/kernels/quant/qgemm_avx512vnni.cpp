// AVX-512 VNNI integer GEMM: vpdpbusd sums four u8 x s8 products per int32
// lane without saturation (|4 * 255 * 128| < 2^31; the accumulator wraps like
// the reference), 16 columns of a packed panel per zmm.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/quant/qgemm.h"

namespace ember::kernels::quant {
namespace {

constexpr int kMaxRows = 4;
constexpr int kMaxPanels = 4;

uint32_t load_group(const uint8_t* p, int64_t bytes, uint32_t xor4) {
  uint32_t v = 0;
  memcpy(&v, p, static_cast<size_t>(bytes));
  // Bytes past K stay zero after the xor too: they meet B's zero padding rows.
  const uint32_t mask = bytes >= 4 ? 0xFFFFFFFFu : (1u << (8 * bytes)) - 1u;
  return (v ^ xor4) & mask;
}

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

// R rows by P panels of accumulators, over the whole of K.
template <int R, int P>
void tile(const QGemmCall& c, int64_t row0, int64_t panel0) {
  __m512i acc[R][P];
  for (int r = 0; r < R; ++r) {
    for (int p = 0; p < P; ++p) acc[r][p] = _mm512_setzero_si512();
  }
  const uint32_t xor4 = c.a_xor * 0x01010101u;
  const uint8_t* a = c.a + row0 * c.lda;
  const int8_t* b = c.panels + panel0 * c.panel_stride;
  const int64_t groups = (c.k + 3) / 4;
  const int64_t full = c.k / 4;
  for (int64_t g = 0; g < groups; ++g) {
    __m512i bv[P];
    for (int p = 0; p < P; ++p) bv[p] = _mm512_loadu_si512(b + p * c.panel_stride + g * 64);
    for (int r = 0; r < R; ++r) {
      const uint8_t* ap = a + r * c.lda + g * 4;
      uint32_t word;
      if (g < full) {
        memcpy(&word, ap, 4);
        word ^= xor4;
      } else {
        word = load_group(ap, c.k - g * 4, xor4);
      }
      const __m512i av = _mm512_set1_epi32(static_cast<int32_t>(word));
      for (int p = 0; p < P; ++p) acc[r][p] = _mm512_dpbusd_epi32(acc[r][p], av, bv[p]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int p = 0; p < P; ++p) store_row(c, row0 + r, panel0 + p, acc[r][p]);
  }
}

template <int R>
void row_block(const QGemmCall& c, int64_t row0) {
  int64_t p = 0;
  for (; p + kMaxPanels <= c.num_panels; p += kMaxPanels) tile<R, kMaxPanels>(c, row0, p);
  switch (c.num_panels - p) {
    case 3: tile<R, 3>(c, row0, p); break;
    case 2: tile<R, 2>(c, row0, p); break;
    case 1: tile<R, 1>(c, row0, p); break;
    default: break;
  }
}

void u8s8_gemm_avx512vnni_4x64(const QGemmCall& c) {
  int64_t i = 0;
  for (; i + kMaxRows <= c.m; i += kMaxRows) row_block<kMaxRows>(c, i);
  switch (c.m - i) {
    case 3: row_block<3>(c, i); break;
    case 2: row_block<2>(c, i); break;
    case 1: row_block<1>(c, i); break;
    default: break;
  }
}

int32_t u8_row_sum_avx512(const uint8_t* a, int64_t k, uint8_t a_xor) {
  const __m512i x = _mm512_set1_epi8(static_cast<char>(a_xor));
  __m512i sum = _mm512_setzero_si512();
  int64_t i = 0;
  for (; i + 64 <= k; i += 64) {
    const __m512i v = _mm512_xor_si512(_mm512_loadu_si512(a + i), x);
    sum = _mm512_add_epi64(sum, _mm512_sad_epu8(v, _mm512_setzero_si512()));
  }
  int64_t total = _mm512_reduce_add_epi64(sum);
  for (; i < k; ++i) total += a[i] ^ a_xor;
  return static_cast<int32_t>(total);
}

}  // namespace

void fill_qgemm_avx512vnni(QGemmTable& t) {
  t.gemm = u8s8_gemm_avx512vnni_4x64;
  t.row_sum = u8_row_sum_avx512;
}

}  // namespace ember::kernels::quant
