// AVX2+FMA f32 unary microkernels: 8 lanes, 4 vectors per iteration to hide
// the FMA/divide latency, tails through vmaskmov. Same math text as
// unary_f32_avx512.cpp (unary_f32_math.inc) over a 256-bit vector layer.
#include <immintrin.h>

#include "kernels/elementwise/unary_ukernels.h"

namespace ember::kernels {
namespace {

constexpr int64_t kLanes = 8;

#include "simd_f32_avx2.inc"

// ---- math (the same text as in unary_f32_avx512.cpp) --------------------------
#include "unary_f32_math.inc"

// ---- loops --------------------------------------------------------------------
template <class F>
void map(const float* x, float* y, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 4 * kLanes <= n; i += 4 * kLanes) {
    const VF a = f(_mm256_loadu_ps(x + i));
    const VF b = f(_mm256_loadu_ps(x + i + kLanes));
    const VF c = f(_mm256_loadu_ps(x + i + 2 * kLanes));
    const VF d = f(_mm256_loadu_ps(x + i + 3 * kLanes));
    _mm256_storeu_ps(y + i, a);
    _mm256_storeu_ps(y + i + kLanes, b);
    _mm256_storeu_ps(y + i + 2 * kLanes, c);
    _mm256_storeu_ps(y + i + 3 * kLanes, d);
  }
  for (; i + kLanes <= n; i += kLanes) _mm256_storeu_ps(y + i, f(_mm256_loadu_ps(x + i)));
  if (i < n) {
    const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n - i)),
                                         _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    _mm256_maskstore_ps(y + i, m, f(_mm256_maskload_ps(x + i, m)));
  }
}

#include "unary_f32_entries.inc"

}  // namespace

void fill_unary_avx2(UnaryTable& t) { fill_all(t); }

}  // namespace ember::kernels
