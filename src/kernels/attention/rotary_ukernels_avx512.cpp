// AVX-512 rotations: 16 lanes with masked tails; the interleaved form
// duplicates each angle into its pair's two lanes and lets fmaddsub apply the
// -/+ signs.
#include <immintrin.h>

#include "kernels/attention/rotary_ukernels.h"

namespace ember::kernels::attention {
namespace {

void f32_rotate_half_avx512_u16(const float* x0, const float* x1, const float* cos, const float* sin, float* y0,
                                float* y1, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const int64_t left = n - i;
    const __mmask16 m = left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1);
    const __m512 a = _mm512_maskz_loadu_ps(m, x0 + i), b = _mm512_maskz_loadu_ps(m, x1 + i);
    const __m512 c = _mm512_maskz_loadu_ps(m, cos + i), s = _mm512_maskz_loadu_ps(m, sin + i);
    _mm512_mask_storeu_ps(y0 + i, m, _mm512_fmsub_ps(a, c, _mm512_mul_ps(b, s)));
    _mm512_mask_storeu_ps(y1 + i, m, _mm512_fmadd_ps(b, c, _mm512_mul_ps(a, s)));
  }
}

void f32_rotate_pairs_avx512_u8(const float* x, const float* cos, const float* sin, float* y, int64_t pairs) {
  const __m512i dup = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  for (int64_t i = 0; i < pairs; i += 8) {
    const int64_t left = pairs - i;
    const __mmask8 mh = left >= 8 ? static_cast<__mmask8>(0xff) : static_cast<__mmask8>((1u << left) - 1);
    const __mmask16 m = left >= 8 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (2 * left)) - 1);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + 2 * i);
    const __m512 c = _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(_mm256_maskz_loadu_ps(mh, cos + i)));
    const __m512 s = _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(_mm256_maskz_loadu_ps(mh, sin + i)));
    const __m512 swapped = _mm512_permute_ps(v, 0xB1);
    _mm512_mask_storeu_ps(y + 2 * i, m, _mm512_fmaddsub_ps(v, c, _mm512_mul_ps(swapped, s)));
  }
}

}  // namespace

void fill_rotary_avx512(RotaryTable& t) {
  t.f32_rotate_half = f32_rotate_half_avx512_u16;
  t.f32_rotate_pairs = f32_rotate_pairs_avx512_u8;
}

}  // namespace ember::kernels::attention
