// 12x32 tiles: 24 zmm accumulators (two per row), a broadcast of A from memory
// feeding two FMAs per row and k-step. A single row (GEMV) instead runs four
// k-chains per vector, so eight independent FMA chains hide the FMA latency
// while the packed panel streams through.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/matmul/sgemm_ukernels.h"

namespace ember::kernels::sgemm {
namespace {

constexpr int kMr = 12;
constexpr int kNr = 32;

__mmask16 lane_mask(int64_t remaining) {
  if (remaining <= 0) return 0;
  return remaining >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << remaining) - 1u);
}

void store_vector(float* c, __mmask16 m, __m512 acc, __m512 alpha, bool accumulate) {
  if (m == 0) return;
  const __m512 v = accumulate ? _mm512_fmadd_ps(alpha, acc, _mm512_maskz_loadu_ps(m, c)) : _mm512_mul_ps(alpha, acc);
  _mm512_mask_storeu_ps(c, m, v);
}

template <int R>
void tile_rows(int64_t k, const float* a, const float* b, float* c, int64_t ldc, int64_t cols, float alpha,
               bool accumulate) {
  __m512 lo[R], hi[R];
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) {
    lo[r] = _mm512_setzero_ps();
    hi[r] = _mm512_setzero_ps();
  }
  for (int64_t kk = 0; kk < k; ++kk) {
    const __m512 b0 = _mm512_loadu_ps(b + kk * kNr);
    const __m512 b1 = _mm512_loadu_ps(b + kk * kNr + 16);
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(a[kk * R + r]);
      lo[r] = _mm512_fmadd_ps(av, b0, lo[r]);
      hi[r] = _mm512_fmadd_ps(av, b1, hi[r]);
    }
  }
  const __m512 va = _mm512_set1_ps(alpha);
  const __mmask16 m0 = lane_mask(cols), m1 = lane_mask(cols - 16);
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) {
    store_vector(c + r * ldc, m0, lo[r], va, accumulate);
    store_vector(c + r * ldc + 16, m1, hi[r], va, accumulate);
  }
}

// One row: four k-chains per vector, summed in a fixed order at the end.
void tile_row(int64_t k, const float* a, const float* b, float* c, int64_t cols, float alpha, bool accumulate) {
  __m512 lo[4], hi[4];
#pragma GCC unroll 4
  for (int u = 0; u < 4; ++u) {
    lo[u] = _mm512_setzero_ps();
    hi[u] = _mm512_setzero_ps();
  }
  int64_t kk = 0;
  for (; kk + 4 <= k; kk += 4) {
#pragma GCC unroll 4
    for (int u = 0; u < 4; ++u) {
      const __m512 av = _mm512_set1_ps(a[kk + u]);
      lo[u] = _mm512_fmadd_ps(av, _mm512_loadu_ps(b + (kk + u) * kNr), lo[u]);
      hi[u] = _mm512_fmadd_ps(av, _mm512_loadu_ps(b + (kk + u) * kNr + 16), hi[u]);
    }
  }
  for (int u = 0; kk < k; ++kk, ++u) {
    const __m512 av = _mm512_set1_ps(a[kk]);
    lo[u] = _mm512_fmadd_ps(av, _mm512_loadu_ps(b + kk * kNr), lo[u]);
    hi[u] = _mm512_fmadd_ps(av, _mm512_loadu_ps(b + kk * kNr + 16), hi[u]);
  }
  const __m512 s0 = _mm512_add_ps(_mm512_add_ps(lo[0], lo[1]), _mm512_add_ps(lo[2], lo[3]));
  const __m512 s1 = _mm512_add_ps(_mm512_add_ps(hi[0], hi[1]), _mm512_add_ps(hi[2], hi[3]));
  const __m512 va = _mm512_set1_ps(alpha);
  store_vector(c, lane_mask(cols), s0, va, accumulate);
  store_vector(c + 16, lane_mask(cols - 16), s1, va, accumulate);
}

void f32_tile_avx512_12x32(int64_t k, const float* a, const float* b, float* c, int64_t ldc, int64_t rows,
                           int64_t cols, float alpha, bool accumulate) {
  switch (rows) {
    case 1: return tile_row(k, a, b, c, cols, alpha, accumulate);
    case 2: return tile_rows<2>(k, a, b, c, ldc, cols, alpha, accumulate);
    case 3: return tile_rows<3>(k, a, b, c, ldc, cols, alpha, accumulate);
    case 4: return tile_rows<4>(k, a, b, c, ldc, cols, alpha, accumulate);
    case 5: return tile_rows<5>(k, a, b, c, ldc, cols, alpha, accumulate);
    case 6: return tile_rows<6>(k, a, b, c, ldc, cols, alpha, accumulate);
    case 7: return tile_rows<7>(k, a, b, c, ldc, cols, alpha, accumulate);
    case 8: return tile_rows<8>(k, a, b, c, ldc, cols, alpha, accumulate);
    case 9: return tile_rows<9>(k, a, b, c, ldc, cols, alpha, accumulate);
    case 10: return tile_rows<10>(k, a, b, c, ldc, cols, alpha, accumulate);
    case 11: return tile_rows<11>(k, a, b, c, ldc, cols, alpha, accumulate);
    case 12: return tile_rows<12>(k, a, b, c, ldc, cols, alpha, accumulate);
    default: return;
  }
}

// Strips of 64 columns (four zmm accumulators) walking down the rows of B.
void f32_gemv_rows_avx512_u64(int64_t k, const float* a, const float* b, int64_t ldb, float* y, int64_t n,
                              float alpha, bool accumulate) {
  const __m512 va = _mm512_set1_ps(alpha);
  for (int64_t j0 = 0; j0 < n; j0 += 64) {
    const __mmask16 m[4] = {lane_mask(n - j0), lane_mask(n - j0 - 16), lane_mask(n - j0 - 32),
                            lane_mask(n - j0 - 48)};
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int64_t kk = 0; kk < k; ++kk) {
      const __m512 av = _mm512_set1_ps(a[kk]);
      const float* bk = b + kk * ldb + j0;
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) acc[v] = _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(m[v], bk + 16 * v), acc[v]);
    }
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) store_vector(y + j0 + 16 * v, m[v], acc[v], va, accumulate);
  }
}

}  // namespace

void fill_sgemm_avx512(SgemmTable& t) {
  t.mr = kMr;
  t.nr = kNr;
  t.tile = f32_tile_avx512_12x32;
  t.gemv_rows = f32_gemv_rows_avx512_u64;
}

}  // namespace ember::kernels::sgemm
