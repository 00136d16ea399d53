// 4-bit kernels over packed column tiles with AVX2: a tile is two ymm halves of
// 8 columns. One tile at a time, so the accumulators, zero points and decode
// temporaries fit in the 16 ymm registers.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/quant/nbits_ukernels.h"

namespace ember::kernels::quant {
namespace {


// Lanes [0, remaining) of an 8-lane mask (remaining clamped to 0..8).
__m256i lane_mask(int64_t remaining) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const int32_t r = remaining < 0 ? 0 : remaining > 8 ? 8 : static_cast<int32_t>(remaining);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(r), lanes);
}

// Zero points of columns 8h .. 8h + 7.
__m256 load_zero_points(const uint8_t* zps, NBitsZeroPoints kind, int h) {
  switch (kind) {
    case NBitsZeroPoints::kF32:
      return _mm256_loadu_ps(reinterpret_cast<const float*>(zps) + 8 * h);
    case NBitsZeroPoints::kU8:
      return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(zps + 8 * h))));
    case NBitsZeroPoints::kDefault:
      break;
  }
  return _mm256_set1_ps(static_cast<float>(kNBitsDefaultZeroPoint));
}

// y[h] += sum over the blocks of the tile of a . (codes - zp) * scale, columns
// 8h .. 8h + 7; a block that K ends inside reads A from a zero-padded copy.
void accumulate_tile(const float* a, const uint8_t* tile, const NBitsPackedGeometry& g, __m256* y) {
  const int64_t code_bytes = g.block_size / kNBitsOctetK * 64;
  const __m256i low_nibble = _mm256_set1_epi32(0xF);
  alignas(32) float tail[kNBitsMaxPackedBlock];
  for (int64_t b = 0; b < g.k_blocks; ++b) {
    const uint8_t* base = tile + b * g.block_bytes;
    const int64_t len = g.k - b * g.block_size < g.block_size ? g.k - b * g.block_size : g.block_size;
    const float* ab = a + b * g.block_size;
    if (len < g.block_size) {
      for (int64_t i = 0; i < g.block_size; i += 8) _mm256_store_ps(tail + i, _mm256_maskload_ps(ab + i, lane_mask(len - i)));
      ab = tail;
    }
    __m256 zp[2], acc[2][2];
    for (int h = 0; h < 2; ++h) {
      zp[h] = load_zero_points(base + code_bytes + 64, g.zero_points, h);
      acc[h][0] = _mm256_setzero_ps();
      acc[h][1] = _mm256_setzero_ps();
    }
    const int64_t octets = (len + 7) / 8;
    for (int64_t o = 0; o < octets; ++o) {
      for (int h = 0; h < 2; ++h) {
        const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(base + o * 64 + h * 32));
        for (int j = 0; j < 8; ++j) {
          const int shift = (j % 4) * 8 + (j < 4 ? 0 : 4);
          const __m256 code = _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srli_epi32(x, shift), low_nibble));
          acc[h][j & 1] = _mm256_fmadd_ps(_mm256_broadcast_ss(ab + o * 8 + j), _mm256_sub_ps(code, zp[h]), acc[h][j & 1]);
        }
      }
    }
    const float* scales = reinterpret_cast<const float*>(base + code_bytes);
    for (int h = 0; h < 2; ++h) {
      y[h] = _mm256_fmadd_ps(_mm256_add_ps(acc[h][0], acc[h][1]), _mm256_loadu_ps(scales + 8 * h), y[h]);
    }
  }
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

void f32_q4_gemm_avx2(const float* a, int64_t lda, int64_t rows, const uint8_t* tiles, const NBitsPackedGeometry& g,
                      int64_t cols, const float* bias, float* y, int64_t ldy) {
  for (int64_t r = 0; r < rows; ++r) f32_q4_gemv_avx2_t1(a + r * lda, tiles, g, cols, bias, y + r * ldy);
}

int32_t horizontal_sum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

