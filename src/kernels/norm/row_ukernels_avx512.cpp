// AVX-512 row microkernels: 16 lanes per vector, 4 vectors per iteration in the
// sums (64 independent partials hide the 4-cycle add latency), masked tails.
#include <immintrin.h>

#include "kernels/norm/row_ukernels.h"

namespace ember::kernels {
namespace {

constexpr int64_t kLanes = 16;

__mmask16 tail_mask(int64_t remaining) {
  return remaining >= kLanes ? __mmask16(0xffff) : static_cast<__mmask16>((1u << remaining) - 1u);
}

// Horizontal reductions in a fixed order (GCC 12's _mm512_reduce_* trip
// -Wuninitialized inside its own header).
__m128 fold_halves(__m512 v, bool max, bool min) {
  const __m256 lo = _mm512_castps512_ps256(v), hi = _mm512_extractf32x8_ps(v, 1);
  const __m256 h = max ? _mm256_max_ps(lo, hi) : min ? _mm256_min_ps(lo, hi) : _mm256_add_ps(lo, hi);
  const __m128 a = _mm256_castps256_ps128(h), b = _mm256_extractf128_ps(h, 1);
  return max ? _mm_max_ps(a, b) : min ? _mm_min_ps(a, b) : _mm_add_ps(a, b);
}

float hsum(__m512 v) {
  __m128 s = fold_halves(v, false, false);
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

float hmax(__m512 v) {
  __m128 s = fold_halves(v, true, false);
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_max_ss(s, _mm_movehdup_ps(s)));
}

float hmin(__m512 v) {
  __m128 s = fold_halves(v, false, true);
  s = _mm_min_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_min_ss(s, _mm_movehdup_ps(s)));
}

double hsum_pd(__m512d v) {
  const __m256d h = _mm256_add_pd(_mm512_castpd512_pd256(v), _mm512_extractf64x4_pd(v, 1));
  __m128d s = _mm_add_pd(_mm256_castpd256_pd128(h), _mm256_extractf128_pd(h, 1));
  return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

// e^x: the same vector exp as the f32 unary kernels (one exp for both), over
// the unary kernels' vector layer.
#include "kernels/elementwise/simd_f32_avx512.inc"
#include "kernels/elementwise/exp_f32.inc"

float f32_sum_avx512_u64(const float* x, int64_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 4 * kLanes <= n; i += 4 * kLanes) {
    a0 = _mm512_add_ps(a0, _mm512_loadu_ps(x + i));
    a1 = _mm512_add_ps(a1, _mm512_loadu_ps(x + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_loadu_ps(x + i + 32));
    a3 = _mm512_add_ps(a3, _mm512_loadu_ps(x + i + 48));
  }
  for (; i < n; i += kLanes) a0 = _mm512_add_ps(a0, _mm512_maskz_loadu_ps(tail_mask(n - i), x + i));
  return hsum(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

float f32_sum_sq_dev_avx512_u64(const float* x, int64_t n, float center) {
  const __m512 c = _mm512_set1_ps(center);
  __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 4 * kLanes <= n; i += 4 * kLanes) {
    const __m512 d0 = _mm512_sub_ps(_mm512_loadu_ps(x + i), c);
    const __m512 d1 = _mm512_sub_ps(_mm512_loadu_ps(x + i + 16), c);
    const __m512 d2 = _mm512_sub_ps(_mm512_loadu_ps(x + i + 32), c);
    const __m512 d3 = _mm512_sub_ps(_mm512_loadu_ps(x + i + 48), c);
    a0 = _mm512_fmadd_ps(d0, d0, a0);
    a1 = _mm512_fmadd_ps(d1, d1, a1);
    a2 = _mm512_fmadd_ps(d2, d2, a2);
    a3 = _mm512_fmadd_ps(d3, d3, a3);
  }
  for (; i < n; i += kLanes) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 d = _mm512_maskz_sub_ps(m, _mm512_maskz_loadu_ps(m, x + i), c);
    a0 = _mm512_fmadd_ps(d, d, a0);
  }
  return hsum(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

void f32_normalize_avx512_u16(const float* x, float* y, int64_t n, float center, float scale, const float* gamma,
                              const float* beta) {
  const __m512 c = _mm512_set1_ps(center);
  const __m512 s = _mm512_set1_ps(scale);
  for (int64_t i = 0; i < n; i += kLanes) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 v = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), c), s);
    const __m512 g = _mm512_maskz_loadu_ps(m, gamma + i);
    const __m512 r = beta ? _mm512_fmadd_ps(v, g, _mm512_maskz_loadu_ps(m, beta + i)) : _mm512_mul_ps(v, g);
    _mm512_mask_storeu_ps(y + i, m, r);
  }
}

