// 6x16 tiles: 12 ymm accumulators (two per row), two B loads and one broadcast
// per row and k-step, 15 of the 16 ymm registers. A single row (GEMV) runs four
// k-chains per vector instead: eight independent FMA chains.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/matmul/sgemm_ukernels.h"

namespace ember::kernels::sgemm {
namespace {

constexpr int kMr = 6;
constexpr int kNr = 16;

// Lanes [0, remaining) set, for maskload/maskstore.
__m256i lane_mask(int64_t remaining) {
  const int32_t r = remaining <= 0 ? 0 : (remaining >= 8 ? 8 : static_cast<int32_t>(remaining));
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(r), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

void store_vector(float* c, int64_t remaining, __m256 acc, __m256 alpha, bool accumulate) {
  if (remaining <= 0) return;
  if (remaining >= 8) {
    _mm256_storeu_ps(c, accumulate ? _mm256_fmadd_ps(alpha, acc, _mm256_loadu_ps(c)) : _mm256_mul_ps(alpha, acc));
    return;
  }
  const __m256i m = lane_mask(remaining);
  const __m256 v = accumulate ? _mm256_fmadd_ps(alpha, acc, _mm256_maskload_ps(c, m)) : _mm256_mul_ps(alpha, acc);
  _mm256_maskstore_ps(c, m, v);
}

template <int R>
void tile_rows(int64_t k, const float* a, const float* b, float* c, int64_t ldc, int64_t cols, float alpha,
               bool accumulate) {
  __m256 lo[R], hi[R];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    lo[r] = _mm256_setzero_ps();
    hi[r] = _mm256_setzero_ps();
  }
  for (int64_t kk = 0; kk < k; ++kk) {
    const __m256 b0 = _mm256_loadu_ps(b + kk * kNr);
    const __m256 b1 = _mm256_loadu_ps(b + kk * kNr + 8);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + kk * R + r);
      lo[r] = _mm256_fmadd_ps(av, b0, lo[r]);
      hi[r] = _mm256_fmadd_ps(av, b1, hi[r]);
    }
  }
  const __m256 va = _mm256_set1_ps(alpha);
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    store_vector(c + r * ldc, cols, lo[r], va, accumulate);
    store_vector(c + r * ldc + 8, cols - 8, hi[r], va, accumulate);
  }
}

void tile_row(int64_t k, const float* a, const float* b, float* c, int64_t cols, float alpha, bool accumulate) {
  __m256 lo[4], hi[4];
#pragma GCC unroll 4
  for (int u = 0; u < 4; ++u) {
    lo[u] = _mm256_setzero_ps();
    hi[u] = _mm256_setzero_ps();
  }
  int64_t kk = 0;
  for (; kk + 4 <= k; kk += 4) {
#pragma GCC unroll 4
    for (int u = 0; u < 4; ++u) {
      const __m256 av = _mm256_broadcast_ss(a + kk + u);
      lo[u] = _mm256_fmadd_ps(av, _mm256_loadu_ps(b + (kk + u) * kNr), lo[u]);
      hi[u] = _mm256_fmadd_ps(av, _mm256_loadu_ps(b + (kk + u) * kNr + 8), hi[u]);
    }
  }
  for (int u = 0; kk < k; ++kk, ++u) {
    const __m256 av = _mm256_broadcast_ss(a + kk);
    lo[u] = _mm256_fmadd_ps(av, _mm256_loadu_ps(b + kk * kNr), lo[u]);
    hi[u] = _mm256_fmadd_ps(av, _mm256_loadu_ps(b + kk * kNr + 8), hi[u]);
  }
  const __m256 s0 = _mm256_add_ps(_mm256_add_ps(lo[0], lo[1]), _mm256_add_ps(lo[2], lo[3]));
  const __m256 s1 = _mm256_add_ps(_mm256_add_ps(hi[0], hi[1]), _mm256_add_ps(hi[2], hi[3]));
  const __m256 va = _mm256_set1_ps(alpha);
  store_vector(c, cols, s0, va, accumulate);
  store_vector(c + 8, cols - 8, s1, va, accumulate);
}

void f32_tile_avx2_6x16(int64_t k, const float* a, const float* b, float* c, int64_t ldc, int64_t rows, int64_t cols,
                        float alpha, bool accumulate) {
  switch (rows) {
    case 1: return tile_row(k, a, b, c, cols, alpha, accumulate);
    case 2: return tile_rows<2>(k, a, b, c, ldc, cols, alpha, accumulate);
    case 3: return tile_rows<3>(k, a, b, c, ldc, cols, alpha, accumulate);
    case 4: return tile_rows<4>(k, a, b, c, ldc, cols, alpha, accumulate);
    case 5: return tile_rows<5>(k, a, b, c, ldc, cols, alpha, accumulate);
    case 6: return tile_rows<6>(k, a, b, c, ldc, cols, alpha, accumulate);
    default: return;
  }
}

// Strips of 32 columns (four ymm accumulators) walking down the rows of B.
void f32_gemv_rows_avx2_u32(int64_t k, const float* a, const float* b, int64_t ldb, float* y, int64_t n, float alpha,
                            bool accumulate) {
  const __m256 va = _mm256_set1_ps(alpha);
  for (int64_t j0 = 0; j0 < n; j0 += 32) {
    __m256i m[4];
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) m[v] = lane_mask(n - j0 - 8 * v);
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t kk = 0; kk < k; ++kk) {
      const __m256 av = _mm256_broadcast_ss(a + kk);
      const float* bk = b + kk * ldb + j0;
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) acc[v] = _mm256_fmadd_ps(av, _mm256_maskload_ps(bk + 8 * v, m[v]), acc[v]);
    }
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) store_vector(y + j0 + 8 * v, n - j0 - 8 * v, acc[v], va, accumulate);
  }
}

}  // namespace

void fill_sgemm_avx2(SgemmTable& t) {
  t.mr = kMr;
  t.nr = kNr;
  t.tile = f32_tile_avx2_6x16;
  t.gemv_rows = f32_gemv_rows_avx2_u32;
}

}  // namespace ember::kernels::sgemm
