// 4-bit GEMV over packed column tiles, 16 columns a zmm. Up to four tiles run
// together so one broadcast of a[k] feeds four FMAs, and each tile keeps two
// chains (even and odd k) for eight independent FMA chains in flight.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/quant/nbits_ukernels.h"

namespace ember::kernels::quant {
namespace {

constexpr int kMaxTiles = 4;

__mmask16 column_mask(int64_t remaining) {
  return remaining >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << remaining) - 1u);
}

__m512 load_zero_points(const uint8_t* zps, bool float_zero_points) {
  if (float_zero_points) return _mm512_loadu_ps(zps);
  return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(zps))));
}

// y[t] += sum over the blocks of tile t of a . (codes - zp) * scale.
template <int NT>
void accumulate_tiles(const float* a, const uint8_t* tile0, const NBitsPackedGeometry& g, __m512* y) {
  const int64_t groups = g.block_size / 2;
  const int64_t code_bytes = groups * 16;
  const __m512i low_nibble = _mm512_set1_epi32(0xF);
  for (int64_t b = 0; b < g.k_blocks; ++b) {
    const uint8_t* base = tile0 + b * g.block_bytes;
    const float* ab = a + b * g.block_size;
    const int64_t len = g.k - b * g.block_size < g.block_size ? g.k - b * g.block_size : g.block_size;
    __m512 zp[NT], even[NT], odd[NT];
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) {
      zp[t] = load_zero_points(base + t * g.tile_bytes + code_bytes + 64, g.float_zero_points);
      even[t] = _mm512_setzero_ps();
      odd[t] = _mm512_setzero_ps();
    }
    const int64_t pairs = len / 2;
    for (int64_t i = 0; i < pairs; ++i) {
      const __m512 a0 = _mm512_set1_ps(ab[2 * i]);
      const __m512 a1 = _mm512_set1_ps(ab[2 * i + 1]);
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) {
        const __m512i q = _mm512_cvtepu8_epi32(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + t * g.tile_bytes + i * 16)));
        const __m512 lo = _mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_and_si512(q, low_nibble)), zp[t]);
        const __m512 hi = _mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(q, 4)), zp[t]);
        even[t] = _mm512_fmadd_ps(a0, lo, even[t]);
        odd[t] = _mm512_fmadd_ps(a1, hi, odd[t]);
      }
    }
    if (len & 1) {
      const __m512 a0 = _mm512_set1_ps(ab[len - 1]);
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) {
        const __m512i q = _mm512_cvtepu8_epi32(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + t * g.tile_bytes + pairs * 16)));
        const __m512 lo = _mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_and_si512(q, low_nibble)), zp[t]);
        even[t] = _mm512_fmadd_ps(a0, lo, even[t]);
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) {
      const __m512 scale = _mm512_loadu_ps(base + t * g.tile_bytes + code_bytes);
      y[t] = _mm512_fmadd_ps(_mm512_add_ps(even[t], odd[t]), scale, y[t]);
    }
  }
}

// Columns [16 * t0, min(16 * (t0 + NT), cols)) of the tiles at `tiles`.
template <int NT>
void gemv_tiles(const float* a, const uint8_t* tiles, const NBitsPackedGeometry& g, int64_t t0, int64_t cols,
                const float* bias, float* y) {
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) {
    const int64_t col = (t0 + t) * 16;
    acc[t] = bias ? _mm512_maskz_loadu_ps(column_mask(cols - col), bias + col) : _mm512_setzero_ps();
  }
  accumulate_tiles<NT>(a, tiles + t0 * g.tile_bytes, g, acc);
  for (int t = 0; t < NT; ++t) {
    const int64_t col = (t0 + t) * 16;
    _mm512_mask_storeu_ps(y + col, column_mask(cols - col), acc[t]);
  }
}

void f32_q4_gemv_avx512_t4(const float* a, const uint8_t* tiles, const NBitsPackedGeometry& g, int64_t cols,
                           const float* bias, float* y) {
  const int64_t num_tiles = (cols + 15) / 16;
  int64_t t = 0;
  for (; t + kMaxTiles <= num_tiles; t += kMaxTiles) gemv_tiles<kMaxTiles>(a, tiles, g, t, cols, bias, y);
  switch (num_tiles - t) {
    case 3:
      gemv_tiles<3>(a, tiles, g, t, cols, bias, y);
      break;
    case 2:
      gemv_tiles<2>(a, tiles, g, t, cols, bias, y);
      break;
    case 1:
      gemv_tiles<1>(a, tiles, g, t, cols, bias, y);
      break;
    default:
      break;
  }
}

}  // namespace

void fill_nbits_avx512(NBitsTable& t) { t.f32_q4_gemv = f32_q4_gemv_avx512_t4; }

}  // namespace ember::kernels::quant
