// 4-bit GEMV over packed column tiles, a tile as two ymm halves of 8 columns.
// One tile at a time, so its 8 accumulators, 2 zero points and the decode
// temporaries fit in the 16 ymm registers.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/quant/nbits_ukernels.h"

namespace ember::kernels::quant {
namespace {

__m256 load_zero_points(const uint8_t* zps, bool float_zero_points) {
  if (float_zero_points) return _mm256_loadu_ps(reinterpret_cast<const float*>(zps));
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(zps))));
}

__m256i load_codes(const uint8_t* p) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}

// y[h] += sum over the blocks of the tile of a . (codes - zp) * scale, columns
// 8h .. 8h + 7.
void accumulate_tile(const float* a, const uint8_t* tile, const NBitsPackedGeometry& g, __m256* y) {
  const int64_t code_bytes = g.block_size / 2 * 16;
  const int64_t zp_step = g.float_zero_points ? 32 : 8;
  const __m256i low_nibble = _mm256_set1_epi32(0xF);
  for (int64_t b = 0; b < g.k_blocks; ++b) {
    const uint8_t* base = tile + b * g.block_bytes;
    const float* ab = a + b * g.block_size;
    const int64_t len = g.k - b * g.block_size < g.block_size ? g.k - b * g.block_size : g.block_size;
    const __m256 zp0 = load_zero_points(base + code_bytes + 64, g.float_zero_points);
    const __m256 zp1 = load_zero_points(base + code_bytes + 64 + zp_step, g.float_zero_points);
    __m256 even0 = _mm256_setzero_ps(), even1 = _mm256_setzero_ps();
    __m256 odd0 = _mm256_setzero_ps(), odd1 = _mm256_setzero_ps();
    const int64_t pairs = len / 2;
    for (int64_t i = 0; i < pairs; ++i) {
      const __m256 a0 = _mm256_broadcast_ss(ab + 2 * i);
      const __m256 a1 = _mm256_broadcast_ss(ab + 2 * i + 1);
      const __m256i q0 = load_codes(base + i * 16);
      const __m256i q1 = load_codes(base + i * 16 + 8);
      even0 = _mm256_fmadd_ps(a0, _mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_and_si256(q0, low_nibble)), zp0), even0);
      even1 = _mm256_fmadd_ps(a0, _mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_and_si256(q1, low_nibble)), zp1), even1);
      odd0 = _mm256_fmadd_ps(a1, _mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(q0, 4)), zp0), odd0);
      odd1 = _mm256_fmadd_ps(a1, _mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(q1, 4)), zp1), odd1);
    }
    if (len & 1) {
      const __m256 a0 = _mm256_broadcast_ss(ab + len - 1);
      const __m256i q0 = load_codes(base + pairs * 16);
      const __m256i q1 = load_codes(base + pairs * 16 + 8);
      even0 = _mm256_fmadd_ps(a0, _mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_and_si256(q0, low_nibble)), zp0), even0);
      even1 = _mm256_fmadd_ps(a0, _mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_and_si256(q1, low_nibble)), zp1), even1);
    }
    const float* scales = reinterpret_cast<const float*>(base + code_bytes);
    y[0] = _mm256_fmadd_ps(_mm256_add_ps(even0, odd0), _mm256_loadu_ps(scales), y[0]);
    y[1] = _mm256_fmadd_ps(_mm256_add_ps(even1, odd1), _mm256_loadu_ps(scales + 8), y[1]);
  }
}

// Lanes [0, remaining) of an 8-lane mask (remaining clamped to 0..8).
__m256i lane_mask(int64_t remaining) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const int32_t r = remaining < 0 ? 0 : remaining > 8 ? 8 : static_cast<int32_t>(remaining);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(r), lanes);
}

void f32_q4_gemv_avx2_t1(const float* a, const uint8_t* tiles, const NBitsPackedGeometry& g, int64_t cols,
                         const float* bias, float* y) {
  for (int64_t col = 0; col < cols; col += 16) {
    const __m256i m0 = lane_mask(cols - col);
    const __m256i m1 = lane_mask(cols - col - 8);
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    if (bias) {
      acc[0] = _mm256_maskload_ps(bias + col, m0);
      acc[1] = _mm256_maskload_ps(bias + col + 8, m1);
    }
    accumulate_tile(a, tiles + col / 16 * g.tile_bytes, g, acc);
    _mm256_maskstore_ps(y + col, m0, acc[0]);
    _mm256_maskstore_ps(y + col + 8, m1, acc[1]);
  }
}

}  // namespace

void fill_nbits_avx2(NBitsTable& t) { t.f32_q4_gemv = f32_q4_gemv_avx2_t1; }

}  // namespace ember::kernels::quant
