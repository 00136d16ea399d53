// AVX2 integer GEMM without VNNI: both operands widened to int16 and multiplied
// by vpmaddwd, which sums two products exactly in int32. (vpmaddubsw would
// saturate: 2 * 255 * 127 > 32767.) A 16-byte quarter of a packed k-group is
// 4 columns x 4 k-steps; vpmaddwd leaves two partial sums per column, folded
// by vphaddd after the K loop.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/quant/qgemm.h"

namespace ember::kernels::quant {
namespace {

constexpr int kMaxRows = 2;

// The four bytes of row `ap` at k-group g as int16 k0 k1 k2 k3, repeated.
__m256i load_a(const uint8_t* ap, int64_t bytes, uint32_t xor4) {
  uint32_t v = 0;
  memcpy(&v, ap, static_cast<size_t>(bytes >= 4 ? 4 : bytes));
  // Bytes past K stay zero after the xor too: they meet B's zero padding rows.
  const uint32_t mask = bytes >= 4 ? 0xFFFFFFFFu : (1u << (8 * bytes)) - 1u;
  const __m128i w = _mm_cvtepu8_epi16(_mm_cvtsi32_si128(static_cast<int>((v ^ xor4) & mask)));
  return _mm256_broadcastq_epi64(w);
}

// Eight columns from two accumulators of four columns x two partial sums.
__m256i fold(__m256i lo4, __m256i hi4) {
  return _mm256_permute4x64_epi64(_mm256_hadd_epi32(lo4, hi4), 0xD8);
}

void store8(const QGemmCall& c, int64_t row, int64_t col, __m256i acc) {
  if (col >= c.n) return;
  const __m256i zb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c.col_zp + col));
  const __m256i term = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c.col_term + col));
  __m256i v = _mm256_add_epi32(acc, _mm256_mullo_epi32(_mm256_set1_epi32(c.row_zp[row]), term));
  v = _mm256_sub_epi32(v, _mm256_mullo_epi32(_mm256_set1_epi32(c.row_sum[row]), zb));
  if (!c.c) {
    const __m256 lo = _mm256_set1_ps(static_cast<float>((c.y_signed ? -128 : 0) - c.y_zp));
    const __m256 hi = _mm256_set1_ps(static_cast<float>((c.y_signed ? 127 : 255) - c.y_zp));
    __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(v), _mm256_loadu_ps(c.mult + col));
    f = _mm256_min_ps(_mm256_max_ps(f, lo), hi);
    v = _mm256_add_epi32(_mm256_cvtps_epi32(f), _mm256_set1_epi32(c.y_zp));
  }
  alignas(32) int32_t out[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(out), v);
  const int64_t valid = c.n - col < 8 ? c.n - col : 8;
  if (c.c) {
    memcpy(c.c + row * c.ldc + col, out, static_cast<size_t>(valid) * sizeof(int32_t));
  } else {
    uint8_t* q = c.q + row * c.ldc + col;
    for (int64_t j = 0; j < valid; ++j) q[j] = static_cast<uint8_t>(out[j]);
  }
}

template <int R>
void tile(const QGemmCall& c, int64_t row0, int64_t panel) {
  __m256i acc[R][4];
  for (int r = 0; r < R; ++r) {
    for (int q = 0; q < 4; ++q) acc[r][q] = _mm256_setzero_si256();
  }
  const uint32_t xor4 = c.a_xor * 0x01010101u;
  const int8_t* b = c.panels + panel * c.panel_stride;
  const int64_t groups = (c.k + 3) / 4;
  for (int64_t g = 0; g < groups; ++g) {
    __m256i bv[4];
    for (int q = 0; q < 4; ++q) {
      bv[q] = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + g * 64 + q * 16)));
    }
    for (int r = 0; r < R; ++r) {
      const __m256i av = load_a(c.a + (row0 + r) * c.lda + g * 4, c.k - g * 4, xor4);
      for (int q = 0; q < 4; ++q) acc[r][q] = _mm256_add_epi32(acc[r][q], _mm256_madd_epi16(av, bv[q]));
    }
  }
  const int64_t col = panel * kQGemmPanelCols;
  for (int r = 0; r < R; ++r) {
    store8(c, row0 + r, col, fold(acc[r][0], acc[r][1]));
    store8(c, row0 + r, col + 8, fold(acc[r][2], acc[r][3]));
  }
}

void u8s8_gemm_avx2_2x16(const QGemmCall& c) {
  for (int64_t p = 0; p < c.num_panels; ++p) {
    int64_t i = 0;
    for (; i + kMaxRows <= c.m; i += kMaxRows) tile<kMaxRows>(c, i, p);
    if (i < c.m) tile<1>(c, i, p);
  }
}

int32_t u8_row_sum_avx2(const uint8_t* a, int64_t k, uint8_t a_xor) {
  const __m256i x = _mm256_set1_epi8(static_cast<char>(a_xor));
  __m256i sum = _mm256_setzero_si256();
  int64_t i = 0;
  for (; i + 32 <= k; i += 32) {
    const __m256i v = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i)), x);
    sum = _mm256_add_epi64(sum, _mm256_sad_epu8(v, _mm256_setzero_si256()));
  }
  alignas(32) int64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), sum);
  int64_t total = lanes[0] + lanes[1] + lanes[2] + lanes[3];
  for (; i < k; ++i) total += a[i] ^ a_xor;
  return static_cast<int32_t>(total);
}

}  // namespace

void fill_qgemm_avx2(QGemmTable& t) {
  t.gemm = u8s8_gemm_avx2_2x16;
  t.row_sum = u8_row_sum_avx2;
}

}  // namespace ember::kernels::quant
