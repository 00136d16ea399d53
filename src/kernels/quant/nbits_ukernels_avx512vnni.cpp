// accuracy_level 4 over packed 4-bit tiles with AVX-512 VNNI: the low and high
// nibbles of a code octet are, per column lane, 4 consecutive k as unsigned
// bytes, so one vpdpbusd multiplies them by 4 int8 activations and adds into
// the column's int32 sum (at most 256 * 127 * 15 per block: no overflow).
// Up to 4 rows x 4 tiles share each decoded octet: 16 int32 accumulators; one
// row (decode) runs tile after tile instead (q8_q4_decode_tile).
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/quant/nbits_ukernels.h"

namespace ember::kernels::quant {
namespace {

constexpr int kMaxRows = 4;
constexpr int kMaxTiles = 4;

#include "kernels/quant/nbits_avx512.inc"

__m512i broadcast_4_bytes(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm512_set1_epi32(v);
}

// Rows [0, R) x tiles [0, NT) of y (already holding the bias) += every block.
// With at most 8 row-tile pairs (2 rows x 4 tiles) the f32 sums stay in
// registers across blocks; larger blocks of rows add into y per block.
template <int R, int NT>
void q8_q4_rows_tiles(const NBitsQ8Rows& a, const uint8_t* tiles, const NBitsPackedGeometry& g, int64_t col0,
                      int64_t cols, float* y, int64_t ldy) {
  constexpr bool kInRegisters = R * NT <= 8;
  const int64_t padded = g.k_blocks * g.block_size;
  const int64_t octets = g.block_size / kNBitsOctetK;
  const int64_t code_bytes = octets * 64;
  const __m512i low_nibbles = _mm512_set1_epi8(0x0F);
  __mmask16 mask[NT];
  __m512 out[kInRegisters ? R : 1][kInRegisters ? NT : 1];
  for (int t = 0; t < NT; ++t) {
    mask[t] = column_mask(cols - t * 16);
    if constexpr (kInRegisters) {
      for (int r = 0; r < R; ++r) out[r][t] = _mm512_maskz_loadu_ps(mask[t], y + r * ldy + col0 + t * 16);
    }
  }
  for (int64_t b = 0; b < g.k_blocks; ++b) {
    const uint8_t* base = tiles + b * g.block_bytes;
    __m512i acc[R][NT];
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < NT; ++t) acc[r][t] = _mm512_setzero_si512();
    for (int64_t o = 0; o < octets; ++o) {
      __m512i a_lo[R], a_hi[R];
      for (int r = 0; r < R; ++r) {
        const int8_t* qo = a.q + r * padded + b * g.block_size + o * kNBitsOctetK;
        a_lo[r] = broadcast_4_bytes(qo);
        a_hi[r] = broadcast_4_bytes(qo + 4);
      }
      for (int t = 0; t < NT; ++t) {
        const __m512i x = _mm512_loadu_si512(base + t * g.tile_bytes + o * 64);
        const __m512i lo = _mm512_and_si512(x, low_nibbles);
        const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(x, 4), low_nibbles);
        for (int r = 0; r < R; ++r) {
          acc[r][t] = _mm512_dpbusd_epi32(acc[r][t], lo, a_lo[r]);
          acc[r][t] = _mm512_dpbusd_epi32(acc[r][t], hi, a_hi[r]);
        }
      }
    }
    for (int t = 0; t < NT; ++t) {
      const __m512 scale = _mm512_loadu_ps(base + t * g.tile_bytes + code_bytes);
      const __m512 zp = load_zero_points(base + t * g.tile_bytes + code_bytes + 64, g.zero_points);
      for (int r = 0; r < R; ++r) {
        const __m512 s = _mm512_set1_ps(static_cast<float>(a.sums[r * g.k_blocks + b]));
        // Integers below 2^24: exact in f32, so this is float(dot - zp * sum) for integer zero points.
        const __m512 centered = _mm512_fnmadd_ps(zp, s, _mm512_cvtepi32_ps(acc[r][t]));
        const __m512 both_scales = _mm512_mul_ps(_mm512_set1_ps(a.scales[r * g.k_blocks + b]), scale);
        if constexpr (kInRegisters) {
          out[r][t] = _mm512_fmadd_ps(centered, both_scales, out[r][t]);
        } else {
          float* yr = y + r * ldy + col0 + t * 16;
          _mm512_mask_storeu_ps(yr, mask[t], _mm512_fmadd_ps(centered, both_scales, _mm512_maskz_loadu_ps(mask[t], yr)));
        }
      }
    }
  }
  if constexpr (kInRegisters) {
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < NT; ++t) _mm512_mask_storeu_ps(y + r * ldy + col0 + t * 16, mask[t], out[r][t]);
  }
}

