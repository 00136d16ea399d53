#pragma once
// Rotary position embedding (RoPE) rotation microkernels, f32. A rotation turns
// each pair (a, b) of a head row by its angle: a' = a*cos - b*sin,
// b' = b*cos + a*sin. Two pairings exist: the half split (pair i is x[i] and
// x[i + rotary_dim/2]; GPT-NeoX / Llama) and interleaved (pair i is x[2i] and
// x[2i+1]; GPT-J). In-place (y == x) is allowed for both.
//
// Rounding: a' = fma(a, cos, -(b*sin)) and b' = fma(a, sin, b*cos), the product
// inside each FMA exact and the other rounded, at every level: the bits of
// ONNX Runtime's MLAS AVX2 kernel (core/mlas/lib/rotary_embedding_kernel_avx2_fp32.cpp,
// reached through MlasRotaryEmbedOneRow by com.microsoft and ONNX
// RotaryEmbedding and by GroupQueryAttention's do_rotary), including its
// interleaved remainder: past the whole blocks of 8 pairs, the first pair
// rounds as above and the others round both products (a*c - b*s,
// a*s + b*c), as ORT's compiled remainder loop does (measured against ORT 1.30
// for remainders of 1-7 pairs, every head size and layout). ORT on a CPU
// without AVX2 rounds both products everywhere (its scalar fallback).
//
// This header is included by the per-ISA files: plain declarations only.
#include <cstdint>

#include "base/isa.h"

namespace ember::kernels::attention {

struct RotaryTable {
  // Half split: a = x0[i], b = x1[i], angle i, for i < n; results to y0, y1.
  void (*f32_rotate_half)(const float* x0, const float* x1, const float* cos, const float* sin, float* y0, float* y1,
                          int64_t n);
  // Interleaved: a = x[2i], b = x[2i+1], angle i, for i < pairs (one head's
  // whole rotary span: the remainder rule counts from its start).
  void (*f32_rotate_pairs)(const float* x, const float* cos, const float* sin, float* y, int64_t pairs);
};

const RotaryTable& rotary_table(Isa isa);
inline const RotaryTable& rotary_table() { return rotary_table(active_isa()); }

void fill_rotary_avx2(RotaryTable& t);
void fill_rotary_avx512(RotaryTable& t);

}  // namespace ember::kernels::attention