float horizontal_max(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// As the scalar quantizer: amax with a NaN/Inf flag, q = cvt(a * (127 / amax))
// rounding half to even (the default MXCSR mode), packed to bytes.
void quantize_rows_q8_avx2(const float* a, int64_t lda, int64_t rows, const NBitsPackedGeometry& g, int8_t* q,
                           float* scales, int32_t* sums) {
  const int64_t padded = g.k_blocks * g.block_size;
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 inf = _mm256_set1_ps(__builtin_inff());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < g.k_blocks; ++b) {
      const float* ab = a + r * lda + b * g.block_size;
      int8_t* qb = q + r * padded + b * g.block_size;
      const int64_t len = g.k - b * g.block_size < g.block_size ? g.k - b * g.block_size : g.block_size;
      __m256 amax = _mm256_setzero_ps();
      int nonfinite = 0;
      for (int64_t i = 0; i < g.block_size; i += 8) {
        const __m256 v = _mm256_and_ps(_mm256_maskload_ps(ab + i, lane_mask(len - i)), abs_mask);
        nonfinite |= _mm256_movemask_ps(_mm256_cmp_ps(v, inf, _CMP_NLT_UQ));
        amax = _mm256_max_ps(amax, v);
      }
      const float m = horizontal_max(amax);
      __m256i sum = _mm256_setzero_si256();
      // Denormal blocks overflow 127 / m: every code 0 then, as in the scalar quantizer.
      const float reciprocal = nonfinite == 0 && m != 0.0f ? 127.0f / m : 0.0f;
      const __m256 inverse = _mm256_set1_ps(reciprocal <= 3.402823466e38f ? reciprocal : 0.0f);
      for (int64_t i = 0; i < g.block_size; i += 8) {
        const __m256i v = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_maskload_ps(ab + i, lane_mask(len - i)), inverse));
        sum = _mm256_add_epi32(sum, v);
        const __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
        _mm_storel_epi64(reinterpret_cast<__m128i*>(qb + i), _mm_packs_epi16(words, words));
      }
      if (nonfinite != 0) {
        std::memset(qb, 0, static_cast<size_t>(g.block_size));
        sum = _mm256_setzero_si256();
      }
      scales[r * g.k_blocks + b] = nonfinite == 0 ? m / 127.0f : __builtin_nanf("");
      sums[r * g.k_blocks + b] = horizontal_sum(sum);
    }
  }
}

__m256i broadcast_4_bytes(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm256_set1_epi32(v);
}

// vpmaddubsw of codes (0..15) and int8 activations (|q| <= 127) makes int16
// pairs of at most 2 * 15 * 127, the low and high nibble pairs add to at most
// 7620, and four octets of those to at most 30480, still inside int16: vpmaddwd
// by ones widens to int32 once per four octets instead of once per octet.
constexpr int64_t kOctetsPerWiden = 4;

