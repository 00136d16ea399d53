// 16 lanes per instruction; tails with masked loads and stores.
#include <immintrin.h>

#include "kernels/common/convert.h"

namespace ember::kernels {
namespace {

__mmask16 tail_mask(int64_t remaining) {
  return remaining >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << remaining) - 1u);
}

void f16_to_f32_avx512_u16(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m256i h = _mm256_maskz_loadu_epi16(m, x + i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_cvtph_ps(h));
  }
}

void f32_to_f16_avx512_u16(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_mask_storeu_epi16(y + i, m, h);
  }
}

void bf16_to_f32_avx512_u16(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, x + i));
    _mm512_mask_storeu_epi32(y + i, m, _mm512_slli_epi32(w, 16));
  }
}

void f32_to_bf16_avx512_u16(const float* x, uint16_t* y, int64_t n) {
  const __m512i one = _mm512_set1_epi32(1);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512i u = _mm512_maskz_loadu_epi32(m, x + i);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), one);
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
    const __mmask16 is_nan =
        _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
    r = _mm512_mask_or_epi32(r, is_nan, _mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
    _mm256_mask_storeu_epi16(y + i, m, _mm512_cvtepi32_epi16(r));
  }
}

}  // namespace

void fill_convert_avx512(ConvertTable& t) {
  t.f16_to_f32 = f16_to_f32_avx512_u16;
  t.f32_to_f16 = f32_to_f16_avx512_u16;
  t.bf16_to_f32 = bf16_to_f32_avx512_u16;
  t.f32_to_bf16 = f32_to_bf16_avx512_u16;
}

}  // namespace ember::kernels
