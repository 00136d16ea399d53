// AVX2 + FMA row microkernels: 8 lanes per vector, 4 vectors per iteration in
// the sums; tails through maskload/maskstore with a sliding lane mask.
#include <immintrin.h>

#include "kernels/norm/row_ukernels.h"

namespace ember::kernels {
namespace {

constexpr int64_t kLanes = 8;

alignas(64) const int32_t kMaskWindow[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

// Lanes [0, min(remaining, 8)) set; remaining >= 1.
__m256i tail_mask(int64_t remaining) {
  const int64_t lanes = remaining < kLanes ? remaining : kLanes;
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kMaskWindow + kLanes - lanes));
}

float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

double hsum_pd(__m256d v) {
  __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  s = _mm_add_sd(s, _mm_unpackhi_pd(s, s));
  return _mm_cvtsd_f64(s);
}

// e^x: the same vector exp as the f32 unary kernels (one exp for both), over
// the unary kernels' vector layer.
#include "kernels/elementwise/simd_f32_avx2.inc"
#include "kernels/elementwise/exp_f32.inc"

float f32_sum_avx2_u32(const float* x, int64_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 4 * kLanes <= n; i += 4 * kLanes) {
    a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + i));
    a1 = _mm256_add_ps(a1, _mm256_loadu_ps(x + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_loadu_ps(x + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_loadu_ps(x + i + 24));
  }
  for (; i < n; i += kLanes) a0 = _mm256_add_ps(a0, _mm256_maskload_ps(x + i, tail_mask(n - i)));
  return hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
}

float f32_sum_sq_dev_avx2_u32(const float* x, int64_t n, float center) {
  const __m256 c = _mm256_set1_ps(center);
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 4 * kLanes <= n; i += 4 * kLanes) {
    const __m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(x + i), c);
    const __m256 d1 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 8), c);
    const __m256 d2 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 16), c);
    const __m256 d3 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 24), c);
    a0 = _mm256_fmadd_ps(d0, d0, a0);
    a1 = _mm256_fmadd_ps(d1, d1, a1);
    a2 = _mm256_fmadd_ps(d2, d2, a2);
    a3 = _mm256_fmadd_ps(d3, d3, a3);
  }
  for (; i < n; i += kLanes) {
    const __m256i m = tail_mask(n - i);
    const __m256 d = _mm256_and_ps(_mm256_sub_ps(_mm256_maskload_ps(x + i, m), c), _mm256_castsi256_ps(m));
    a0 = _mm256_fmadd_ps(d, d, a0);
  }
  return hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
}

void f32_normalize_avx2_u8(const float* x, float* y, int64_t n, float center, float scale, const float* gamma,
                           const float* beta) {
  const __m256 c = _mm256_set1_ps(center);
  const __m256 s = _mm256_set1_ps(scale);
  for (int64_t i = 0; i < n; i += kLanes) {
    const __m256i m = tail_mask(n - i);
    const __m256 v = _mm256_mul_ps(_mm256_sub_ps(_mm256_maskload_ps(x + i, m), c), s);
    const __m256 g = _mm256_maskload_ps(gamma + i, m);
    const __m256 r = beta ? _mm256_fmadd_ps(v, g, _mm256_maskload_ps(beta + i, m)) : _mm256_mul_ps(v, g);
    _mm256_maskstore_ps(y + i, m, r);
  }
}

void f32_add3_avx2_u8(const float* a, const float* b, const float* c, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += kLanes) {
    const __m256i m = tail_mask(n - i);
    __m256 r = _mm256_add_ps(_mm256_maskload_ps(a + i, m), _mm256_maskload_ps(b + i, m));
    if (c) r = _mm256_add_ps(r, _mm256_maskload_ps(c + i, m));
    _mm256_maskstore_ps(y + i, m, r);
  }
}

// MLAS's order (row_ukernels.h): 8 lanes by FMA, hsum's fold, then the serial
// tail, its rounded squares in scalar builtins (which the compiler does not
// contract into an FMA).
float sum_squares_lanes8_finish(const float* x, int64_t body, int64_t n, __m256 lanes) {
  __m128 s = _mm_set_ss(hsum(lanes));
  const int64_t rounded = body + (n - body) / 4 * 4;
  for (int64_t i = body; i < rounded; ++i) {
    const __m128 v = _mm_load_ss(x + i);
    s = _mm_add_ss(s, _mm_mul_ss(v, v));
  }
  for (int64_t i = rounded; i < n; ++i) {
    const __m128 v = _mm_load_ss(x + i);
    s = _mm_fmadd_ss(v, v, s);
  }
  return _mm_cvtss_f32(s);
}

