#pragma once
// Matrix transposes by element size (the bytes move, the dtype does not matter):
// the microkernels behind Transpose. Each writes dst[j * dst_stride + i] =
// src[i * src_stride + j] for i < rows, j < cols (strides in elements).
//
// This header is included by the per-ISA files: plain declarations only.
#include <cstdint>

#include "base/isa.h"

namespace ember::kernels::tensor_ops {

using TransposeFn = void (*)(const void* src, int64_t src_stride, void* dst, int64_t dst_stride, int64_t rows,
                             int64_t cols);

struct TransposeTable {
  TransposeFn x8;
  TransposeFn x16;
  TransposeFn x32;
  TransposeFn x64;
};

const TransposeTable& transpose_table(Isa isa);
inline const TransposeTable& transpose_table() { return transpose_table(active_isa()); }

void fill_transpose_avx2(TransposeTable& t);
void fill_transpose_avx512(TransposeTable& t);

}  // namespace ember::kernels::tensor_ops
