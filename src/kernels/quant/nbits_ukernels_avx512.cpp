// 4-bit GEMV over packed column tiles, 16 columns a zmm, and the int8
// quantization of A for accuracy_level 4. Up to four tiles run together so one
// broadcast of a[k] feeds four FMAs; each tile keeps two chains (low and high
// nibbles) for eight independent FMA chains in flight.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/quant/nbits_ukernels.h"

namespace ember::kernels::quant {
namespace {

constexpr int kMaxTiles = 4;

#include "kernels/quant/nbits_avx512.inc"

// The nibbles of k = 8o + j (low, j < 4) or 8o + j (high, j >= 4) of an octet,
// one per 32-bit lane in the low 4 bits (higher bits are garbage).
template <int J>
__m512i nibbles(__m512i octet) {
  constexpr int kShift = (J % 4) * 8 + (J < 4 ? 0 : 4);
  if constexpr (kShift == 0) {
    return octet;
  } else {
    return _mm512_srli_epi32(octet, kShift);
  }
}

// Exact form of one block: sum a . (codes - zp) for tiles [0, NT), used where
// the factored form of block_dots is not finite (an infinite or NaN a, or an
// overflow the factored terms make and these would not).
template <int NT>
void block_dots_exact(const float* ab, int64_t octets, const uint8_t* base, const NBitsPackedGeometry& g,
                      const __m512* zp, __m512* dots) {
  const __m512i low_nibble = _mm512_set1_epi32(0xF);
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t o = 0; o < octets; ++o) {
    for (int t = 0; t < NT; ++t) {
      const __m512i x = _mm512_loadu_si512(base + t * g.tile_bytes + o * 64);
      for (int j = 0; j < 8; ++j) {
        const int shift = (j % 4) * 8 + (j < 4 ? 0 : 4);
        const __m512 code = _mm512_cvtepi32_ps(_mm512_and_si512(_mm512_srli_epi32(x, shift), low_nibble));
        acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(ab[o * 8 + j]), _mm512_sub_ps(code, zp[t]), acc[t]);
      }
    }
  }
  for (int t = 0; t < NT; ++t) dots[t] = acc[t];
}

// sum a . (codes - zp) = sum a . codes - zp * sum a: the zero point costs one FMA
// per column block instead of a subtract per code, and a nibble becomes a float
// by one vpermps over the table 0..15 (vpermps reads only the index's low 4
// bits, so no mask is needed).
template <int NT>
void block_dots(const float* ab, int64_t octets, const uint8_t* base, const NBitsPackedGeometry& g, __m512* dots) {
  const __m512 codes_f32 = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  __m512 a_sum = _mm512_setzero_ps();
  for (int64_t i = 0; i < octets * 8; i += 16) {
    a_sum = _mm512_add_ps(a_sum, _mm512_maskz_loadu_ps(column_mask(octets * 8 - i), ab + i));
  }
  const __m512 neg_a_sum = _mm512_set1_ps(-_mm512_reduce_add_ps(a_sum));
  __m512 low[NT], high[NT];
  for (int t = 0; t < NT; ++t) {
    low[t] = _mm512_setzero_ps();
    high[t] = _mm512_setzero_ps();
  }
  for (int64_t o = 0; o < octets; ++o) {
    const float* ao = ab + o * 8;
    __m512i x[NT];
    for (int t = 0; t < NT; ++t) x[t] = _mm512_loadu_si512(base + t * g.tile_bytes + o * 64);
#define EMBER_NBITS_STEP(J)                                                                                      \
  {                                                                                                            \
    const __m512 a_lo = _mm512_set1_ps(ao[J]);                                                                 \
    const __m512 a_hi = _mm512_set1_ps(ao[J + 4]);                                                             \
    for (int t = 0; t < NT; ++t) {                                                                             \
      low[t] = _mm512_fmadd_ps(a_lo, _mm512_permutexvar_ps(nibbles<J>(x[t]), codes_f32), low[t]);              \
      high[t] = _mm512_fmadd_ps(a_hi, _mm512_permutexvar_ps(nibbles<J + 4>(x[t]), codes_f32), high[t]);        \
    }                                                                                                          \
  }
    EMBER_NBITS_STEP(0)
    EMBER_NBITS_STEP(1)
    EMBER_NBITS_STEP(2)
    EMBER_NBITS_STEP(3)
#undef EMBER_NBITS_STEP
  }
  const int64_t code_bytes = g.block_size / kNBitsOctetK * 64;
  __m512 zp[NT];
  __mmask16 finite = 0xffff;
  for (int t = 0; t < NT; ++t) {
    zp[t] = load_zero_points(base + t * g.tile_bytes + code_bytes + 64, g.zero_points);
    dots[t] = _mm512_fmadd_ps(zp[t], neg_a_sum, _mm512_add_ps(low[t], high[t]));
    // fpclass 0x99: QNaN, SNaN, +Inf, -Inf.
    finite &= static_cast<__mmask16>(~_mm512_fpclass_ps_mask(dots[t], 0x99));
  }
  if (finite != 0xffff) block_dots_exact<NT>(ab, octets, base, g, zp, dots);
}

