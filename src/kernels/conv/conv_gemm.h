#pragma once
// Conv's f32 fast path: im2col then the sgemm driver (pointwise convolutions
// read X as the GEMM's B directly).
#include <cstdint>

#include "kernels/matmul/window.h"

namespace ember::kernels {

// X [batch, in_channels, w.in], W [out_channels, in_channels / group, w.kernel],
// Y [batch, out_channels, w.out]; bias [out_channels] or nullptr.
struct ConvGemmShape {
  int64_t batch = 0, in_channels = 0, out_channels = 0, group = 1;
  Window3d w;
};

// Per image and group, Y_g = W_g * columns_g (+ bias), columns built in chunks
// of output positions; threads split the im2col rows and the GEMM tiles. Sums in
// the same order for every thread count.
void conv_f32_gemm(const ConvGemmShape& s, const float* x, const float* weights, const float* bias, float* y);

}  // namespace ember::kernels
