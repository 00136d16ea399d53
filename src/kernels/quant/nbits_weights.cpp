#include "kernels/quant/nbits_weights.h"

namespace ember::kernels::quant {
namespace {

float read_float(DType dtype, const void* data, int64_t i) {
  if (dtype == DType::kF16) return Float16::to_float(static_cast<const uint16_t*>(data)[i]);
  return static_cast<const float*>(data)[i];
}

// Code i of a byte string packed low bits first (bits is 4 or 8).
int code_at(const uint8_t* bytes, int64_t i, int bits) {
  if (bits == 8) return bytes[i];
  const uint8_t byte = bytes[i >> 1];
  return (i & 1) ? byte >> 4 : byte & 0xF;
}

float zero_point(const NBitsWeights& w, int64_t n, int64_t block) {
  switch (w.zp_dtype) {
    case DType::kUndefined:
      return static_cast<float>(1 << (w.bits - 1));
    case DType::kU8:
      return static_cast<float>(code_at(static_cast<const uint8_t*>(w.zero_points) + n * w.zp_row_bytes, block, w.bits));
    default:
      return read_float(w.zp_dtype, w.zero_points, n * w.k_blocks + block);
  }
}

}  // namespace

int64_t nbits_zp_row_bytes(int64_t k_blocks, int bits) { return (k_blocks * bits + 7) / 8; }

void nbits_dequantize_row(const NBitsWeights& w, int64_t n, int64_t k_begin, int64_t k_end, float* out) {
  int64_t k = k_begin;
  while (k < k_end) {
    const int64_t block = k / w.block_size;
    const int64_t block_end = (block + 1) * w.block_size < k_end ? (block + 1) * w.block_size : k_end;
    const uint8_t* blob = w.packed + (n * w.k_blocks + block) * w.blob_size;
    const float scale = read_float(w.scale_dtype, w.scales, n * w.k_blocks + block);
    const float zp = zero_point(w, n, block);
    for (; k < block_end; ++k) {
      *out++ = (static_cast<float>(code_at(blob, k - block * w.block_size, w.bits)) - zp) * scale;
    }
  }
}

void nbits_dot_f32_ref(const NBitsWeights& w, const float* a, int64_t k_begin, int64_t k_end, int64_t n_begin,
                       int64_t n_end, float* acc) {
  float row[kNBitsKChunk];
  const int64_t len = k_end - k_begin;
  for (int64_t n = n_begin; n < n_end; ++n) {
    nbits_dequantize_row(w, n, k_begin, k_end, row);
    float sum = 0.0f;
    for (int64_t i = 0; i < len; ++i) sum += a[i] * row[i];
    acc[n - n_begin] += sum;
  }
}

}  // namespace ember::kernels::quant