// y[t] += sum over the blocks of tile t of a . (codes - zp) * scale. The last
// block's A is copied into a zero-padded buffer when K ends inside it, so every
// block runs whole octets.
template <int NT>
void accumulate_tiles(const float* a, const uint8_t* tile0, const NBitsPackedGeometry& g, __m512* y) {
  const int64_t code_bytes = g.block_size / kNBitsOctetK * 64;
  alignas(64) float tail[kNBitsMaxPackedBlock];
  for (int64_t b = 0; b < g.k_blocks; ++b) {
    const uint8_t* base = tile0 + b * g.block_bytes;
    const int64_t len = g.k - b * g.block_size < g.block_size ? g.k - b * g.block_size : g.block_size;
    const float* ab = a + b * g.block_size;
    if (len < g.block_size) {
      for (int64_t i = 0; i < g.block_size; i += 16) {
        _mm512_store_ps(tail + i, _mm512_maskz_loadu_ps(column_mask(len - i), ab + i));
      }
      ab = tail;
    }
    __m512 dots[NT];
    block_dots<NT>(ab, (len + 7) / 8, base, g, dots);
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

// Prefill: the weights of up to four tiles over kPanelK k-steps are dequantized
// once into an f32 panel (row kk holds 64 columns), which a 6-row x 64-column
// register block then streams from L1 for every group of rows: 24 accumulators,
// 4 panel loads and 6 broadcasts per 24 FMAs.
constexpr int kGemmRows = 6;
constexpr int64_t kPanelK = 128;
constexpr int64_t kPanelCols = kMaxTiles * 16;

// panel[(k - k0) * 64 + 16 * t + c] = (code - zp) * scale for k in [k0, k0 + len)
// (whole blocks: k0 and len are multiples of block_size but for K's end).
void dequantize_panel(const uint8_t* tiles, const NBitsPackedGeometry& g, int nt, int64_t k0, int64_t len,
                      float* panel) {
  const __m512 codes_f32 = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const int64_t code_bytes = g.block_size / kNBitsOctetK * 64;
  for (int t = 0; t < nt; ++t) {
    for (int64_t kb = 0; kb < len; kb += g.block_size) {
      const uint8_t* base = tiles + t * g.tile_bytes + (k0 + kb) / g.block_size * g.block_bytes;
      const __m512 scale = _mm512_loadu_ps(base + code_bytes);
      const __m512 offset = _mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), load_zero_points(base + code_bytes + 64, g.zero_points)), scale);
      const int64_t octets = (len - kb < g.block_size ? len - kb + 7 : g.block_size) / 8;
      for (int64_t o = 0; o < octets; ++o) {
        const __m512i x = _mm512_loadu_si512(base + o * 64);
        float* row = panel + (kb + o * 8) * kPanelCols + t * 16;
#define EMBER_NBITS_DEQ(J) \
  _mm512_storeu_ps(row + (J) * kPanelCols, _mm512_fmadd_ps(_mm512_permutexvar_ps(nibbles<J>(x), codes_f32), scale, offset));
        EMBER_NBITS_DEQ(0) EMBER_NBITS_DEQ(1) EMBER_NBITS_DEQ(2) EMBER_NBITS_DEQ(3)
        EMBER_NBITS_DEQ(4) EMBER_NBITS_DEQ(5) EMBER_NBITS_DEQ(6) EMBER_NBITS_DEQ(7)
#undef EMBER_NBITS_DEQ
      }
    }
  }
}

// y[r, 0 .. cols) (cols <= 64) += a[r, 0 .. len) . panel, r in [0, R); `first`:
// start from the bias (or zero) instead of y.
template <int R>
void panel_rows(const float* a, int64_t lda, const float* panel, int64_t len, int64_t cols, bool first,
                const float* bias, float* y, int64_t ldy) {
  __mmask16 mask[kMaxTiles];
  for (int t = 0; t < kMaxTiles; ++t) mask[t] = column_mask(cols - 16 * t);
  __m512 acc[R][kMaxTiles];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < kMaxTiles; ++t) {
      const float* src = first ? bias : y + r * ldy;
      acc[r][t] = src ? _mm512_maskz_loadu_ps(mask[t], src + 16 * t) : _mm512_setzero_ps();
    }
  }
  for (int64_t kk = 0; kk < len; ++kk) {
    const float* p = panel + kk * kPanelCols;
    const __m512 p0 = _mm512_load_ps(p), p1 = _mm512_load_ps(p + 16), p2 = _mm512_load_ps(p + 32),
                 p3 = _mm512_load_ps(p + 48);
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(a[r * lda + kk]);
      acc[r][0] = _mm512_fmadd_ps(av, p0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(av, p1, acc[r][1]);
      acc[r][2] = _mm512_fmadd_ps(av, p2, acc[r][2]);
      acc[r][3] = _mm512_fmadd_ps(av, p3, acc[r][3]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < kMaxTiles; ++t) _mm512_mask_storeu_ps(y + r * ldy + 16 * t, mask[t], acc[r][t]);
  }
}