// One row, one tile (decode), both ymm halves in one pass. kOctets > 0 fixes the octets per block at compile time (block 32,
// the model builder's default: 4). Both: in cache 114 -> 108 us at 896 x 4864,
// one thread (EMBER_ISA=avx2 on an AVX-512 Xeon). Each block prefetches the
// bytes 4 KiB ahead (kNBitsPrefetchBytes): cold 330 -> 227 us there, where the
// hardware prefetchers alone left a single thread at 71 % of its read bandwidth.
template <int64_t kOctets>
void q8_q4_row_tile(const int8_t* q, const float* a_scales, const int32_t* a_sums, const uint8_t* tile,
                    const NBitsPackedGeometry& g, int64_t cols, float* y) {
  const int64_t octets = kOctets > 0 ? kOctets : g.block_size / kNBitsOctetK;
  const int64_t code_bytes = octets * 64;
  const __m256i low_nibbles = _mm256_set1_epi8(0x0F);
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i m0 = lane_mask(cols), m1 = lane_mask(cols - 8);
  __m256 out[2] = {_mm256_maskload_ps(y, m0), _mm256_maskload_ps(y + 8, m1)};
  for (int64_t b = 0; b < g.k_blocks; ++b) {
    const uint8_t* base = tile + b * g.block_bytes;
    for (int64_t off = 0; off < g.block_bytes; off += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(base + kNBitsPrefetchBytes + off), _MM_HINT_T0);
    }
    __m256i acc[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
    for (int64_t o0 = 0; o0 < octets; o0 += kOctetsPerWiden) {
      __m256i pairs[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
      for (int64_t o = o0; o < o0 + kOctetsPerWiden && o < octets; ++o) {
        const int8_t* qo = q + b * g.block_size + o * kNBitsOctetK;
        const __m256i a_lo = broadcast_4_bytes(qo), a_hi = broadcast_4_bytes(qo + 4);
        for (int h = 0; h < 2; ++h) {
          const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(base + o * 64 + h * 32));
          const __m256i lo = _mm256_and_si256(x, low_nibbles);
          const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(x, 4), low_nibbles);
          pairs[h] = _mm256_add_epi16(pairs[h], _mm256_add_epi16(_mm256_maddubs_epi16(lo, a_lo),
                                                                 _mm256_maddubs_epi16(hi, a_hi)));
        }
      }
      for (int h = 0; h < 2; ++h) acc[h] = _mm256_add_epi32(acc[h], _mm256_madd_epi16(pairs[h], ones));
    }
    const float* scales = reinterpret_cast<const float*>(base + code_bytes);
    const __m256 s = _mm256_set1_ps(static_cast<float>(a_sums[b]));
    const __m256 a_scale = _mm256_set1_ps(a_scales[b]);
    for (int h = 0; h < 2; ++h) {
      const __m256 zp = load_zero_points(base + code_bytes + 64, g.zero_points, h);
      const __m256 centered = _mm256_fnmadd_ps(zp, s, _mm256_cvtepi32_ps(acc[h]));
      out[h] = _mm256_fmadd_ps(centered, _mm256_mul_ps(a_scale, _mm256_loadu_ps(scales + 8 * h)), out[h]);
    }
  }
  _mm256_maskstore_ps(y, m0, out[0]);
  _mm256_maskstore_ps(y + 8, m1, out[1]);
}

// R rows (prefill), one tile: each decoded octet feeds R rows, one ymm half of
// the tile at a time so that R = 4 rows' accumulators, int16 pairs and outputs
// fit the 16 ymm registers (the second half reads the tile again, from cache).
// The same integer sums and float operations per row as q8_q4_row_tile.
// pp512 of the Qwen2.5-0.5B-shaped int4 folder, EMBER_ISA=avx2 on an AVX-512
// Xeon: 89 -> 142 tokens/s at one thread, 148 -> 217 at two (one row at a time
// before).
template <int64_t kOctets, int R>
void q8_q4_rows_tile(const NBitsQ8Rows& a, const uint8_t* tile, const NBitsPackedGeometry& g, int64_t cols, float* y,
                     int64_t ldy) {
  const int64_t octets = kOctets > 0 ? kOctets : g.block_size / kNBitsOctetK;
  const int64_t code_bytes = octets * 64, padded = g.k_blocks * g.block_size;
  const __m256i low_nibbles = _mm256_set1_epi8(0x0F);
  const __m256i ones = _mm256_set1_epi16(1);
  for (int h = 0; h < 2; ++h) {
    const __m256i mask = lane_mask(cols - 8 * h);
    __m256 out[R];
    for (int r = 0; r < R; ++r) out[r] = _mm256_maskload_ps(y + r * ldy + 8 * h, mask);
    for (int64_t b = 0; b < g.k_blocks; ++b) {
      const uint8_t* base = tile + b * g.block_bytes;
      __m256i acc[R];
      for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_si256();
      for (int64_t o0 = 0; o0 < octets; o0 += kOctetsPerWiden) {
        __m256i pairs[R];
        for (int r = 0; r < R; ++r) pairs[r] = _mm256_setzero_si256();
        for (int64_t o = o0; o < o0 + kOctetsPerWiden && o < octets; ++o) {
          const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(base + o * 64 + h * 32));
          const __m256i lo = _mm256_and_si256(x, low_nibbles);
          const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(x, 4), low_nibbles);
          for (int r = 0; r < R; ++r) {
            const int8_t* qo = a.q + r * padded + b * g.block_size + o * kNBitsOctetK;
            pairs[r] = _mm256_add_epi16(pairs[r], _mm256_add_epi16(_mm256_maddubs_epi16(lo, broadcast_4_bytes(qo)),
                                                                   _mm256_maddubs_epi16(hi, broadcast_4_bytes(qo + 4))));
          }
        }
        for (int r = 0; r < R; ++r) acc[r] = _mm256_add_epi32(acc[r], _mm256_madd_epi16(pairs[r], ones));
      }
      const __m256 scale = _mm256_loadu_ps(reinterpret_cast<const float*>(base + code_bytes) + 8 * h);
      const __m256 zp = load_zero_points(base + code_bytes + 64, g.zero_points, h);
      for (int r = 0; r < R; ++r) {
        const __m256 s = _mm256_set1_ps(static_cast<float>(a.sums[r * g.k_blocks + b]));
        const __m256 centered = _mm256_fnmadd_ps(zp, s, _mm256_cvtepi32_ps(acc[r]));
        out[r] = _mm256_fmadd_ps(centered, _mm256_mul_ps(_mm256_set1_ps(a.scales[r * g.k_blocks + b]), scale), out[r]);
      }
    }
    for (int r = 0; r < R; ++r) _mm256_maskstore_ps(y + r * ldy + 8 * h, mask, out[r]);
  }
}

