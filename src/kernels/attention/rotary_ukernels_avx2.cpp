// AVX2+FMA rotations: 8 lanes; the interleaved form duplicates each angle into
// its pair's two lanes and lets fmaddsub apply the -/+ signs.
#include <immintrin.h>

#include "kernels/attention/rotary_ukernels.h"

namespace ember::kernels::attention {
namespace {

void f32_rotate_half_avx2_u8(const float* x0, const float* x1, const float* cos, const float* sin, float* y0,
                             float* y1, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 a = _mm256_loadu_ps(x0 + i), b = _mm256_loadu_ps(x1 + i);
    const __m256 c = _mm256_loadu_ps(cos + i), s = _mm256_loadu_ps(sin + i);
    _mm256_storeu_ps(y0 + i, _mm256_fmsub_ps(a, c, _mm256_mul_ps(b, s)));
    _mm256_storeu_ps(y1 + i, _mm256_fmadd_ps(b, c, _mm256_mul_ps(a, s)));
  }
  for (; i < n; ++i) {
    const float a = x0[i], b = x1[i];
    y0[i] = a * cos[i] - b * sin[i];
    y1[i] = b * cos[i] + a * sin[i];
  }
}

void f32_rotate_pairs_avx2_u4(const float* x, const float* cos, const float* sin, float* y, int64_t pairs) {
  const __m256i dup = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
  int64_t i = 0;
  for (; i + 4 <= pairs; i += 4) {
    const __m256 v = _mm256_loadu_ps(x + 2 * i);
    const __m256 c = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(cos + i)), dup);
    const __m256 s = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(sin + i)), dup);
    const __m256 swapped = _mm256_permute_ps(v, 0xB1);
    _mm256_storeu_ps(y + 2 * i, _mm256_fmaddsub_ps(v, c, _mm256_mul_ps(swapped, s)));
  }
  for (; i < pairs; ++i) {
    const float a = x[2 * i], b = x[2 * i + 1];
    y[2 * i] = a * cos[i] - b * sin[i];
    y[2 * i + 1] = b * cos[i] + a * sin[i];
  }
}

}  // namespace

void fill_rotary_avx2(RotaryTable& t) {
  t.f32_rotate_half = f32_rotate_half_avx2_u8;
  t.f32_rotate_pairs = f32_rotate_pairs_avx2_u4;
}

}  // namespace ember::kernels::attention
