// AVX-512 (F/BW) parts of the integer GEMM family that need no VNNI: row sums
// of A and the activation quantization that feeds it.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/quant/qgemm.h"

namespace ember::kernels::quant {
namespace {

int32_t u8_row_sum_avx512(const uint8_t* a, int64_t k, uint8_t a_xor) {
  const __m512i x = _mm512_set1_epi8(static_cast<char>(a_xor));
  __m512i sum = _mm512_setzero_si512();
  int64_t i = 0;
  for (; i + 64 <= k; i += 64) {
    const __m512i v = _mm512_xor_si512(_mm512_loadu_si512(a + i), x);
    sum = _mm512_add_epi64(sum, _mm512_sad_epu8(v, _mm512_setzero_si512()));
  }
  alignas(64) int64_t lanes[8];
  _mm512_store_si512(lanes, sum);
  int64_t total = 0;
  for (int l = 0; l < 8; ++l) total += lanes[l];
  for (; i < k; ++i) total += a[i] ^ a_xor;
  return static_cast<int32_t>(total);
}

__m512i quantize16(__m512 x, __m512 scale, __m512 lo, __m512 hi, __m512i zp) {
  __m512 v = _mm512_div_ps(x, scale);
  v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
  return _mm512_add_epi32(_mm512_cvtps_epi32(v), zp);
}

void f32_quantize_avx512(const float* x, uint8_t* y, int64_t n, float scale, int32_t zp, bool is_signed) {
  const __m512 s = _mm512_set1_ps(scale);
  const __m512 lo = _mm512_set1_ps(static_cast<float>((is_signed ? -128 : 0) - zp));
  const __m512 hi = _mm512_set1_ps(static_cast<float>((is_signed ? 127 : 255) - zp));
  const __m512i z = _mm512_set1_epi32(zp);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm512_cvtepi32_epi8(quantize16(_mm512_loadu_ps(x + i), s, lo, hi, z)));
  }
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm512_mask_cvtepi32_storeu_epi8(y + i, m, quantize16(_mm512_maskz_loadu_ps(m, x + i), s, lo, hi, z));
  }
}

float reduce(__m512 v, bool take_min) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, v);
  float r = lanes[0];
  for (int l = 1; l < 16; ++l) r = take_min ? (lanes[l] < r ? lanes[l] : r) : (lanes[l] > r ? lanes[l] : r);
  return r;
}

// MINPS / MAXPS keep the second operand (the running value) for a NaN element.
void f32_range_avx512(const float* x, int64_t n, float* lo, float* hi) {
  __m512 l = _mm512_setzero_ps(), h = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    l = _mm512_min_ps(v, l);
    h = _mm512_max_ps(v, h);
  }
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1u);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    l = _mm512_mask_min_ps(l, m, v, l);
    h = _mm512_mask_max_ps(h, m, v, h);
  }
  *lo = reduce(l, true);
  *hi = reduce(h, false);
}

}  // namespace

void fill_qgemm_avx512(QGemmTable& t) {
  t.row_sum = u8_row_sum_avx512;
  t.f32_quantize = f32_quantize_avx512;
  t.f32_range = f32_range_avx512;
}

}  // namespace ember::kernels::quant
