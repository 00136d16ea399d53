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

// Exact form of one block: (sum a . (codes - zp)) for tiles [0, NT), used where
// the factored form of block_dots is not finite (an infinite or NaN a, or an
// overflow the factored terms make and these would not).
template <int NT>
void block_dots_exact(const float* ab, int64_t len, const uint8_t* base, const NBitsPackedGeometry& g,
                      __m512* dots) {
  const int64_t code_bytes = g.block_size / 2 * 16;
  const __m512i low_nibble = _mm512_set1_epi32(0xF);
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
      const __m512i q =
          _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(base + t * g.tile_bytes + i * 16)));
      even[t] = _mm512_fmadd_ps(a0, _mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_and_si512(q, low_nibble)), zp[t]), even[t]);
      odd[t] = _mm512_fmadd_ps(a1, _mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(q, 4)), zp[t]), odd[t]);
    }
  }
  if (len & 1) {
    const __m512 a0 = _mm512_set1_ps(ab[len - 1]);
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) {
      const __m512i q = _mm512_cvtepu8_epi32(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + t * g.tile_bytes + pairs * 16)));
      even[t] = _mm512_fmadd_ps(a0, _mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_and_si512(q, low_nibble)), zp[t]), even[t]);
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) dots[t] = _mm512_add_ps(even[t], odd[t]);
}

// sum a . (codes - zp) = sum a . codes - zp * sum a: the zero point costs one FMA
// per column block instead of a subtract per code, and a nibble becomes a float
// by one vpermps over the table 0..15 (vpermps reads only the index's low 4
// bits, so the low nibble needs no mask).
template <int NT>
void block_dots(const float* ab, int64_t len, const uint8_t* base, const NBitsPackedGeometry& g, __m512* dots) {
  const int64_t code_bytes = g.block_size / 2 * 16;
  const __m512 codes_f32 = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  __m512 a_sum = _mm512_setzero_ps();
  for (int64_t i = 0; i < len; i += 16) {
    a_sum = _mm512_add_ps(a_sum, _mm512_maskz_loadu_ps(column_mask(len - i), ab + i));
  }
  const __m512 neg_a_sum = _mm512_set1_ps(-_mm512_reduce_add_ps(a_sum));
  __m512 even[NT], odd[NT];
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) {
    even[t] = _mm512_setzero_ps();
    odd[t] = _mm512_setzero_ps();
  }
  const int64_t pairs = len / 2;
  for (int64_t i = 0; i < pairs; ++i) {
    const __m512 a0 = _mm512_set1_ps(ab[2 * i]);
    const __m512 a1 = _mm512_set1_ps(ab[2 * i + 1]);
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) {
      const __m512i q =
          _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(base + t * g.tile_bytes + i * 16)));
      even[t] = _mm512_fmadd_ps(a0, _mm512_permutexvar_ps(q, codes_f32), even[t]);
      odd[t] = _mm512_fmadd_ps(a1, _mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), codes_f32), odd[t]);
    }
  }
  if (len & 1) {
    const __m512 a0 = _mm512_set1_ps(ab[len - 1]);
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) {
      const __m512i q = _mm512_cvtepu8_epi32(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + t * g.tile_bytes + pairs * 16)));
      even[t] = _mm512_fmadd_ps(a0, _mm512_permutexvar_ps(q, codes_f32), even[t]);
    }
  }
  __mmask16 finite = 0xffff;
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) {
    const __m512 zp = load_zero_points(base + t * g.tile_bytes + code_bytes + 64, g.float_zero_points);
    dots[t] = _mm512_fmadd_ps(zp, neg_a_sum, _mm512_add_ps(even[t], odd[t]));
    // fpclass 0x99: QNaN, SNaN, +Inf, -Inf.
    finite &= static_cast<__mmask16>(~_mm512_fpclass_ps_mask(dots[t], 0x99));
  }
  if (finite != 0xffff) block_dots_exact<NT>(ab, len, base, g, dots);
}

// y[t] += sum over the blocks of tile t of a . (codes - zp) * scale.
template <int NT>
void accumulate_tiles(const float* a, const uint8_t* tile0, const NBitsPackedGeometry& g, __m512* y) {
  const int64_t code_bytes = g.block_size / 2 * 16;
  for (int64_t b = 0; b < g.k_blocks; ++b) {
    const uint8_t* base = tile0 + b * g.block_bytes;
    const int64_t len = g.k - b * g.block_size < g.block_size ? g.k - b * g.block_size : g.block_size;
    __m512 dots[NT];
    block_dots<NT>(a + b * g.block_size, len, base, g, dots);
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) {
      y[t] = _mm512_fmadd_ps(dots[t], _mm512_loadu_ps(base + t * g.tile_bytes + code_bytes), y[t]);
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
