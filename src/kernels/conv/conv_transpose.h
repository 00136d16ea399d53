#pragma once
// ConvTranspose geometry and its two implementations: the direct loop (the
// reference and the test oracle) and the f32 fast path (GEMM then col2im).
#include <cstdint>

#include "kernels/matmul/window.h"

namespace ember::kernels {

// X [batch, in_channels, w.in], W [in_channels, out_channels / group, w.kernel],
// Y [batch, out_channels, w.out]. Input position i along a lifted dim feeds
// output i * stride - pad_begin + k * dilation for each kernel tap k; outputs no
// tap reaches hold the bias (or 0). w.pad_end is unused: w.out is given.
struct ConvTransposeShape {
  int64_t batch = 0, in_channels = 0, out_channels = 0, group = 1;
  Window3d w;
};

// Every output summed tap by tap with a compute_t<T> accumulator.
template <typename T>
void conv_transpose_ref(const ConvTransposeShape& s, const T* x, const T* weights, const T* bias, T* y);

// Per image and group, columns = W_g^T * X_g by the sgemm driver, scattered into
// Y by col2im, threads splitting the GEMM tiles and then the output channels.
// Sums in the same order for every thread count.
void conv_transpose_f32_gemm(const ConvTransposeShape& s, const float* x, const float* weights, const float* bias,
                             float* y);

}  // namespace ember::kernels
