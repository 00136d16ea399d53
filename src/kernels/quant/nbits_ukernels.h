#pragma once
// MatMulNBits 4-bit microkernels over the prepacked weight layout.
//
// Layout (built once at kernel creation by nbits_pack_q4, nbits_weights.h): columns are cut
// into tiles of kNBitsTileCols = 16, the last tile padded with zero codes and
// zero scales. Tile t is one linear stream of `tile_bytes`, block after block;
// block b of a tile holds
//   codes:  block_size / 2 groups of 16 bytes; byte c of group i is column c's
//           code for k = 2i (low nibble) and k = 2i + 1 (high nibble);
//   scales: 16 f32, one per column;
//   zero points: 16 u8 (packed or absent zero points, absent = 8) or 16 f32
//           (float zero points), one per column.
// A 16-byte group widened to 32-bit lanes gives two k-steps of all 16 columns.
//
// This header is included by the per-ISA files: plain declarations only.
#include <cstdint>

#include "base/isa.h"

namespace ember::kernels::quant {

inline constexpr int64_t kNBitsTileCols = 16;

struct NBitsPackedGeometry {
  int64_t k = 0;           // codes per column
  int64_t block_size = 0;  // a power of 2, >= 16
  int64_t k_blocks = 0;
  int64_t block_bytes = 0;  // codes + scales + zero points of one block of one tile
  int64_t tile_bytes = 0;   // k_blocks * block_bytes
  bool float_zero_points = false;
};

struct NBitsTable {
  // y[j] = bias[j] (0 when bias is null) + sum over k of a[k] * W[j, k], for
  // j in [0, cols): the columns of the ceil(cols / 16) tiles starting at
  // `tiles`. Per column and block, the (code - zero point) * a terms are summed
  // in f32 and scaled once.
  void (*f32_q4_gemv)(const float* a, const uint8_t* tiles, const NBitsPackedGeometry& g, int64_t cols,
                      const float* bias, float* y);
};

const NBitsTable& nbits_table(Isa isa);
inline const NBitsTable& nbits_table() { return nbits_table(active_isa()); }

void fill_nbits_avx2(NBitsTable& t);
void fill_nbits_avx512(NBitsTable& t);

}  // namespace ember::kernels::quant