// Four rows at a time: four FMA chains in flight instead of one.
void f32_sum_squares_lanes8_avx2_r4(const float* x, int64_t stride, int64_t rows, int64_t n, float* out) {
  const int64_t body = n - n % kLanes;
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const float* x0 = x + r * stride;
    const float* x1 = x0 + stride;
    const float* x2 = x1 + stride;
    const float* x3 = x2 + stride;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    for (int64_t i = 0; i < body; i += kLanes) {
      const __m256 v0 = _mm256_loadu_ps(x0 + i), v1 = _mm256_loadu_ps(x1 + i);
      const __m256 v2 = _mm256_loadu_ps(x2 + i), v3 = _mm256_loadu_ps(x3 + i);
      a0 = _mm256_fmadd_ps(v0, v0, a0);
      a1 = _mm256_fmadd_ps(v1, v1, a1);
      a2 = _mm256_fmadd_ps(v2, v2, a2);
      a3 = _mm256_fmadd_ps(v3, v3, a3);
    }
    out[r] = sum_squares_lanes8_finish(x0, body, n, a0);
    out[r + 1] = sum_squares_lanes8_finish(x1, body, n, a1);
    out[r + 2] = sum_squares_lanes8_finish(x2, body, n, a2);
    out[r + 3] = sum_squares_lanes8_finish(x3, body, n, a3);
  }
  for (; r < rows; ++r) {
    const float* xr = x + r * stride;
    __m256 a = _mm256_setzero_ps();
    for (int64_t i = 0; i < body; i += kLanes) {
      const __m256 v = _mm256_loadu_ps(xr + i);
      a = _mm256_fmadd_ps(v, v, a);
    }
    out[r] = sum_squares_lanes8_finish(xr, body, n, a);
  }
}

// Divided, then multiplied: ORT's rounding (row_ukernels.h).
void f32_rms_scale_avx2_u8(const float* x, float* y, int64_t n, float rms, const float* gamma) {
  const __m256 d = _mm256_set1_ps(rms);
  for (int64_t i = 0; i < n; i += kLanes) {
    const __m256i m = tail_mask(n - i);
    const __m256 v = _mm256_div_ps(_mm256_maskload_ps(x + i, m), d);
    _mm256_maskstore_ps(y + i, m, _mm256_mul_ps(v, _mm256_maskload_ps(gamma + i, m)));
  }
}

template <bool kMax>
float f32_extreme_avx2_u16(const float* x, int64_t n) {
  const __m256 init = _mm256_set1_ps(kMax ? -__builtin_inff() : __builtin_inff());
  __m256 a0 = init, a1 = init;
  __m256 nan = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
    const __m256 v0 = _mm256_loadu_ps(x + i);
    const __m256 v1 = _mm256_loadu_ps(x + i + 8);
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(v0, v1, _CMP_UNORD_Q));
    a0 = kMax ? _mm256_max_ps(a0, v0) : _mm256_min_ps(a0, v0);
    a1 = kMax ? _mm256_max_ps(a1, v1) : _mm256_min_ps(a1, v1);
  }
  for (; i < n; i += kLanes) {
    const __m256i m = tail_mask(n - i);
    const __m256 v = _mm256_blendv_ps(init, _mm256_maskload_ps(x + i, m), _mm256_castsi256_ps(m));
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    a0 = kMax ? _mm256_max_ps(a0, v) : _mm256_min_ps(a0, v);
  }
  if (_mm256_movemask_ps(nan)) return __builtin_nanf("");
  a0 = kMax ? _mm256_max_ps(a0, a1) : _mm256_min_ps(a0, a1);
  __m128 r = _mm256_castps256_ps128(a0);
  const __m128 h = _mm256_extractf128_ps(a0, 1);
  r = kMax ? _mm_max_ps(r, h) : _mm_min_ps(r, h);
  r = kMax ? _mm_max_ps(r, _mm_movehl_ps(r, r)) : _mm_min_ps(r, _mm_movehl_ps(r, r));
  r = kMax ? _mm_max_ss(r, _mm_movehdup_ps(r)) : _mm_min_ss(r, _mm_movehdup_ps(r));
  return _mm_cvtss_f32(r);
}

// x - shift <= 0 (shift is the row's max) or NaN, so exp_nonpositive applies.
float f32_exp_sum_avx2_rr2_p5_u16(const float* x, float* y, int64_t n, float shift) {
  const __m256 s = _mm256_set1_ps(shift);
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
    const __m256 e0 = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(x + i), s));
    const __m256 e1 = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), s));
    if (y) {
      _mm256_storeu_ps(y + i, e0);
      _mm256_storeu_ps(y + i + 8, e1);
    }
    a0 = _mm256_add_ps(a0, e0);
    a1 = _mm256_add_ps(a1, e1);
  }
  for (; i < n; i += kLanes) {
    const __m256i m = tail_mask(n - i);
    const __m256 e = _mm256_and_ps(exp_nonpositive(_mm256_sub_ps(_mm256_maskload_ps(x + i, m), s)),
                                   _mm256_castsi256_ps(m));
    if (y) _mm256_maskstore_ps(y + i, m, e);
    a0 = _mm256_add_ps(a0, e);
  }
  return hsum(_mm256_add_ps(a0, a1));
}

