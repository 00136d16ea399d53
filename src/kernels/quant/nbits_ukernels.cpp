#include "kernels/quant/nbits_ukernels.h"

#include <cstring>

#include "kernels/common/isa_tables.h"

namespace ember::kernels::quant {
namespace {

float load_f32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, sizeof(float));
  return v;
}

// One column at a time over the packed tile; the even and odd k-steps of a block
// are summed separately, as the SIMD kernels do with their two chains.
void f32_q4_gemv_scalar(const float* a, const uint8_t* tiles, const NBitsPackedGeometry& g, int64_t cols,
                        const float* bias, float* y) {
  const int64_t groups = g.block_size / 2;
  for (int64_t j = 0; j < cols; ++j) {
    const uint8_t* tile = tiles + (j / kNBitsTileCols) * g.tile_bytes;
    const int64_t c = j % kNBitsTileCols;
    float sum = bias ? bias[j] : 0.0f;
    for (int64_t b = 0; b < g.k_blocks; ++b) {
      const uint8_t* codes = tile + b * g.block_bytes;
      const uint8_t* meta = codes + groups * kNBitsTileCols;
      const float scale = load_f32(meta + c * sizeof(float));
      const uint8_t* zps = meta + kNBitsTileCols * sizeof(float);
      const float zp = g.float_zero_points ? load_f32(zps + c * sizeof(float)) : static_cast<float>(zps[c]);
      const float* ab = a + b * g.block_size;
      const int64_t len = g.k - b * g.block_size < g.block_size ? g.k - b * g.block_size : g.block_size;
      float even = 0.0f, odd = 0.0f;
      int64_t i = 0;
      for (; 2 * i + 1 < len; ++i) {
        const uint8_t byte = codes[i * kNBitsTileCols + c];
        even += ab[2 * i] * (static_cast<float>(byte & 0xF) - zp);
        odd += ab[2 * i + 1] * (static_cast<float>(byte >> 4) - zp);
      }
      if (2 * i < len) even += ab[2 * i] * (static_cast<float>(codes[i * kNBitsTileCols + c] & 0xF) - zp);
      sum += (even + odd) * scale;
    }
    y[j] = sum;
  }
}

void fill_nbits_scalar(NBitsTable& t) { t.f32_q4_gemv = f32_q4_gemv_scalar; }

}  // namespace

const NBitsTable& nbits_table(Isa isa) {
  static const auto tables = build_isa_tables<NBitsTable>(fill_nbits_scalar, fill_nbits_avx2, fill_nbits_avx512);
  return select_table(tables, isa);
}

}  // namespace ember::kernels::quant