void f32_q4_gemm_avx512(const float* a, int64_t lda, int64_t rows, const uint8_t* tiles, const NBitsPackedGeometry& g,
                        int64_t cols, const float* bias, float* y, int64_t ldy) {
  alignas(64) float panel[(kPanelK > kNBitsMaxPackedBlock ? kPanelK : kNBitsMaxPackedBlock) * kPanelCols];
  const int64_t chunk = g.block_size > kPanelK ? g.block_size : kPanelK;
  for (int64_t col = 0; col < cols; col += kPanelCols) {
    const int64_t group_cols = cols - col < kPanelCols ? cols - col : kPanelCols;
    const int nt = static_cast<int>((group_cols + 15) / 16);
    const uint8_t* group = tiles + col / 16 * g.tile_bytes;
    for (int64_t k0 = 0; k0 < g.k; k0 += chunk) {
      const int64_t len = g.k - k0 < chunk ? g.k - k0 : chunk;
      if (k0 == 0) {
        for (int64_t i = 0; i < chunk * kPanelCols; i += 16) _mm512_store_ps(panel + i, _mm512_setzero_ps());
      }
      dequantize_panel(group, g, nt, k0, len, panel);
      for (int64_t r = 0; r < rows; r += kGemmRows) {
        const float* ar = a + r * lda + k0;
        float* yr = y + r * ldy + col;
        const float* br = bias ? bias + col : nullptr;
        switch (rows - r < kGemmRows ? rows - r : kGemmRows) {
          case 6: panel_rows<6>(ar, lda, panel, len, group_cols, k0 == 0, br, yr, ldy); break;
          case 5: panel_rows<5>(ar, lda, panel, len, group_cols, k0 == 0, br, yr, ldy); break;
          case 4: panel_rows<4>(ar, lda, panel, len, group_cols, k0 == 0, br, yr, ldy); break;
          case 3: panel_rows<3>(ar, lda, panel, len, group_cols, k0 == 0, br, yr, ldy); break;
          case 2: panel_rows<2>(ar, lda, panel, len, group_cols, k0 == 0, br, yr, ldy); break;
          default: panel_rows<1>(ar, lda, panel, len, group_cols, k0 == 0, br, yr, ldy); break;
        }
      }
    }
  }
}

// Per row and block: amax with a NaN/Inf flag, then q = cvt(a * (127 / amax))
// (round-half-even under the default MXCSR, as nearbyint), packed to bytes.
void quantize_rows_q8_avx512(const float* a, int64_t lda, int64_t rows, const NBitsPackedGeometry& g, int8_t* q,
                             float* scales, int32_t* sums) {
  const int64_t padded = g.k_blocks * g.block_size;
  const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
  const __m512 inf = _mm512_set1_ps(__builtin_inff());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < g.k_blocks; ++b) {
      const float* ab = a + r * lda + b * g.block_size;
      int8_t* qb = q + r * padded + b * g.block_size;
      const int64_t len = g.k - b * g.block_size < g.block_size ? g.k - b * g.block_size : g.block_size;
      __m512 amax = _mm512_setzero_ps();
      __mmask16 nonfinite = 0;
      for (int64_t i = 0; i < g.block_size; i += 16) {
        const __m512 v = _mm512_and_ps(_mm512_maskz_loadu_ps(column_mask(len - i), ab + i), abs_mask);
        nonfinite |= _mm512_cmp_ps_mask(v, inf, _CMP_NLT_UQ);  // |v| >= inf or unordered
        amax = _mm512_max_ps(amax, v);
      }
      const float m = _mm512_reduce_max_ps(amax);
      __m512i sum = _mm512_setzero_si512();
      if (nonfinite == 0) {
        // Denormal blocks overflow 127 / m: every code 0 then, as in the scalar quantizer.
        const float reciprocal = m != 0.0f ? 127.0f / m : 0.0f;
        const __m512 inverse = _mm512_set1_ps(reciprocal <= 3.402823466e38f ? reciprocal : 0.0f);
        for (int64_t i = 0; i < g.block_size; i += 16) {
          const __m512i v = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_maskz_loadu_ps(column_mask(len - i), ab + i), inverse));
          sum = _mm512_add_epi32(sum, v);
          _mm_storeu_si128(reinterpret_cast<__m128i*>(qb + i), _mm512_cvtepi32_epi8(v));
        }
      } else {
        for (int64_t i = 0; i < g.block_size; i += 16) _mm_storeu_si128(reinterpret_cast<__m128i*>(qb + i), _mm_setzero_si128());
      }
      scales[r * g.k_blocks + b] = nonfinite == 0 ? m / 127.0f : __builtin_nanf("");
      sums[r * g.k_blocks + b] = _mm512_reduce_add_epi32(sum);
    }
  }
}

}  // namespace

void fill_nbits_avx512(NBitsTable& t) {
  t.f32_q4_gemv = f32_q4_gemv_avx512_t4;
  t.f32_q4_gemm = f32_q4_gemm_avx512;
  t.quantize_rows_q8 = quantize_rows_q8_avx512;
}

}  // namespace ember::kernels::quant