void f32_scale_avx2_u8(const float* x, float* y, int64_t n, float s) {
  const __m256 v = _mm256_set1_ps(s);
  for (int64_t i = 0; i < n; i += kLanes) {
    const __m256i m = tail_mask(n - i);
    _mm256_maskstore_ps(y + i, m, _mm256_mul_ps(_mm256_maskload_ps(x + i, m), v));
  }
}

void f32_sub2_avx2_u8(const float* x, float* y, int64_t n, float a, float b) {
  const __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b);
  for (int64_t i = 0; i < n; i += kLanes) {
    const __m256i m = tail_mask(n - i);
    _mm256_maskstore_ps(y + i, m, _mm256_sub_ps(_mm256_sub_ps(_mm256_maskload_ps(x + i, m), va), vb));
  }
}

template <int kKind>
__m256d widen_term(__m128 v) {
  const __m256d d = _mm256_cvtps_pd(v);
  if (kKind == kAccumulateSquare) return _mm256_mul_pd(d, d);
  if (kKind == kAccumulateAbs) return _mm256_andnot_pd(_mm256_set1_pd(-0.0), d);
  return d;
}

template <int kKind>
double f32_sum_f64_avx2_u8(const float* x, int64_t n) {
  __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
  for (int64_t i = 0; i < n; i += kLanes) {
    const __m256 v = _mm256_maskload_ps(x + i, tail_mask(n - i));
    a0 = _mm256_add_pd(a0, widen_term<kKind>(_mm256_castps256_ps128(v)));
    a1 = _mm256_add_pd(a1, widen_term<kKind>(_mm256_extractf128_ps(v, 1)));
  }
  return hsum_pd(_mm256_add_pd(a0, a1));
}

template <int kKind>
void f32_accumulate_f64_avx2_u4(const float* x, double* acc, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256d t = widen_term<kKind>(_mm_loadu_ps(x + i));
    _mm256_storeu_pd(acc + i, _mm256_add_pd(_mm256_loadu_pd(acc + i), t));
  }
  for (; i < n; ++i) {
    const double v = x[i];
    acc[i] += kKind == kAccumulateSum ? v : kKind == kAccumulateSquare ? v * v : (v < 0 ? -v : v);
  }
}

void f32_accumulate_f64_avx2(const float* x, double* acc, int64_t n, int kind) {
  if (kind == kAccumulateSquare) return f32_accumulate_f64_avx2_u4<kAccumulateSquare>(x, acc, n);
  if (kind == kAccumulateAbs) return f32_accumulate_f64_avx2_u4<kAccumulateAbs>(x, acc, n);
  f32_accumulate_f64_avx2_u4<kAccumulateSum>(x, acc, n);
}

template <bool kMax>
void f32_extreme_into_avx2_u8(const float* x, float* acc, int64_t n) {
  for (int64_t i = 0; i < n; i += kLanes) {
    const __m256i m = tail_mask(n - i);
    const __m256 a = _mm256_maskload_ps(acc + i, m);
    const __m256 v = _mm256_maskload_ps(x + i, m);
    const __m256 r = kMax ? _mm256_max_ps(a, v) : _mm256_min_ps(a, v);
    _mm256_maskstore_ps(acc + i, m, _mm256_blendv_ps(r, a, _mm256_cmp_ps(a, a, _CMP_UNORD_Q)));
  }
}

}  // namespace

void fill_row_avx2(RowTable& t) {
  t.sum = f32_sum_avx2_u32;
  t.sum_sq_dev = f32_sum_sq_dev_avx2_u32;
  t.normalize = f32_normalize_avx2_u8;
  t.add3 = f32_add3_avx2_u8;
  t.sum_squares_lanes8 = f32_sum_squares_lanes8_avx2_r4;
  t.rms_scale = f32_rms_scale_avx2_u8;
  t.max = f32_extreme_avx2_u16<true>;
  t.min = f32_extreme_avx2_u16<false>;
  t.exp_sum = f32_exp_sum_avx2_rr2_p5_u16;
  t.scale = f32_scale_avx2_u8;
  t.sub2 = f32_sub2_avx2_u8;
  t.sum_f64 = f32_sum_f64_avx2_u8<kAccumulateSum>;
  t.sum_sq_f64 = f32_sum_f64_avx2_u8<kAccumulateSquare>;
  t.sum_abs_f64 = f32_sum_f64_avx2_u8<kAccumulateAbs>;
  t.accumulate_f64 = f32_accumulate_f64_avx2;
  t.max_into = f32_extreme_into_avx2_u8<true>;
  t.min_into = f32_extreme_into_avx2_u8<false>;
}

}  // namespace ember::kernels
