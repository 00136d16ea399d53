// 8 codes a vector: widen to 32-bit lanes, subtract the zero point, convert,
// scale; 16 codes a step, then a scalar tail.
#include <immintrin.h>

#include "kernels/quant/gbq_ukernels.h"

namespace ember::kernels::quant {
namespace {

__m256 dequant8(__m128i codes, __m256i zp, __m256 scale) {
  return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_cvtepu8_epi32(codes), zp)), scale);
}

void q4_block(const uint8_t* codes, int64_t n, int zp, float scale, float* y) {
  const __m128i nibble = _mm_set1_epi8(0x0F);
  const __m256i zpv = _mm256_set1_epi32(zp);
  const __m256 scalev = _mm256_set1_ps(scale);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes + i / 2));
    const __m128i lo = _mm_and_si128(bytes, nibble);
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), nibble);
    const __m128i c = _mm_unpacklo_epi8(lo, hi);
    _mm256_storeu_ps(y + i, dequant8(c, zpv, scalev));
    _mm256_storeu_ps(y + i + 8, dequant8(_mm_srli_si128(c, 8), zpv, scalev));
  }
  for (; i < n; ++i) {
    const int code = (i & 1) ? codes[i >> 1] >> 4 : codes[i >> 1] & 0xF;
    y[i] = static_cast<float>(code - zp) * scale;
  }
}

void f32_q4_dequant_avx2_u16(const uint8_t* codes, int64_t k, int64_t block_size, const float* scales,
                             const uint8_t* zps, float* y) {
  for (int64_t b = 0, k0 = 0; k0 < k; ++b, k0 += block_size) {
    const int64_t n = k - k0 < block_size ? k - k0 : block_size;
    q4_block(codes + k0 / 2, n, zps ? zps[b] : 8, scales[b], y + k0);
  }
}

void f32_q8_dequant_avx2_u16(const uint8_t* codes, int64_t k, int64_t block_size, const float* scales,
                             const uint8_t* zps, float* y) {
  for (int64_t b = 0, k0 = 0; k0 < k; ++b, k0 += block_size) {
    const int64_t n = k - k0 < block_size ? k - k0 : block_size;
    const int zp = zps ? zps[b] : 128;
    const __m256i zpv = _mm256_set1_epi32(zp);
    const __m256 scalev = _mm256_set1_ps(scales[b]);
    const uint8_t* c = codes + k0;
    float* out = y + k0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(c + i));
      _mm256_storeu_ps(out + i, dequant8(bytes, zpv, scalev));
      _mm256_storeu_ps(out + i + 8, dequant8(_mm_srli_si128(bytes, 8), zpv, scalev));
    }
    for (; i < n; ++i) out[i] = static_cast<float>(c[i] - zp) * scales[b];
  }
}

}  // namespace

void fill_gbq_avx2(GbqTable& t) {
  t.f32_q4_dequant = f32_q4_dequant_avx2_u16;
  t.f32_q8_dequant = f32_q8_dequant_avx2_u16;
}

}  // namespace ember::kernels::quant