// Decode (one row): y[0, cols) (holding the bias) += the row times one tile.
// Tiles run one after another, so a thread reads its weights as one linear
// stream, which the hardware prefetchers follow at the speed of a plain read.
// A /tmp loop over 128 MB of cold copies, one thread, K x N = 896 x 4864 and
// 4864 x 896, against an AVX-512 sum of the same bytes (31.7, 31.4 GB/s): this
// kernel 31.3, 29.3 GB/s; 8 tiles at once (8 streams, the kernel before) 20.8,
// 25.5; 2 tiles at once 16 GB/s. The low and high nibbles add into two int32
// chains, summed exactly before the float work (one chain, in one interleaved
// run at 896 x 4864: 23.8 against 30.5 GB/s). kOctets > 0 fixes the octets
// per block at compile time (block 32, the model builder's default: 4), which
// leaves the cold speed as it is and makes the in-cache speed 59 instead of
// 48 GB/s (896 x 4864, one thread). On an AVX-512 Xeon (Sapphire Rapids class)
// the prefetchers alone left one thread at 62 % of its read bandwidth in whole
// decode; each block prefetching the bytes 4 KiB ahead (kNBitsPrefetchBytes)
// took the cold 896 x 4864 case from 257 to 207 us (not re-measured on Zen 5).
template <int64_t kOctets>
void q8_q4_decode_tile(const NBitsQ8Rows& a, const uint8_t* tile, const NBitsPackedGeometry& g, int64_t cols,
                       float* y) {
  const int64_t octets = kOctets > 0 ? kOctets : g.block_size / kNBitsOctetK;
  const int64_t code_bytes = octets * 64;
  const __m512i low_nibbles = _mm512_set1_epi8(0x0F);
  const __mmask16 mask = column_mask(cols);
  __m512 out = _mm512_maskz_loadu_ps(mask, y);
  const int8_t* q = a.q;
  for (int64_t b = 0; b < g.k_blocks; ++b, tile += g.block_bytes, q += g.block_size) {
    for (int64_t off = 0; off < g.block_bytes; off += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(tile + kNBitsPrefetchBytes + off), _MM_HINT_T0);
    }
    __m512i lo_acc = _mm512_setzero_si512(), hi_acc = _mm512_setzero_si512();
    for (int64_t o = 0; o < octets; ++o) {
      const __m512i x = _mm512_loadu_si512(tile + o * 64);
      lo_acc = _mm512_dpbusd_epi32(lo_acc, _mm512_and_si512(x, low_nibbles), broadcast_4_bytes(q + o * kNBitsOctetK));
      hi_acc = _mm512_dpbusd_epi32(hi_acc, _mm512_and_si512(_mm512_srli_epi16(x, 4), low_nibbles),
                                   broadcast_4_bytes(q + o * kNBitsOctetK + 4));
    }
    const __m512 scale = _mm512_loadu_ps(tile + code_bytes);
    const __m512 zp = load_zero_points(tile + code_bytes + 64, g.zero_points);
    const __m512 s = _mm512_set1_ps(static_cast<float>(a.sums[b]));
    const __m512 centered = _mm512_fnmadd_ps(zp, s, _mm512_cvtepi32_ps(_mm512_add_epi32(lo_acc, hi_acc)));
    out = _mm512_fmadd_ps(centered, _mm512_mul_ps(_mm512_set1_ps(a.scales[b]), scale), out);
  }
  _mm512_mask_storeu_ps(y, mask, out);
}

