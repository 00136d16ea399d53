#pragma once
// Bulk conversions between f32 and the 16-bit float formats (f16 and bf16 as raw
// bits), round-to-nearest-even with NaN kept NaN: the microkernels every f16/bf16
// kernel uses to compute in f32 registers.
//
// This header is included by the per-ISA files: plain declarations only.
#include <cstdint>

#include "base/isa.h"

namespace ember::kernels {

struct ConvertTable {
  void (*f16_to_f32)(const uint16_t* x, float* y, int64_t n);
  void (*f32_to_f16)(const float* x, uint16_t* y, int64_t n);
  void (*bf16_to_f32)(const uint16_t* x, float* y, int64_t n);
  void (*f32_to_bf16)(const float* x, uint16_t* y, int64_t n);
};

const ConvertTable& convert_table(Isa isa);
inline const ConvertTable& convert_table() { return convert_table(active_isa()); }

void fill_convert_avx2(ConvertTable& t);
void fill_convert_avx512(ConvertTable& t);

}  // namespace ember::kernels
