#pragma once
// Block dequantization microkernels of com.microsoft GatherBlockQuantized: one
// gathered row of codes to f32, y[i] = (code[i] - zp[i / block]) * scale[i / block].
// (code - zp) is a small integer, exact in f32, so every level rounds once (the
// product) and all levels give identical bits.
//
// This header is included by the per-ISA files: plain declarations only.
#include <cstdint>

#include "base/isa.h"

namespace ember::kernels::quant {

struct GbqTable {
  // k codes starting at `codes` (2-/4-bit: packed four/two a byte, low bits
  // first, the first code in the lowest bits of its byte; 8-bit: one a byte),
  // in blocks of block_size (a power of 2, >= 16; the last block may be
  // partial). scales and zps hold one entry per block; zps == nullptr means
  // the default zero point 2^(bits - 1).
  void (*f32_q2_dequant)(const uint8_t* codes, int64_t k, int64_t block_size, const float* scales,
                         const uint8_t* zps, float* y);
  void (*f32_q4_dequant)(const uint8_t* codes, int64_t k, int64_t block_size, const float* scales,
                         const uint8_t* zps, float* y);
  void (*f32_q8_dequant)(const uint8_t* codes, int64_t k, int64_t block_size, const float* scales,
                         const uint8_t* zps, float* y);
};

const GbqTable& gbq_table(Isa isa);
inline const GbqTable& gbq_table() { return gbq_table(active_isa()); }

void fill_gbq_avx2(GbqTable& t);
void fill_gbq_avx512(GbqTable& t);

}  // namespace ember::kernels::quant
