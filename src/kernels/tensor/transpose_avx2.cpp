// 8x8 register tiles for 2- and 4-byte elements and 4x4 for 8-byte ones, inside
// 64x64 blocks so the rows being read and the rows being written stay in L1.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/tensor/transpose_ukernels.h"

namespace ember::kernels::tensor_ops {
namespace {

constexpr int64_t kBlock = 64;

int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }

template <typename U>
void transpose_edge(const U* src, int64_t ss, U* dst, int64_t ds, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  for (int64_t i = i0; i < i1; ++i) {
    for (int64_t j = j0; j < j1; ++j) dst[j * ds + i] = src[i * ss + j];
  }
}

template <typename U, int64_t kTile, void (*Tile)(const U*, int64_t, U*, int64_t)>
void transpose_blocked(const void* src_v, int64_t ss, void* dst_v, int64_t ds, int64_t rows, int64_t cols) {
  const U* src = static_cast<const U*>(src_v);
  U* dst = static_cast<U*>(dst_v);
  for (int64_t i0 = 0; i0 < rows; i0 += kBlock) {
    const int64_t i1 = min_i64(rows, i0 + kBlock);
    for (int64_t j0 = 0; j0 < cols; j0 += kBlock) {
      const int64_t j1 = min_i64(cols, j0 + kBlock);
      int64_t i = i0;
      for (; i + kTile <= i1; i += kTile) {
        int64_t j = j0;
        for (; j + kTile <= j1; j += kTile) Tile(src + i * ss + j, ss, dst + j * ds + i, ds);
        transpose_edge(src, ss, dst, ds, i, i + kTile, j, j1);
      }
      transpose_edge(src, ss, dst, ds, i, i1, j0, j1);
    }
  }
}

void x32_tile8x8_avx2(const uint32_t* src, int64_t ss, uint32_t* dst, int64_t ds) {
  __m256 r[8];
  for (int k = 0; k < 8; ++k) r[k] = _mm256_loadu_ps(reinterpret_cast<const float*>(src + k * ss));
  __m256 t[8];
  for (int k = 0; k < 4; ++k) {
    t[2 * k] = _mm256_unpacklo_ps(r[2 * k], r[2 * k + 1]);
    t[2 * k + 1] = _mm256_unpackhi_ps(r[2 * k], r[2 * k + 1]);
  }
  __m256 u[8];
  for (int h = 0; h < 2; ++h) {
    u[4 * h + 0] = _mm256_shuffle_ps(t[4 * h + 0], t[4 * h + 2], 0x44);
    u[4 * h + 1] = _mm256_shuffle_ps(t[4 * h + 0], t[4 * h + 2], 0xEE);
    u[4 * h + 2] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0x44);
    u[4 * h + 3] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0xEE);
  }
  for (int k = 0; k < 4; ++k) {
    _mm256_storeu_ps(reinterpret_cast<float*>(dst + k * ds), _mm256_permute2f128_ps(u[k], u[k + 4], 0x20));
    _mm256_storeu_ps(reinterpret_cast<float*>(dst + (k + 4) * ds), _mm256_permute2f128_ps(u[k], u[k + 4], 0x31));
  }
}

void x16_tile8x8_avx2(const uint16_t* src, int64_t ss, uint16_t* dst, int64_t ds) {
  __m128i r[8];
  for (int k = 0; k < 8; ++k) r[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + k * ss));
  __m128i a[8];
  for (int k = 0; k < 4; ++k) {
    a[2 * k] = _mm_unpacklo_epi16(r[2 * k], r[2 * k + 1]);
    a[2 * k + 1] = _mm_unpackhi_epi16(r[2 * k], r[2 * k + 1]);
  }
  __m128i b[8];
  for (int h = 0; h < 2; ++h) {
    b[4 * h + 0] = _mm_unpacklo_epi32(a[4 * h + 0], a[4 * h + 2]);
    b[4 * h + 1] = _mm_unpackhi_epi32(a[4 * h + 0], a[4 * h + 2]);
    b[4 * h + 2] = _mm_unpacklo_epi32(a[4 * h + 1], a[4 * h + 3]);
    b[4 * h + 3] = _mm_unpackhi_epi32(a[4 * h + 1], a[4 * h + 3]);
  }
  for (int k = 0; k < 4; ++k) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * k * ds), _mm_unpacklo_epi64(b[k], b[k + 4]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (2 * k + 1) * ds), _mm_unpackhi_epi64(b[k], b[k + 4]));
  }
}

void x64_tile4x4_avx2(const uint64_t* src, int64_t ss, uint64_t* dst, int64_t ds) {
  __m256d r[4];
  for (int k = 0; k < 4; ++k) r[k] = _mm256_loadu_pd(reinterpret_cast<const double*>(src + k * ss));
  const __m256d t0 = _mm256_unpacklo_pd(r[0], r[1]);
  const __m256d t1 = _mm256_unpackhi_pd(r[0], r[1]);
  const __m256d t2 = _mm256_unpacklo_pd(r[2], r[3]);
  const __m256d t3 = _mm256_unpackhi_pd(r[2], r[3]);
  _mm256_storeu_pd(reinterpret_cast<double*>(dst), _mm256_permute2f128_pd(t0, t2, 0x20));
  _mm256_storeu_pd(reinterpret_cast<double*>(dst + ds), _mm256_permute2f128_pd(t1, t3, 0x20));
  _mm256_storeu_pd(reinterpret_cast<double*>(dst + 2 * ds), _mm256_permute2f128_pd(t0, t2, 0x31));
  _mm256_storeu_pd(reinterpret_cast<double*>(dst + 3 * ds), _mm256_permute2f128_pd(t1, t3, 0x31));
}

}  // namespace

void fill_transpose_avx2(TransposeTable& t) {
  t.x16 = transpose_blocked<uint16_t, 8, x16_tile8x8_avx2>;
  t.x32 = transpose_blocked<uint32_t, 8, x32_tile8x8_avx2>;
  t.x64 = transpose_blocked<uint64_t, 4, x64_tile4x4_avx2>;
}

}  // namespace ember::kernels::tensor_ops
