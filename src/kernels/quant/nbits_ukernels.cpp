#include "kernels/quant/nbits_ukernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "base/cpu_features.h"
#include "kernels/common/isa_tables.h"

namespace ember::kernels::quant {
namespace {

float load_f32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, sizeof(float));
  return v;
}

// The code of column c for k = i of a block whose codes start at `codes`.
int code_of(const uint8_t* codes, int64_t c, int64_t i) {
  const int64_t within = i % kNBitsOctetK;
  const uint8_t byte = codes[i / kNBitsOctetK * 64 + c * 4 + within % 4];
  return within < 4 ? byte & 0xF : byte >> 4;
}

// Scales and zero points of a block follow its codes.
struct BlockMeta {
  float scale;
  float zero_point;
};

BlockMeta meta_of(const uint8_t* block, const NBitsPackedGeometry& g, int64_t c) {
  const uint8_t* meta = block + g.block_size / kNBitsOctetK * 64;
  const uint8_t* zps = meta + kNBitsTileCols * sizeof(float);
  float zp = static_cast<float>(kNBitsDefaultZeroPoint);
  if (g.zero_points == NBitsZeroPoints::kU8) zp = static_cast<float>(zps[c]);
  if (g.zero_points == NBitsZeroPoints::kF32) zp = load_f32(zps + c * sizeof(float));
  return {load_f32(meta + c * sizeof(float)), zp};
}

int64_t block_len(const NBitsPackedGeometry& g, int64_t b) { return std::min(g.block_size, g.k - b * g.block_size); }

// One column at a time: per block, sum a * (code - zp) in f32, then scale.
void f32_q4_gemv_scalar(const float* a, const uint8_t* tiles, const NBitsPackedGeometry& g, int64_t cols,
                        const float* bias, float* y) {
  for (int64_t j = 0; j < cols; ++j) {
    const uint8_t* tile = tiles + (j / kNBitsTileCols) * g.tile_bytes;
    const int64_t c = j % kNBitsTileCols;
    float sum = bias ? bias[j] : 0.0f;
    for (int64_t b = 0; b < g.k_blocks; ++b) {
      const uint8_t* block = tile + b * g.block_bytes;
      const BlockMeta meta = meta_of(block, g, c);
      const float* ab = a + b * g.block_size;
      float dot = 0.0f;
      for (int64_t i = 0; i < block_len(g, b); ++i) dot += ab[i] * (static_cast<float>(code_of(block, c, i)) - meta.zero_point);
      sum += dot * meta.scale;
    }
    y[j] = sum;
  }
}

void f32_q4_gemm_scalar(const float* a, int64_t lda, int64_t rows, const uint8_t* tiles, const NBitsPackedGeometry& g,
                        int64_t cols, const float* bias, float* y, int64_t ldy) {
  for (int64_t r = 0; r < rows; ++r) f32_q4_gemv_scalar(a + r * lda, tiles, g, cols, bias, y + r * ldy);
}

void quantize_rows_q8_scalar(const float* a, int64_t lda, int64_t rows, const NBitsPackedGeometry& g, int8_t* q,
                             float* scales, int32_t* sums) {
  const int64_t padded = g.k_blocks * g.block_size;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < g.k_blocks; ++b) {
      const float* ab = a + r * lda + b * g.block_size;
      int8_t* qb = q + r * padded + b * g.block_size;
      const int64_t len = block_len(g, b);
      float amax = 0.0f;
      bool finite = true;
      for (int64_t i = 0; i < len; ++i) {
        finite = finite && std::isfinite(ab[i]);
        amax = std::max(amax, std::fabs(ab[i]));
      }
      std::fill(qb, qb + g.block_size, int8_t{0});
      int32_t sum = 0;
      if (finite) {
        // Below ~3.7e-37 (denormal blocks) 127 / amax overflows; ORT's int8
        // conversion then yields 0 for every code, and so do we.
        float inverse = amax != 0.0f ? 127.0f / amax : 0.0f;
        if (!(inverse <= std::numeric_limits<float>::max())) inverse = 0.0f;
        for (int64_t i = 0; i < len; ++i) {
          qb[i] = static_cast<int8_t>(std::nearbyint(ab[i] * inverse));
          sum += qb[i];
        }
      }
      scales[r * g.k_blocks + b] = finite ? amax / 127.0f : NAN;
      sums[r * g.k_blocks + b] = sum;
    }
  }
}

// The same float operations as the SIMD kernels (one product of the two scales,
// fused multiply-adds), so every level gives the same bits.
void q8_q4_gemm_scalar(const NBitsQ8Rows& a, int64_t rows, const uint8_t* tiles, const NBitsPackedGeometry& g,
                       int64_t cols, const float* bias, float* y, int64_t ldy) {
  const int64_t padded = g.k_blocks * g.block_size;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < cols; ++j) {
      const uint8_t* tile = tiles + (j / kNBitsTileCols) * g.tile_bytes;
      const int64_t c = j % kNBitsTileCols;
      float sum = bias ? bias[j] : 0.0f;
      for (int64_t b = 0; b < g.k_blocks; ++b) {
        const uint8_t* block = tile + b * g.block_bytes;
        const int8_t* qb = a.q + r * padded + b * g.block_size;
        int32_t dot = 0;
        for (int64_t i = 0; i < g.block_size; ++i) dot += qb[i] * code_of(block, c, i);
        const BlockMeta meta = meta_of(block, g, c);
        const int32_t s = a.sums[r * g.k_blocks + b];
        const float centered = g.zero_points == NBitsZeroPoints::kF32
                                   ? std::fma(-meta.zero_point, static_cast<float>(s), static_cast<float>(dot))
                                   : static_cast<float>(dot - static_cast<int32_t>(meta.zero_point) * s);
        sum = std::fma(centered, a.scales[r * g.k_blocks + b] * meta.scale, sum);
      }
      y[r * ldy + j] = sum;
    }
  }
}

void fill_nbits_scalar(NBitsTable& t) {
  t.f32_q4_gemv = f32_q4_gemv_scalar;
  t.f32_q4_gemm = f32_q4_gemm_scalar;
  t.quantize_rows_q8 = quantize_rows_q8_scalar;
  t.q8_q4_gemm = q8_q4_gemm_scalar;
}

void fill_nbits_avx512_level(NBitsTable& t) {
  fill_nbits_avx512(t);
  if (cpu_features().avx512vnni) fill_nbits_avx512vnni(t);
}

}  // namespace

const NBitsTable& nbits_table(Isa isa) {
  static const auto tables =
      build_isa_tables<NBitsTable>(fill_nbits_scalar, fill_nbits_avx2, fill_nbits_avx512_level);
  return select_table(tables, isa);
}

}  // namespace ember::kernels::quant
