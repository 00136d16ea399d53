// 16 lanes per instruction, two vectors per iteration, a masked tail.
#include <immintrin.h>

#include "kernels/common/convert.h"

namespace ember::kernels {
namespace {

__mmask16 tail_mask(int64_t remaining) { return static_cast<__mmask16>((1u << remaining) - 1u); }

void f16_to_f32_avx512_u32(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 16));
    _mm512_storeu_ps(y + i, _mm512_cvtph_ps(a));
    _mm512_storeu_ps(y + i + 16, _mm512_cvtph_ps(b));
  }
  for (; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, x + i)));
  }
}

// Two conversions joined into one 64-byte store: a whole cache line per store.
void f32_to_f16_avx512_u32(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i a = _mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
    const __m256i b = _mm512_cvtps_ph(_mm512_loadu_ps(x + i + 16), _MM_FROUND_TO_NEAREST_INT);
    _mm512_storeu_si512(y + i, _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1));
  }
  for (; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : tail_mask(n - i);
    _mm256_mask_storeu_epi16(y + i, m, _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), _MM_FROUND_TO_NEAREST_INT));
  }
}

void bf16_to_f32_avx512_u32(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512i a = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)));
    const __m512i b = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 16)));
    _mm512_storeu_si512(y + i, _mm512_slli_epi32(a, 16));
    _mm512_storeu_si512(y + i + 16, _mm512_slli_epi32(b, 16));
  }
  for (; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : tail_mask(n - i);
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, x + i));
    _mm512_mask_storeu_epi32(y + i, m, _mm512_slli_epi32(w, 16));
  }
}

// f32 bits rounded to nearest even in the high half (add 0x7fff plus the lowest
// kept bit); a NaN keeps its high half with the quiet bit set.
__m512i round_to_bf16_high(__m512i u) {
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb);
  const __mmask16 is_nan =
      _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
  return _mm512_mask_or_epi32(rounded, is_nan, u, _mm512_set1_epi32(0x00400000));
}

void f32_to_bf16_avx512_u32(const float* x, uint16_t* y, int64_t n) {
  // Odd 16-bit words of a then b: the high halves of 32 f32 values in order.
  const __m512i high_words = _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37, 35, 33, 31, 29,
                                              27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512i a = round_to_bf16_high(_mm512_loadu_si512(x + i));
    const __m512i b = round_to_bf16_high(_mm512_loadu_si512(x + i + 16));
    _mm512_storeu_si512(y + i, _mm512_permutex2var_epi16(a, high_words, b));
  }
  for (; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : tail_mask(n - i);
    const __m512i r = round_to_bf16_high(_mm512_maskz_loadu_epi32(m, x + i));
    _mm256_mask_storeu_epi16(y + i, m, _mm512_cvtepi32_epi16(_mm512_srli_epi32(r, 16)));
  }
}

}  // namespace

void fill_convert_avx512(ConvertTable& t) {
  t.f16_to_f32 = f16_to_f32_avx512_u32;
  t.f32_to_f16 = f32_to_f16_avx512_u32;
  t.bf16_to_f32 = bf16_to_f32_avx512_u32;
  t.f32_to_bf16 = f32_to_bf16_avx512_u32;
}

}  // namespace ember::kernels
