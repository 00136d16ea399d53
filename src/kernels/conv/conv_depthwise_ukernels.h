#pragma once
// f32 depthwise convolution microkernels (one input channel per group), one
// table per ISA level: the window of one channel slid over its plane, output
// rows vectorized along the width.
//
// This header is included by the per-ISA files: plain declarations only.
#include <cstdint>

#include "base/isa.h"

namespace ember::kernels::dwconv {

// One channel's window lifted to 3-D (index 0 = depth, 1 = height, 2 = width),
// as kernels::Window3d: input position i along a dim is read by output o
// through tap k when i = o * stride - pad + k * dilation.
struct DwconvGeometry {
  int64_t in[3], out[3], kernel[3], stride[3], dilation[3], pad[3];
};

struct DwconvTable {
  // Output rows [row_begin, row_end) of one channel, row r = od * out[1] + oh
  // (x: the channel's input plane, w: its kernel [kernel], y: its output plane):
  //   y[r][ow] = bias + x * w over the taps that fall inside the input,
  // summed in (kd, kh, kw) order per element; padding taps are skipped, as in
  // the reference loop. The vector levels use one FMA per tap.
  void (*rows)(const DwconvGeometry& g, const float* x, const float* w, float bias, int64_t row_begin,
               int64_t row_end, float* y);
};

const DwconvTable& dwconv_table(Isa isa);
inline const DwconvTable& dwconv_table() { return dwconv_table(active_isa()); }

void fill_dwconv_avx2(DwconvTable& t);
void fill_dwconv_avx512(DwconvTable& t);

}  // namespace ember::kernels::dwconv
