#pragma once
// Conv's two f32 fast paths: a direct depthwise kernel (one input channel per
// group) and, for every other Conv, a GEMM of the packed weights against
// columns that im2col writes straight into the sgemm microkernel's panels.
#include <cstdint>

#include "base/buffer.h"
#include "kernels/conv/conv_depthwise_ukernels.h"
#include "kernels/matmul/sgemm_ukernels.h"
#include "kernels/matmul/window.h"

namespace ember::kernels {

// X [batch, in_channels, w.in], W [out_channels, in_channels / group, w.kernel],
// Y [batch, out_channels, w.out]; bias [out_channels] or nullptr.
struct ConvShape {
  int64_t batch = 0, in_channels = 0, out_channels = 0, group = 1;
  Window3d w;
};

// in_channels == group: each output channel reads one input channel.
inline bool conv_is_depthwise(const ConvShape& s) { return s.in_channels == s.group; }

// Per output channel and row, the window slid along the width by the table's
// rows microkernel (conv_depthwise_ukernels.h); threads split (batch, channel,
// output row). Same bits for every thread count.
void conv_f32_depthwise(const dwconv::DwconvTable& t, const ConvShape& s, const float* x, const float* weights,
                        const float* bias, float* y);

// The GEMM's A for one Conv: per group, out_channels / group rows of
// [bias, W row] (the bias column only when there is a bias; the columns carry
// a row of ones to meet it), cut into the sgemm table's row tiles of up to mr
// rows, each stored k-major (sgemm_ukernels.h), so any K block of a tile is
// contiguous. Packed once at kernel creation when W and B are constant.
class ConvFilter {
 public:
  // weights [out_channels, k], bias [out_channels] or nullptr.
  void pack(const sgemm::SgemmTable& t, const float* weights, const float* bias, int64_t out_channels, int64_t group,
            int64_t k);

  bool empty() const { return table_ == nullptr; }
  int64_t bytes() const { return static_cast<int64_t>(buffer_.size()); }
  const sgemm::SgemmTable& table() const { return *table_; }
  bool has_bias() const { return has_bias_; }
  // The K of the GEMM: k, plus one for the bias column.
  int64_t depth() const { return depth_; }
  int64_t rows_per_group() const { return rows_per_group_; }
  // The tile of group g starting at row i0 (a multiple of mr).
  const float* tile(int64_t g, int64_t i0) const {
    return static_cast<const float*>(buffer_.data()) + (g * rows_per_group_ + i0) * depth_;
  }

 private:
  AlignedBuffer buffer_;
  const sgemm::SgemmTable* table_ = nullptr;
  int64_t rows_per_group_ = 0, depth_ = 0;
  bool has_bias_ = false;
};

// Per image and group, Y_g = A_g * columns_g with A the packed filter (its
// bias column included): threads split the output positions into panels of
// the table's nr, each packing its panels' columns (im2col, or X's rows for a
// pointwise Conv) next to the microkernel. K is cut into the same blocks for
// every thread count, so the sums are too.
void conv_f32_gemm(const ConvShape& s, const ConvFilter& filter, const float* x, float* y);

}  // namespace ember::kernels
