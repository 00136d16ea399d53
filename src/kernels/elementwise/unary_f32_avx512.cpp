// AVX-512 f32 unary microkernels: 16 lanes, 4 vectors per iteration to hide
// the FMA/divide latency, masked tails. The math text (unary_f32_math.inc) is
// shared with unary_f32_avx2.cpp over a different vector layer;
// the accuracy each reaches is measured in tests/unit/unary_accuracy_test.cpp
// and recorded in docs/kernels/unary-accuracy.md.
#include <immintrin.h>

#include "kernels/elementwise/unary_ukernels.h"

namespace ember::kernels {
namespace {

constexpr int64_t kLanes = 16;

#include "simd_f32_avx512.inc"

// ---- math (identical text in unary_f32_avx2.cpp) ----------------------------
#include "unary_f32_math.inc"

// ---- loops --------------------------------------------------------------------
template <class F>
void map(const float* x, float* y, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 4 * kLanes <= n; i += 4 * kLanes) {
    const VF a = f(_mm512_loadu_ps(x + i));
    const VF b = f(_mm512_loadu_ps(x + i + kLanes));
    const VF c = f(_mm512_loadu_ps(x + i + 2 * kLanes));
    const VF d = f(_mm512_loadu_ps(x + i + 3 * kLanes));
    _mm512_storeu_ps(y + i, a);
    _mm512_storeu_ps(y + i + kLanes, b);
    _mm512_storeu_ps(y + i + 2 * kLanes, c);
    _mm512_storeu_ps(y + i + 3 * kLanes, d);
  }
  for (; i < n; i += kLanes) {
    const int64_t rem = n - i;
    const __mmask16 m = rem >= kLanes ? __mmask16(0xffff) : static_cast<__mmask16>((1u << rem) - 1u);
    _mm512_mask_storeu_ps(y + i, m, f(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

#include "unary_f32_entries.inc"

}  // namespace

void fill_unary_avx512(UnaryTable& t) { fill_all(t); }

}  // namespace ember::kernels
