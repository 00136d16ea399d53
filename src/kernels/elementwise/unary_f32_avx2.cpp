// AVX2+FMA f32 unary microkernels: 8 lanes, 4 vectors per iteration to hide
// the FMA/divide latency, tails through vmaskmov. Same math text as
// unary_f32_avx512.cpp (unary_f32_math.inc) over a 256-bit vector layer.
#include <immintrin.h>

#include "kernels/elementwise/unary_ukernels.h"

namespace ember::kernels {
namespace {

// ---- vector layer -----------------------------------------------------------
using VF = __m256;
using VM = __m256;  // all-ones / all-zeros lanes
constexpr int64_t kLanes = 8;

VF vset(float v) { return _mm256_set1_ps(v); }
VF vadd(VF a, VF b) { return _mm256_add_ps(a, b); }
VF vsub(VF a, VF b) { return _mm256_sub_ps(a, b); }
VF vmul(VF a, VF b) { return _mm256_mul_ps(a, b); }
VF vdiv(VF a, VF b) { return _mm256_div_ps(a, b); }
VF vfma(VF a, VF b, VF c) { return _mm256_fmadd_ps(a, b, c); }    // a*b + c
VF vfnma(VF a, VF b, VF c) { return _mm256_fnmadd_ps(a, b, c); }  // c - a*b
// max/min return the second operand when either is NaN: pass the bound first
// so NaN inputs propagate.
VF vmax(VF bound, VF x) { return _mm256_max_ps(bound, x); }
VF vmin(VF bound, VF x) { return _mm256_min_ps(bound, x); }
VF vabs(VF x) { return _mm256_and_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(INT32_MAX))); }
VF vsign(VF x) { return _mm256_and_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(INT32_MIN))); }
VF vneg(VF x) { return _mm256_xor_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(INT32_MIN))); }
VF vor(VF a, VF b) { return _mm256_or_ps(a, b); }
VF vround(VF x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
VF vfloor(VF x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); }
VF vceil(VF x) { return _mm256_round_ps(x, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC); }
VF vsqrt(VF x) { return _mm256_sqrt_ps(x); }
VM vlt(VF a, VF b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
VM vgt(VF a, VF b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
VM veq(VF a, VF b) { return _mm256_cmp_ps(a, b, _CMP_EQ_OQ); }
VM vnge(VF a, VF b) { return _mm256_cmp_ps(a, b, _CMP_NGE_UQ); }  // a < b or unordered
VF vselect(VM m, VF t, VF f) { return _mm256_blendv_ps(f, t, m); }
// 2^n for integral n in [-126, 127].
VF vpow2i(VF n) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
}
// p * 2^n for integral n in [-252, 254], in two steps so each factor is a
// normal float: gradual underflow and overflow to inf as with VSCALEFPS.
VF vldexp(VF p, VF n) {
  const VF n1 = vfloor(vmul(n, vset(0.5f)));
  return vmul(vmul(p, vpow2i(n1)), vpow2i(vsub(n, n1)));
}
// x = m * 2^e with m in [1, 2) for finite x > 0; denormals are scaled by 2^23 first.
VF vscaled(VF x) {
  return vselect(vlt(x, vset(0x1p-126f)), vmul(x, vset(0x1p23f)), x);
}
VF vmant(VF x) {
  const __m256i bits = _mm256_castps_si256(vscaled(x));
  return _mm256_castsi256_ps(
      _mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi32(0x007fffff)), _mm256_set1_epi32(0x3f800000)));
}
VF vexpo(VF x) {
  const __m256i bits = _mm256_castps_si256(vscaled(x));
  const VF e = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(bits, 23), _mm256_set1_epi32(127)));
  return vselect(vlt(x, vset(0x1p-126f)), vsub(e, vset(23.0f)), e);
}
// Quadrant q = n + offset: (q & 1) picks c over s, (q & 2) negates.
VF vquadrant(VF n, int offset, VF s, VF c) {
  const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(offset));
  const __m256i one = _mm256_set1_epi32(1);
  const VF odd = _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(q, one), one));
  const VF v = _mm256_blendv_ps(s, c, odd);
  const __m256i flip = _mm256_slli_epi32(_mm256_and_si256(q, _mm256_set1_epi32(2)), 30);
  return _mm256_xor_ps(v, _mm256_castsi256_ps(flip));
}

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
