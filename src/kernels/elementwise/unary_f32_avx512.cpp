// AVX-512 f32 unary microkernels: 16 lanes, 4 vectors per iteration to hide
// the FMA/divide latency, masked tails. The math is shared in spirit with
// unary_f32_avx2.cpp (same constants and algorithms, different vector layer);
// the accuracy each reaches is measured in tests/unit/unary_accuracy_test.cpp
// and recorded in docs/kernels/unary-accuracy.md.
#include <immintrin.h>

#include "kernels/elementwise/unary_ukernels.h"

// GCC 12 warns falsely about the _mm512_undefined_ps idiom inside getexp/getmant/
// roundscale/scalef (the CMake flags silence only -Wmaybe-uninitialized).
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace ember::kernels {
namespace {

// ---- vector layer -----------------------------------------------------------
using VF = __m512;
using VM = __mmask16;
constexpr int64_t kLanes = 16;

VF vset(float v) { return _mm512_set1_ps(v); }
VF vadd(VF a, VF b) { return _mm512_add_ps(a, b); }
VF vsub(VF a, VF b) { return _mm512_sub_ps(a, b); }
VF vmul(VF a, VF b) { return _mm512_mul_ps(a, b); }
VF vdiv(VF a, VF b) { return _mm512_div_ps(a, b); }
VF vfma(VF a, VF b, VF c) { return _mm512_fmadd_ps(a, b, c); }    // a*b + c
VF vfnma(VF a, VF b, VF c) { return _mm512_fnmadd_ps(a, b, c); }  // c - a*b
// max/min return the second operand when either is NaN: pass the bound first
// so NaN inputs propagate.
VF vmax(VF bound, VF x) { return _mm512_max_ps(bound, x); }
VF vmin(VF bound, VF x) { return _mm512_min_ps(bound, x); }
VF vabs(VF x) { return _mm512_abs_ps(x); }
VF vneg(VF x) { return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN))); }
VF vsign(VF x) { return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN))); }
VF vor(VF a, VF b) { return _mm512_or_ps(a, b); }
VF vround(VF x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
VF vfloor(VF x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); }
VF vceil(VF x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC); }
VF vsqrt(VF x) { return _mm512_sqrt_ps(x); }
VM vlt(VF a, VF b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
VM vgt(VF a, VF b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
VM veq(VF a, VF b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
VM vnge(VF a, VF b) { return _mm512_cmp_ps_mask(a, b, _CMP_NGE_UQ); }  // a < b or unordered
VF vselect(VM m, VF t, VF f) { return _mm512_mask_blend_ps(m, f, t); }
// 2^n for integral n in [-126, 127].
VF vpow2i(VF n) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23));
}
// p * 2^n for any integral n, with gradual underflow and overflow to inf.
VF vldexp(VF p, VF n) { return _mm512_scalef_ps(p, n); }
// x = m * 2^e with m in [1, 2); x must be finite and > 0 (denormals included).
VF vmant(VF x) { return _mm512_getmant_ps(x, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_zero); }
VF vexpo(VF x) { return _mm512_getexp_ps(x); }
// Quadrant q = n + offset: (q & 1) picks c over s, (q & 2) negates.
VF vquadrant(VF n, int offset, VF s, VF c) {
  const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(offset));
  const VF v = _mm512_mask_blend_ps(_mm512_test_epi32_mask(q, _mm512_set1_epi32(1)), s, c);
  const __m512i flip = _mm512_slli_epi32(_mm512_and_si512(q, _mm512_set1_epi32(2)), 30);
  return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), flip));
}

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
