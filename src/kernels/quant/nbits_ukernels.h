#pragma once
// MatMulNBits 4-bit microkernels over the prepacked weight layout.
//
// Layout (built once at kernel creation by nbits_pack_q4, nbits_weights.h): columns are cut
// into tiles of kNBitsTileCols = 16, the last tile padded with zero codes and
// zero scales. Tile t is one linear stream of `tile_bytes`, block after block;
// block b of a tile holds
//   codes:  block_size / 8 octets of 64 bytes. Octet o covers k = 8o .. 8o + 7 of
//           the block; its 32-bit lane c belongs to column c, and byte j of the
//           lane holds the code of k = 8o + j in its low nibble and of
//           k = 8o + 4 + j in its high nibble. Masking the low nibbles of an
//           octet gives, per column, 4 consecutive k as unsigned bytes: the
//           operand of one vpdpbusd against 4 int8 activations;
//   scales: 16 f32, one per column;
//   zero points: none when B has none (every zero point is 8), 16 u8 (packed
//           uint8 zero points) or 16 f32 (float zero points), one per column.
//
// This header is included by the per-ISA files: plain declarations only.
#include <cstdint>

#include "base/isa.h"

namespace ember::kernels::quant {

inline constexpr int64_t kNBitsTileCols = 16;
inline constexpr int64_t kNBitsOctetK = 8;         // k-steps of one 64-byte code octet
inline constexpr int64_t kNBitsDefaultZeroPoint = 8;
// How far ahead of the block being summed the int8 decode kernels prefetch the
// packed weights (measured in nbits_ukernels_avx2.cpp / _avx512vnni.cpp).
inline constexpr int64_t kNBitsPrefetchBytes = 4096;
// The largest block_size the packed path takes: the f32 kernels keep one block
// of A (and a panel of that depth) on the stack.
inline constexpr int64_t kNBitsMaxPackedBlock = 256;

enum class NBitsZeroPoints : uint8_t { kDefault, kU8, kF32 };

struct NBitsPackedGeometry {
  int64_t k = 0;           // codes per column
  int64_t block_size = 0;  // a power of 2, >= 16
  int64_t k_blocks = 0;
  int64_t block_bytes = 0;  // codes + scales + zero points of one block of one tile
  int64_t tile_bytes = 0;   // k_blocks * block_bytes
  NBitsZeroPoints zero_points = NBitsZeroPoints::kDefault;
};

// Rows of A quantized for accuracy_level 4, the way ONNX Runtime's MLAS does it
// (QuantizeARow_CompInt8): per row and block, amax = max |a|, scale = amax / 127,
// q = round-half-even(a * (127 / amax)) as int8 (q = 0 when amax = 0); sums holds
// the sum of each block's q. Rows are k_blocks * block_size long, zero past K.
struct NBitsQ8Rows {
  const int8_t* q = nullptr;       // [rows, k_blocks * block_size]
  const float* scales = nullptr;   // [rows, k_blocks]
  const int32_t* sums = nullptr;   // [rows, k_blocks]
};

struct NBitsTable {
  // y[j] = bias[j] (0 when bias is null) + sum over k of a[k] * W[j, k], for
  // j in [0, cols): the columns of the ceil(cols / 16) tiles starting at
  // `tiles`. Per column and block, the (code - zero point) * a terms are summed
  // in f32 and scaled once.
  void (*f32_q4_gemv)(const float* a, const uint8_t* tiles, const NBitsPackedGeometry& g, int64_t cols,
                      const float* bias, float* y);
  // y[r * ldy + j] = the f32_q4_gemv result for row r of A (row stride lda),
  // r in [0, rows): several rows share each dequantized weight, which may be
  // rounded as (code - zero point) * scale before the products are summed.
  void (*f32_q4_gemm)(const float* a, int64_t lda, int64_t rows, const uint8_t* tiles, const NBitsPackedGeometry& g,
                      int64_t cols, const float* bias, float* y, int64_t ldy);
  // Quantizes `rows` rows of A (row stride lda, K = g.k) into q / scales / sums
  // laid out as NBitsQ8Rows describes.
  void (*quantize_rows_q8)(const float* a, int64_t lda, int64_t rows, const NBitsPackedGeometry& g, int8_t* q,
                           float* scales, int32_t* sums);
  // y[r * ldy + j] = bias[j] + sum over blocks of (a_scale[r] * scale[j]) *
  // (sum_k q[r, k] * code[j, k] - zero_point[j] * sums[r]), for r in [0, rows)
  // and j in [0, cols); the integer part is exact, blocks add up in f32 in order.
  void (*q8_q4_gemm)(const NBitsQ8Rows& a, int64_t rows, const uint8_t* tiles, const NBitsPackedGeometry& g,
                     int64_t cols, const float* bias, float* y, int64_t ldy);
};

const NBitsTable& nbits_table(Isa isa);
inline const NBitsTable& nbits_table() { return nbits_table(active_isa()); }

void fill_nbits_avx2(NBitsTable& t);
void fill_nbits_avx512(NBitsTable& t);
// Overrides q8_q4_gemm with the AVX-512 VNNI kernel; used only where the CPU has VNNI.
void fill_nbits_avx512vnni(NBitsTable& t);

}  // namespace ember::kernels::quant