void f32_add3_avx512_u16(const float* a, const float* b, const float* c, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += kLanes) {
    const __mmask16 m = tail_mask(n - i);
    __m512 r = _mm512_add_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i));
    if (c) r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(m, c + i));
    _mm512_mask_storeu_ps(y + i, m, r);
  }
}

// Divided, then multiplied: ORT's rounding (row_ukernels.h).
void f32_rms_scale_avx512_u16(const float* x, float* y, int64_t n, float rms, const float* gamma) {
  const __m512 d = _mm512_set1_ps(rms);
  for (int64_t i = 0; i < n; i += kLanes) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 v = _mm512_maskz_div_ps(m, _mm512_maskz_loadu_ps(m, x + i), d);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(v, _mm512_maskz_loadu_ps(m, gamma + i)));
  }
}

template <bool kMax>
float f32_extreme_avx512_u32(const float* x, int64_t n) {
  const __m512 init = _mm512_set1_ps(kMax ? -__builtin_inff() : __builtin_inff());
  __m512 a0 = init, a1 = init;
  __mmask16 nan = 0;
  int64_t i = 0;
  for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
    const __m512 v0 = _mm512_loadu_ps(x + i);
    const __m512 v1 = _mm512_loadu_ps(x + i + 16);
    nan |= _mm512_cmp_ps_mask(v0, v1, _CMP_UNORD_Q);
    a0 = kMax ? _mm512_max_ps(a0, v0) : _mm512_min_ps(a0, v0);
    a1 = kMax ? _mm512_max_ps(a1, v1) : _mm512_min_ps(a1, v1);
  }
  for (; i < n; i += kLanes) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 v = _mm512_mask_loadu_ps(init, m, x + i);
    nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    a0 = kMax ? _mm512_max_ps(a0, v) : _mm512_min_ps(a0, v);
  }
  if (nan) return __builtin_nanf("");
  return kMax ? hmax(_mm512_max_ps(a0, a1)) : hmin(_mm512_min_ps(a0, a1));
}

// x - shift <= 0 (shift is the row's max) or NaN, so exp_nonpositive applies.
float f32_exp_sum_avx512_rr2_p5_u64(const float* x, float* y, int64_t n, float shift) {
  const __m512 s = _mm512_set1_ps(shift);
  __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 4 * kLanes <= n; i += 4 * kLanes) {
    const __m512 e0 = exp_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(x + i), s));
    const __m512 e1 = exp_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(x + i + 16), s));
    const __m512 e2 = exp_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(x + i + 32), s));
    const __m512 e3 = exp_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(x + i + 48), s));
    if (y) {
      _mm512_storeu_ps(y + i, e0);
      _mm512_storeu_ps(y + i + 16, e1);
      _mm512_storeu_ps(y + i + 32, e2);
      _mm512_storeu_ps(y + i + 48, e3);
    }
    a0 = _mm512_add_ps(a0, e0);
    a1 = _mm512_add_ps(a1, e1);
    a2 = _mm512_add_ps(a2, e2);
    a3 = _mm512_add_ps(a3, e3);
  }
  for (; i < n; i += kLanes) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 e = _mm512_maskz_mov_ps(m, exp_nonpositive(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), s)));
    if (y) _mm512_mask_storeu_ps(y + i, m, e);
    a0 = _mm512_add_ps(a0, e);
  }
  return hsum(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

void f32_scale_avx512_u64(const float* x, float* y, int64_t n, float s) {
  const __m512 v = _mm512_set1_ps(s);
  int64_t i = 0;
  for (; i + 4 * kLanes <= n; i += 4 * kLanes) {
    const __m512 a = _mm512_mul_ps(_mm512_loadu_ps(x + i), v);
    const __m512 b = _mm512_mul_ps(_mm512_loadu_ps(x + i + 16), v);
    const __m512 c = _mm512_mul_ps(_mm512_loadu_ps(x + i + 32), v);
    const __m512 d = _mm512_mul_ps(_mm512_loadu_ps(x + i + 48), v);
    _mm512_storeu_ps(y + i, a);
    _mm512_storeu_ps(y + i + 16, b);
    _mm512_storeu_ps(y + i + 32, c);
    _mm512_storeu_ps(y + i + 48, d);
  }
  for (; i < n; i += kLanes) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), v));
  }
}

