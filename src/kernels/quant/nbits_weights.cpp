#include "kernels/quant/nbits_weights.h"

#include <algorithm>
#include <cmath>
#include <cstring>

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

// Fills block `block` of the tile holding columns [n0, n0 + kNBitsTileCols);
// codes past K and columns past N stay zero.
void pack_q4_block(const NBitsWeights& w, const NBitsPackedGeometry& g, int64_t n0, int64_t block, uint8_t* out) {
  const int64_t len = std::min(w.block_size, w.k - block * w.block_size);
  for (int64_t c = 0; c < kNBitsTileCols && n0 + c < w.n; ++c) {
    const uint8_t* blob = w.packed + ((n0 + c) * w.k_blocks + block) * w.blob_size;
    for (int64_t i = 0; i < len; ++i) {
      const int64_t octet = i / kNBitsOctetK, within = i % kNBitsOctetK;
      uint8_t& byte = out[octet * 64 + c * 4 + within % 4];
      byte = static_cast<uint8_t>(byte | code_at(blob, i, 4) << (within < 4 ? 0 : 4));
    }
  }
  uint8_t* meta = out + w.block_size / kNBitsOctetK * 64;
  for (int64_t c = 0; c < kNBitsTileCols; ++c) {
    const int64_t n = n0 + c;
    const float scale = n < w.n ? read_float(w.scale_dtype, w.scales, n * w.k_blocks + block) : 0.0f;
    std::memcpy(meta + c * sizeof(float), &scale, sizeof(float));
    const float zp = n < w.n ? zero_point(w, n, block) : 0.0f;
    uint8_t* zps = meta + kNBitsTileCols * sizeof(float);
    if (g.zero_points == NBitsZeroPoints::kF32) {
      std::memcpy(zps + c * sizeof(float), &zp, sizeof(float));
    } else if (g.zero_points == NBitsZeroPoints::kU8) {
      zps[c] = static_cast<uint8_t>(zp);
    }
  }
}

}  // namespace

NBitsPacked nbits_pack_q4(const NBitsWeights& w) {
  NBitsPacked p;
  NBitsPackedGeometry& g = p.geometry;
  g.k = w.k;
  g.block_size = w.block_size;
  g.k_blocks = w.k_blocks;
  g.zero_points = w.zp_dtype == DType::kUndefined ? NBitsZeroPoints::kDefault
                  : w.zp_dtype == DType::kU8      ? NBitsZeroPoints::kU8
                                                  : NBitsZeroPoints::kF32;
  const int64_t zp_bytes = g.zero_points == NBitsZeroPoints::kF32  ? kNBitsTileCols * sizeof(float)
                           : g.zero_points == NBitsZeroPoints::kU8 ? kNBitsTileCols
                                                                   : 0;
  g.block_bytes = w.block_size / kNBitsOctetK * 64 + kNBitsTileCols * sizeof(float) + zp_bytes;
  g.tile_bytes = g.k_blocks * g.block_bytes;
  const int64_t tiles = (w.n + kNBitsTileCols - 1) / kNBitsTileCols;
  p.bytes.resize(static_cast<size_t>(tiles * g.tile_bytes));
  uint8_t* out = static_cast<uint8_t*>(p.bytes.data());
  std::memset(out, 0, p.bytes.size());
  for (int64_t t = 0; t < tiles; ++t) {
    for (int64_t b = 0; b < w.k_blocks; ++b) {
      pack_q4_block(w, g, t * kNBitsTileCols, b, out + t * g.tile_bytes + b * g.block_bytes);
    }
  }
  return p;
}

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

void nbits_dot_q8_ref(const NBitsWeights& w, const int8_t* q, const float* a_scales, const int32_t* sums,
                      int64_t n_begin, int64_t n_end, float* acc) {
  for (int64_t n = n_begin; n < n_end; ++n) {
    float sum = acc[n - n_begin];
    for (int64_t b = 0; b < w.k_blocks; ++b) {
      const uint8_t* blob = w.packed + (n * w.k_blocks + b) * w.blob_size;
      const int64_t len = std::min(w.block_size, w.k - b * w.block_size);
      int32_t dot = 0;
      for (int64_t i = 0; i < len; ++i) dot += q[b * w.block_size + i] * code_at(blob, i, w.bits);
      const float centered = std::fma(-zero_point(w, n, b), static_cast<float>(sums[b]), static_cast<float>(dot));
      sum = std::fma(centered, a_scales[b] * read_float(w.scale_dtype, w.scales, n * w.k_blocks + b), sum);
    }
    acc[n - n_begin] = sum;
  }
}

}  // namespace ember::kernels::quant
