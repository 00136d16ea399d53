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

// Four bytes of A as int16 k0 k1 k2 k3, repeated across the register.
__m256i broadcast_a(const uint8_t* ap, uint32_t xor4) {
  uint32_t v;
  memcpy(&v, ap, 4);
  return _mm256_broadcastq_epi64(_mm_cvtepu8_epi16(_mm_cvtsi32_si128(static_cast<int>(v ^ xor4))));
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

// One k-group: B's 64 bytes widened to int16, four columns per register.
template <int R>
inline __attribute__((always_inline)) void step(__m256i (&acc)[R][4], const int8_t* b, const uint8_t* a,
                                                int64_t lda, uint32_t xor4) {
  __m256i bv[4];
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) bv[q] = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + q * 16)));
#pragma GCC unroll 2
  for (int r = 0; r < R; ++r) {
    const __m256i av = broadcast_a(a + r * lda, xor4);
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) acc[r][q] = _mm256_add_epi32(acc[r][q], _mm256_madd_epi16(av, bv[q]));
  }
}

// The last partial k-group of A is copied to a zero-padded block (its padding
// meets B's zero padding rows).
template <int R>
void tile(const QGemmCall& c, int64_t row0, int64_t panel) {
  __m256i acc[R][4];
#pragma GCC unroll 2
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) acc[r][q] = _mm256_setzero_si256();
  }
  const uint32_t xor4 = c.a_xor * 0x01010101u;
  const uint8_t* a = c.a + row0 * c.lda;
  const int8_t* b = c.panels + panel * c.panel_stride;
  const int64_t full = c.k / 4;
  for (int64_t g = 0; g < full; ++g) step<R>(acc, b + g * 64, a + g * 4, c.lda, xor4);
  if (full * 4 < c.k) {
    uint8_t tail[R][4];
    for (int r = 0; r < R; ++r) {
      for (int64_t t = 0; t < 4; ++t) tail[r][t] = full * 4 + t < c.k ? a[r * c.lda + full * 4 + t] : 0;
    }
    step<R>(acc, b + full * 64, &tail[0][0], 4, xor4);
  }
  const int64_t col = panel * kQGemmPanelCols;
#pragma GCC unroll 2
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

__m256i quantize8(__m256 x, __m256 scale, __m256 lo, __m256 hi, __m256i zp) {
  __m256 v = _mm256_div_ps(x, scale);
  v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
  return _mm256_add_epi32(_mm256_cvtps_epi32(v), zp);
}

// The packs saturate, but every value is already within the output range.
void f32_quantize_avx2_u8(const float* x, uint8_t* y, int64_t n, float scale, int32_t zp, bool is_signed) {
  const __m256 s = _mm256_set1_ps(scale);
  const __m256 lo = _mm256_set1_ps(static_cast<float>((is_signed ? -128 : 0) - zp));
  const __m256 hi = _mm256_set1_ps(static_cast<float>((is_signed ? 127 : 255) - zp));
  const __m256i z = _mm256_set1_epi32(zp);
  int64_t i = 0;
  for (; i < n; i += 8) {
    alignas(32) float tail[8] = {};
    const int64_t count = n - i < 8 ? n - i : 8;
    const float* src = x + i;
    if (count < 8) {
      memcpy(tail, src, static_cast<size_t>(count) * sizeof(float));
      src = tail;
    }
    const __m256i q = quantize8(_mm256_loadu_ps(src), s, lo, hi, z);
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    const __m128i b = is_signed ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w);
    alignas(16) uint8_t out[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(out), b);
    memcpy(y + i, out, static_cast<size_t>(count));
  }
}

float reduce(__m256 v, bool take_min) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, v);
  float r = lanes[0];
  for (int l = 1; l < 8; ++l) r = take_min ? (lanes[l] < r ? lanes[l] : r) : (lanes[l] > r ? lanes[l] : r);
  return r;
}

// MINPS / MAXPS keep the second operand (the running value) for a NaN element.
void f32_range_avx2(const float* x, int64_t n, float* lo, float* hi) {
  __m256 l = _mm256_setzero_ps(), h = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    l = _mm256_min_ps(v, l);
    h = _mm256_max_ps(v, h);
  }
  float rl = reduce(l, true), rh = reduce(h, false);
  for (; i < n; ++i) {
    rl = x[i] < rl ? x[i] : rl;
    rh = x[i] > rh ? x[i] : rh;
  }
  *lo = rl;
  *hi = rh;
}

}  // namespace

void fill_qgemm_avx2(QGemmTable& t) {
  t.gemm = u8s8_gemm_avx2_2x16;
  t.row_sum = u8_row_sum_avx2;
  t.f32_quantize = f32_quantize_avx2_u8;
  t.f32_range = f32_range_avx2;
}

}  // namespace ember::kernels::quant
