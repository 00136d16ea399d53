// AVX-512 rotations: 16 lanes with masked tails; the interleaved form
// duplicates each angle into its pair's two lanes and blends the a' and b'
// lanes. Rounding as in rotary_ukernels.h: a' = fma(a, cos, -(b*sin)),
// b' = fma(a, sin, b*cos).
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
    _mm512_mask_storeu_ps(y1 + i, m, _mm512_fmadd_ps(a, s, _mm512_mul_ps(b, c)));
  }
}

// Pairs past `fused` round both products (rotary_ukernels.h), in scalar
// builtins, which the compiler does not contract into an FMA.
void rotate_pairs_unfused(const float* x, const float* cos, const float* sin, float* y, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    const __m128 a = _mm_load_ss(x + 2 * i), b = _mm_load_ss(x + 2 * i + 1);
    const __m128 c = _mm_load_ss(cos + i), s = _mm_load_ss(sin + i);
    _mm_store_ss(y + 2 * i, _mm_sub_ss(_mm_mul_ss(a, c), _mm_mul_ss(b, s)));
    _mm_store_ss(y + 2 * i + 1, _mm_add_ss(_mm_mul_ss(a, s), _mm_mul_ss(b, c)));
  }
}

// Lanes 2i and 2i+1 hold pair i: v = (a, b), swapped = (b, a). Even lanes take
// a*c - (b*s), odd lanes a*s + (b*c).
void f32_rotate_pairs_avx512_u8(const float* x, const float* cos, const float* sin, float* y, int64_t pairs) {
  const __m512i dup = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  const int64_t fused = pairs % 8 == 0 ? pairs : pairs - pairs % 8 + 1;
  for (int64_t i = 0; i < fused; i += 8) {
    const int64_t left = fused - i;
    const __mmask8 mh = left >= 8 ? static_cast<__mmask8>(0xff) : static_cast<__mmask8>((1u << left) - 1);
    const __mmask16 m = left >= 8 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (2 * left)) - 1);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + 2 * i);
    const __m512 c = _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(_mm256_maskz_loadu_ps(mh, cos + i)));
    const __m512 s = _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(_mm256_maskz_loadu_ps(mh, sin + i)));
    const __m512 swapped = _mm512_permute_ps(v, 0xB1);
    const __m512 even = _mm512_fmsub_ps(v, c, _mm512_mul_ps(swapped, s));
    const __m512 odd = _mm512_fmadd_ps(swapped, s, _mm512_mul_ps(v, c));
    _mm512_mask_storeu_ps(y + 2 * i, m, _mm512_mask_blend_ps(static_cast<__mmask16>(0xAAAA), even, odd));
  }
  rotate_pairs_unfused(x, cos, sin, y, fused, pairs);
}

}  // namespace

void fill_rotary_avx512(RotaryTable& t) {
  t.f32_rotate_half = f32_rotate_half_avx512_u16;
  t.f32_rotate_pairs = f32_rotate_pairs_avx512_u8;
}

}  // namespace ember::kernels::attention