void f32_sub2_avx512_u16(const float* x, float* y, int64_t n, float a, float b) {
  const __m512 va = _mm512_set1_ps(a), vb = _mm512_set1_ps(b);
  for (int64_t i = 0; i < n; i += kLanes) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_sub_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), va), vb));
  }
}

// Widened sums: each 16-float block becomes two 8-double vectors.
template <int kKind>
__m512d widen_term(__m256 v) {
  const __m512d d = _mm512_cvtps_pd(v);
  if (kKind == kAccumulateSquare) return _mm512_mul_pd(d, d);
  if (kKind == kAccumulateAbs) return _mm512_abs_pd(d);
  return d;
}

template <int kKind>
double f32_sum_f64_avx512_u16(const float* x, int64_t n) {
  __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd();
  for (int64_t i = 0; i < n; i += kLanes) {
    const __m512 v = _mm512_maskz_loadu_ps(tail_mask(n - i), x + i);
    a0 = _mm512_add_pd(a0, widen_term<kKind>(_mm512_castps512_ps256(v)));
    a1 = _mm512_add_pd(a1, widen_term<kKind>(_mm512_extractf32x8_ps(v, 1)));
  }
  return hsum_pd(_mm512_add_pd(a0, a1));
}

template <int kKind>
void f32_accumulate_f64_avx512_u8(const float* x, double* acc, int64_t n) {
  for (int64_t i = 0; i < n; i += 8) {
    const __mmask8 m = static_cast<__mmask8>(tail_mask(n - i));
    const __m512d t = widen_term<kKind>(_mm256_maskz_loadu_ps(m, x + i));
    _mm512_mask_storeu_pd(acc + i, m, _mm512_add_pd(_mm512_maskz_loadu_pd(m, acc + i), t));
  }
}

void f32_accumulate_f64_avx512(const float* x, double* acc, int64_t n, int kind) {
  if (kind == kAccumulateSquare) return f32_accumulate_f64_avx512_u8<kAccumulateSquare>(x, acc, n);
  if (kind == kAccumulateAbs) return f32_accumulate_f64_avx512_u8<kAccumulateAbs>(x, acc, n);
  f32_accumulate_f64_avx512_u8<kAccumulateSum>(x, acc, n);
}

template <bool kMax>
void f32_extreme_into_avx512_u16(const float* x, float* acc, int64_t n) {
  for (int64_t i = 0; i < n; i += kLanes) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 a = _mm512_maskz_loadu_ps(m, acc + i);
    const __m512 r = kMax ? _mm512_max_ps(a, _mm512_maskz_loadu_ps(m, x + i))
                          : _mm512_min_ps(a, _mm512_maskz_loadu_ps(m, x + i));
    _mm512_mask_storeu_ps(acc + i, m, _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), a));
  }
}

}  // namespace

void fill_row_avx512(RowTable& t) {
  t.sum = f32_sum_avx512_u64;
  t.sum_sq_dev = f32_sum_sq_dev_avx512_u64;
  t.normalize = f32_normalize_avx512_u16;
  t.add3 = f32_add3_avx512_u16;
  // sum_squares_lanes8 stays AVX2's: the order it reproduces is 8 lanes wide.
  t.rms_scale = f32_rms_scale_avx512_u16;
  t.max = f32_extreme_avx512_u32<true>;
  t.min = f32_extreme_avx512_u32<false>;
  t.exp_sum = f32_exp_sum_avx512_rr2_p5_u64;
  t.scale = f32_scale_avx512_u64;
  t.sub2 = f32_sub2_avx512_u16;
  t.sum_f64 = f32_sum_f64_avx512_u16<kAccumulateSum>;
  t.sum_sq_f64 = f32_sum_f64_avx512_u16<kAccumulateSquare>;
  t.sum_abs_f64 = f32_sum_f64_avx512_u16<kAccumulateAbs>;
  t.accumulate_f64 = f32_accumulate_f64_avx512;
  t.max_into = f32_extreme_into_avx512_u16<true>;
  t.min_into = f32_extreme_into_avx512_u16<false>;
}

}  // namespace ember::kernels