// Rows [0, R) over tiles in groups of kMaxTiles: each decoded octet feeds R rows.
template <int R>
void q8_q4_rows_groups(const NBitsQ8Rows& a, const uint8_t* tiles, const NBitsPackedGeometry& g, int64_t num_tiles,
                       int64_t cols, float* y, int64_t ldy) {
  for (int64_t t = 0; t < num_tiles; t += kMaxTiles) {
    const uint8_t* tp = tiles + t * g.tile_bytes;
    const int64_t col0 = t * 16;
    switch (num_tiles - t < kMaxTiles ? num_tiles - t : kMaxTiles) {
      case 4:
        q8_q4_rows_tiles<R, 4>(a, tp, g, col0, cols - col0, y, ldy);
        break;
      case 3:
        q8_q4_rows_tiles<R, 3>(a, tp, g, col0, cols - col0, y, ldy);
        break;
      case 2:
        q8_q4_rows_tiles<R, 2>(a, tp, g, col0, cols - col0, y, ldy);
        break;
      default:
        q8_q4_rows_tiles<R, 1>(a, tp, g, col0, cols - col0, y, ldy);
        break;
    }
  }
}

template <int R>
void q8_q4_rows(const NBitsQ8Rows& a, const uint8_t* tiles, const NBitsPackedGeometry& g, int64_t cols, float* y,
                int64_t ldy) {
  const int64_t num_tiles = (cols + 15) / 16;
  if constexpr (R == 1) {
    const auto decode_tile = g.block_size == 4 * kNBitsOctetK ? q8_q4_decode_tile<4> : q8_q4_decode_tile<0>;
    for (int64_t t = 0; t < num_tiles; ++t) decode_tile(a, tiles + t * g.tile_bytes, g, cols - t * 16, y + t * 16);
  } else {
    q8_q4_rows_groups<R>(a, tiles, g, num_tiles, cols, y, ldy);
  }
}

void q8_q4_gemm_avx512vnni(const NBitsQ8Rows& a, int64_t rows, const uint8_t* tiles, const NBitsPackedGeometry& g,
                           int64_t cols, const float* bias, float* y, int64_t ldy) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < cols; j += 16) {
      const __mmask16 mask = column_mask(cols - j);
      _mm512_mask_storeu_ps(y + r * ldy + j, mask, bias ? _mm512_maskz_loadu_ps(mask, bias + j) : _mm512_setzero_ps());
    }
  }
  const int64_t padded = g.k_blocks * g.block_size;
  for (int64_t r = 0; r < rows; r += kMaxRows) {
    const NBitsQ8Rows at{a.q + r * padded, a.scales + r * g.k_blocks, a.sums + r * g.k_blocks};
    float* yr = y + r * ldy;
    switch (rows - r < kMaxRows ? rows - r : kMaxRows) {
      case 4:
        q8_q4_rows<4>(at, tiles, g, cols, yr, ldy);
        break;
      case 3:
        q8_q4_rows<3>(at, tiles, g, cols, yr, ldy);
        break;
      case 2:
        q8_q4_rows<2>(at, tiles, g, cols, yr, ldy);
        break;
      default:
        q8_q4_rows<1>(at, tiles, g, cols, yr, ldy);
        break;
    }
  }
}

}  // namespace

void fill_nbits_avx512vnni(NBitsTable& t) { t.q8_q4_gemm = q8_q4_gemm_avx512vnni; }

}  // namespace ember::kernels::quant