template <int64_t kOctets, int R>
void q8_q4_rows(const NBitsQ8Rows& a, const uint8_t* tiles, const NBitsPackedGeometry& g, int64_t cols, float* y,
                int64_t ldy) {
  for (int64_t col = 0; col < cols; col += 16) {
    const uint8_t* tile = tiles + col / 16 * g.tile_bytes;
    if constexpr (R == 1) {
      q8_q4_row_tile<kOctets>(a.q, a.scales, a.sums, tile, g, cols - col, y + col);
    } else {
      q8_q4_rows_tile<kOctets, R>(a, tile, g, cols - col, y + col, ldy);
    }
  }
}

template <int64_t kOctets>
void q8_q4_gemm_octets(const NBitsQ8Rows& a, int64_t rows, const uint8_t* tiles, const NBitsPackedGeometry& g,
                       int64_t cols, float* y, int64_t ldy) {
  const int64_t padded = g.k_blocks * g.block_size;
  for (int64_t r = 0; r < rows; r += 4) {
    const NBitsQ8Rows at{a.q + r * padded, a.scales + r * g.k_blocks, a.sums + r * g.k_blocks};
    float* yr = y + r * ldy;
    switch (rows - r < 4 ? rows - r : 4) {
      case 4:
        q8_q4_rows<kOctets, 4>(at, tiles, g, cols, yr, ldy);
        break;
      case 3:
        q8_q4_rows<kOctets, 3>(at, tiles, g, cols, yr, ldy);
        break;
      case 2:
        q8_q4_rows<kOctets, 2>(at, tiles, g, cols, yr, ldy);
        break;
      default:
        q8_q4_rows<kOctets, 1>(at, tiles, g, cols, yr, ldy);
        break;
    }
  }
}

void q8_q4_gemm_avx2(const NBitsQ8Rows& a, int64_t rows, const uint8_t* tiles, const NBitsPackedGeometry& g,
                     int64_t cols, const float* bias, float* y, int64_t ldy) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < cols; ++j) y[r * ldy + j] = bias ? bias[j] : 0.0f;
  }
  if (g.block_size == 4 * kNBitsOctetK) {
    q8_q4_gemm_octets<4>(a, rows, tiles, g, cols, y, ldy);
  } else {
    q8_q4_gemm_octets<0>(a, rows, tiles, g, cols, y, ldy);
  }
}

}  // namespace

void fill_nbits_avx2(NBitsTable& t) {
  t.f32_q4_gemv = f32_q4_gemv_avx2_t1;
  t.f32_q4_gemm = f32_q4_gemm_avx2;
  t.quantize_rows_q8 = quantize_rows_q8_avx2;
  t.q8_q4_gemm = q8_q4_gemm_avx2;
}

}  // namespace ember::kernels::quant
