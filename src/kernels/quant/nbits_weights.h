#pragma once
// The quantized B operand of com.microsoft MatMulNBits: read in the file's own
// layout by the reference loops (f32 and int8 activations), and repacked once
// into the tile layout of nbits_ukernels.h for the microkernels.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/dtype.h"
#include "kernels/quant/nbits_ukernels.h"

namespace ember::kernels::quant {

// B[n] holds K codes in k_blocks blocks of block_size codes (the last block
// padded), packed low bits first: blob_size = block_size * bits / 8 bytes a block.
// Code q of block b of row n dequantizes to (q - zero_point[n, b]) * scale[n, b].
struct NBitsWeights {
  int bits = 4;
  int64_t n = 0, k = 0;
  int64_t block_size = 0, k_blocks = 0, blob_size = 0;
  const uint8_t* packed = nullptr;  // [n, k_blocks, blob_size]
  DType scale_dtype = DType::kF32;  // f32 or f16
  const void* scales = nullptr;     // [n * k_blocks]
  // kUndefined: absent (zero point 2^(bits-1)); kU8: codes packed like B, each
  // row of B starting on a new byte (zp_row_bytes a row); else f32/f16 values
  // [n * k_blocks].
  DType zp_dtype = DType::kUndefined;
  const void* zero_points = nullptr;
  int64_t zp_row_bytes = 0;
};

// Bytes per row of packed uint8 zero points: ceil(k_blocks * bits / 8).
int64_t nbits_zp_row_bytes(int64_t k_blocks, int bits);

// Writes the dequantized weights w[n, k_begin .. k_end) to out.
void nbits_dequantize_row(const NBitsWeights& w, int64_t n, int64_t k_begin, int64_t k_end, float* out);

// acc[j] += sum over k in [k_begin, k_end) of a[k - k_begin] * w[n_begin + j, k],
// for j in [0, n_end - n_begin), in f32; k_end - k_begin <= kNBitsKChunk.
inline constexpr int64_t kNBitsKChunk = 256;
void nbits_dot_f32_ref(const NBitsWeights& w, const float* a, int64_t k_begin, int64_t k_end, int64_t n_begin,
                       int64_t n_end, float* acc);

// acc[j] = fma over blocks of (a_scale * scale) * (sum_k q[k] * code[n, k] -
// zero_point * sums[block]), n = n_begin + j: accuracy_level 4 on rows of A
// quantized by NBitsTable::quantize_rows_q8, with the float operations of the
// packed microkernels (so both paths give the same bits). acc starts as the bias.
void nbits_dot_q8_ref(const NBitsWeights& w, const int8_t* q, const float* a_scales, const int32_t* sums,
                      int64_t n_begin, int64_t n_end, float* acc);

// Zeroed, 64-byte aligned memory for packed weights: a slice of a chunk that
// packed weights of this process share, mapped on 2 MiB boundaries and offered
// to transparent huge pages. Decode reads each matrix once per token as one
// stream; on 4 KiB pages the 0.5-0.7 MiB projections of a Qwen2.5-0.5B layer
// (each too small for AlignedBuffer's huge pages) streamed at about 70 % of the
// speed of the same bytes on huge pages, and sharing chunks avoids rounding
// every matrix up to whole 2 MiB pages. A chunk is unmapped with its last slice.
class NBitsPackedBytes {
 public:
  NBitsPackedBytes() = default;
  explicit NBitsPackedBytes(size_t bytes);
  void* data() { return data_; }
  const void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  std::shared_ptr<void> chunk_;
  void* data_ = nullptr;
  size_t size_ = 0;
};

// 4-bit weights repacked into the column-tile layout of nbits_ukernels.h.
struct NBitsPacked {
  NBitsPackedGeometry geometry;
  NBitsPackedBytes bytes;
};

// Repacks w (bits == 4, f32 or f16 scales, any zero-point form).
NBitsPacked nbits_pack_q4(const NBitsWeights& w);

}  // namespace ember::kernels::quant
