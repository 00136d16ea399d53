// AVX2+FMA rotations: 8 lanes with masked tails (maskload/maskstore and a
// sliding lane mask); the interleaved form duplicates each angle into its
// pair's two lanes and blends the a' and b' lanes. Rounding as in
// rotary_ukernels.h: a' = fma(a, cos, -(b*sin)), b' = fma(a, sin, b*cos).
#include <immintrin.h>

#include "kernels/attention/rotary_ukernels.h"

namespace ember::kernels::attention {
namespace {

alignas(64) const int32_t kMaskWindow[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

// Lanes [0, min(count, 8)) set; count >= 1.
__m256i lane_mask(int64_t count) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kMaskWindow + 8 - (count < 8 ? count : 8)));
}

void f32_rotate_half_avx2_u8(const float* x0, const float* x1, const float* cos, const float* sin, float* y0,
                             float* y1, int64_t n) {
  for (int64_t i = 0; i < n; i += 8) {
    const __m256i m = lane_mask(n - i);
    const __m256 a = _mm256_maskload_ps(x0 + i, m), b = _mm256_maskload_ps(x1 + i, m);
    const __m256 c = _mm256_maskload_ps(cos + i, m), s = _mm256_maskload_ps(sin + i, m);
    _mm256_maskstore_ps(y0 + i, m, _mm256_fmsub_ps(a, c, _mm256_mul_ps(b, s)));
    _mm256_maskstore_ps(y1 + i, m, _mm256_fmadd_ps(a, s, _mm256_mul_ps(b, c)));
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
void f32_rotate_pairs_avx2_u4(const float* x, const float* cos, const float* sin, float* y, int64_t pairs) {
  const __m256i dup = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
  const int64_t fused = pairs % 8 == 0 ? pairs : pairs - pairs % 8 + 1;
  for (int64_t i = 0; i < fused; i += 4) {
    const int64_t left = fused - i;
    const __m256i m = lane_mask(2 * left);
    const __m128i mh = _mm256_castsi256_si128(lane_mask(left));
    const __m256 v = _mm256_maskload_ps(x + 2 * i, m);
    const __m256 c = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_maskload_ps(cos + i, mh)), dup);
    const __m256 s = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_maskload_ps(sin + i, mh)), dup);
    const __m256 swapped = _mm256_permute_ps(v, 0xB1);
    const __m256 even = _mm256_fmsub_ps(v, c, _mm256_mul_ps(swapped, s));
    const __m256 odd = _mm256_fmadd_ps(swapped, s, _mm256_mul_ps(v, c));
    _mm256_maskstore_ps(y + 2 * i, m, _mm256_blend_ps(even, odd, 0xAA));
  }
  rotate_pairs_unfused(x, cos, sin, y, fused, pairs);
}

}  // namespace

void fill_rotary_avx2(RotaryTable& t) {
  t.f32_rotate_half = f32_rotate_half_avx2_u8;
  t.f32_rotate_pairs = f32_rotate_pairs_avx2_u4;
}

}  // namespace ember::kernels::attention
