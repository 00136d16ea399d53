#pragma once
// Moves blocks of f32, f16 or bf16 elements to and from f32 scratch buffers, so
// the row kernels of norm/ and reduce/ run their f32 microkernels on any float
// dtype (16-bit types through convert_table()).
#include <cstdint>
#include <cstring>

#include "base/dtype.h"
#include "kernels/common/convert.h"

namespace ember::kernels {

// Scratch block (floats) the 16-bit and strided paths work in: 2048 floats
// (8 KiB) per buffer keeps three buffers in L1 next to the row being read.
inline constexpr int64_t kRowBlock = 2048;

// out[0..n) = element [offset, offset + n) of `data` (dtype f32, f16 or bf16).
inline void load_block(const ConvertTable& cvt, DType dtype, const void* data, int64_t offset, int64_t n,
                       float* out) {
  if (dtype == DType::kF32) {
    std::memcpy(out, static_cast<const float*>(data) + offset, static_cast<size_t>(n) * sizeof(float));
  } else if (dtype == DType::kF16) {
    cvt.f16_to_f32(static_cast<const uint16_t*>(data) + offset, out, n);
  } else {
    cvt.bf16_to_f32(static_cast<const uint16_t*>(data) + offset, out, n);
  }
}

inline void store_block(const ConvertTable& cvt, DType dtype, const float* in, void* data, int64_t offset,
                        int64_t n) {
  if (dtype == DType::kF32) {
    std::memcpy(static_cast<float*>(data) + offset, in, static_cast<size_t>(n) * sizeof(float));
  } else if (dtype == DType::kF16) {
    cvt.f32_to_f16(in, static_cast<uint16_t*>(data) + offset, n);
  } else {
    cvt.f32_to_bf16(in, static_cast<uint16_t*>(data) + offset, n);
  }
}

}  // namespace ember::kernels
