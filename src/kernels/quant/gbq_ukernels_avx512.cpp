// 4-bit (and 2-bit): each block's 16 possible values (q - zp) * scale go into
// one register and codes select from it with vpermps, 32 (16) codes per step.
// 8-bit: widen, subtract, convert, scale, 16 codes a vector. Tails use masked
// loads/stores.
#include <immintrin.h>

#include "kernels/quant/gbq_ukernels.h"

namespace ember::kernels::quant {
namespace {

__mmask16 low_mask16(int64_t n) { return n >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << n) - 1u); }

// The 16 dequantized values of one block, indexed by code.
__m512 block_lut(int zp, float scale) {
  const __m512i iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  const __m512 q = _mm512_cvtepi32_ps(_mm512_sub_epi32(iota, _mm512_set1_epi32(zp)));
  return _mm512_mul_ps(q, _mm512_set1_ps(scale));
}

// Codes of 16 packed bytes in order: low nibble of byte 0, high nibble of byte 0, ...
void split_nibbles(__m128i bytes, __m128i& first, __m128i& second) {
  const __m128i nibble = _mm_set1_epi8(0x0F);
  const __m128i lo = _mm_and_si128(bytes, nibble);
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), nibble);
  first = _mm_unpacklo_epi8(lo, hi);
  second = _mm_unpackhi_epi8(lo, hi);
}

void q4_block(const uint8_t* codes, int64_t n, __m512 lut, float* y) {
  int64_t i = 0;
  __m128i c0, c1;
  for (; i + 32 <= n; i += 32) {
    split_nibbles(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + i / 2)), c0, c1);
    _mm512_storeu_ps(y + i, _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(c0), lut));
    _mm512_storeu_ps(y + i + 16, _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(c1), lut));
  }
  if (i + 16 <= n) {
    split_nibbles(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes + i / 2)), c0, c1);
    _mm512_storeu_ps(y + i, _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(c0), lut));
    i += 16;
  }
  if (i < n) {
    const int64_t rest = n - i;
    const __m128i bytes = _mm_maskz_loadu_epi8(low_mask16((rest + 1) / 2), codes + i / 2);
    split_nibbles(bytes, c0, c1);
    _mm512_mask_storeu_ps(y + i, low_mask16(rest), _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(c0), lut));
  }
}

void f32_q4_dequant_avx512_lut_u32(const uint8_t* codes, int64_t k, int64_t block_size, const float* scales,
                                   const uint8_t* zps, float* y) {
  for (int64_t b = 0, k0 = 0; k0 < k; ++b, k0 += block_size) {
    const int64_t n = k - k0 < block_size ? k - k0 : block_size;
    q4_block(codes + k0 / 2, n, block_lut(zps ? zps[b] : 8, scales[b]), y + k0);
  }
}

// 2-bit: 4 bytes give 16 codes; lane l takes byte l / 4 shifted right by
// 2 * (l % 4), then the block's table (only entries 0..3 used).
__m512 q2_dequant16(const uint8_t* bytes, __mmask16 byte_mask, __m512 lut) {
  const __m512i byte_of_lane = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
  const __m512i shifts = _mm512_set_epi32(6, 4, 2, 0, 6, 4, 2, 0, 6, 4, 2, 0, 6, 4, 2, 0);
  const __m512i b = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(byte_mask, bytes));
  const __m512i codes = _mm512_and_si512(_mm512_srlv_epi32(_mm512_permutexvar_epi32(byte_of_lane, b), shifts),
                                         _mm512_set1_epi32(3));
  return _mm512_permutexvar_ps(codes, lut);
}

void f32_q2_dequant_avx512_lut_u16(const uint8_t* codes, int64_t k, int64_t block_size, const float* scales,
                                   const uint8_t* zps, float* y) {
  for (int64_t b = 0, k0 = 0; k0 < k; ++b, k0 += block_size) {
    const int64_t n = k - k0 < block_size ? k - k0 : block_size;
    const __m512 lut = block_lut(zps ? zps[b] : 2, scales[b]);
    const uint8_t* c = codes + k0 / 4;
    float* out = y + k0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(out + i, q2_dequant16(c + i / 4, 0xF, lut));
    if (i < n) {
      const int64_t rest = n - i;
      _mm512_mask_storeu_ps(out + i, low_mask16(rest), q2_dequant16(c + i / 4, low_mask16((rest + 3) / 4), lut));
    }
  }
}

__m512 q8_dequant16(__m128i bytes, __m512i zp, __m512 scale) {
  return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepu8_epi32(bytes), zp)), scale);
}

void f32_q8_dequant_avx512_u32(const uint8_t* codes, int64_t k, int64_t block_size, const float* scales,
                               const uint8_t* zps, float* y) {
  for (int64_t b = 0, k0 = 0; k0 < k; ++b, k0 += block_size) {
    const int64_t n = k - k0 < block_size ? k - k0 : block_size;
    const __m512i zp = _mm512_set1_epi32(zps ? zps[b] : 128);
    const __m512 scale = _mm512_set1_ps(scales[b]);
    const uint8_t* c = codes + k0;
    float* out = y + k0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
      _mm512_storeu_ps(out + i, q8_dequant16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(c + i)), zp, scale));
      _mm512_storeu_ps(out + i + 16,
                       q8_dequant16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(c + i + 16)), zp, scale));
    }
    for (; i < n; i += 16) {
      const __mmask16 m = low_mask16(n - i);
      _mm512_mask_storeu_ps(out + i, m, q8_dequant16(_mm_maskz_loadu_epi8(m, c + i), zp, scale));
    }
  }
}

}  // namespace

void fill_gbq_avx512(GbqTable& t) {
  t.f32_q2_dequant = f32_q2_dequant_avx512_lut_u16;
  t.f32_q4_dequant = f32_q4_dequant_avx512_lut_u32;
  t.f32_q8_dequant = f32_q8_dequant_avx512_u32;
}

}  // namespace ember::kernels::quant
