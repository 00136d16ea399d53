#pragma once
// Sliding-window geometry shared by Conv and the pooling ops: attribute parsing,
// auto_pad resolution and output sizes. Spatial ranks 1-3 are lifted to 3-D with
// leading unit dims so every kernel runs one (d, h, w) loop nest.
#include <array>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/tensor.h"
#include "ir/graph.h"
#include "kernels/kernel.h"

namespace ember::kernels {

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

inline constexpr size_t kMaxWindowRank = 3;

struct WindowAttrs {
  std::vector<int64_t> kernel_shape;  // empty: taken from the weights (Conv)
  std::vector<int64_t> strides, dilations, pads;
  AutoPad auto_pad = AutoPad::kNotSet;
  bool ceil_mode = false;
};

// Reads kernel_shape, strides, dilations, pads, auto_pad and ceil_mode, checking
// their values; `require_kernel_shape` for the pooling ops.
Result<WindowAttrs> read_window_attrs(const ir::Node& node, bool require_kernel_shape);

// One spatial problem lifted to 3-D: index 0 = depth, 1 = height, 2 = width.
struct Window3d {
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1};
  std::array<int64_t, 3> stride{1, 1, 1}, dilation{1, 1, 1}, pad_begin{0, 0, 0}, pad_end{0, 0, 0};
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t kernel_size() const { return kernel[0] * kernel[1] * kernel[2]; }
};

// Calls fn(input_offset, kernel_offset) for each tap of the window at output
// (od, oh, ow) that falls inside the input, in (kd, kh, kw) order: input_offset
// indexes one [in] plane, kernel_offset one [kernel] block. Padding taps are skipped.
template <typename Fn>
inline void for_each_tap(const Window3d& w, int64_t od, int64_t oh, int64_t ow, Fn&& fn) {
  for (int64_t kd = 0; kd < w.kernel[0]; ++kd) {
    const int64_t id = od * w.stride[0] - w.pad_begin[0] + kd * w.dilation[0];
    if (id < 0 || id >= w.in[0]) continue;
    for (int64_t kh = 0; kh < w.kernel[1]; ++kh) {
      const int64_t ih = oh * w.stride[1] - w.pad_begin[1] + kh * w.dilation[1];
      if (ih < 0 || ih >= w.in[1]) continue;
      const int64_t in_row = (id * w.in[1] + ih) * w.in[2];
      const int64_t kernel_row = (kd * w.kernel[1] + kh) * w.kernel[2];
      for (int64_t kw = 0; kw < w.kernel[2]; ++kw) {
        const int64_t iw = ow * w.stride[2] - w.pad_begin[2] + kw * w.dilation[2];
        if (iw < 0 || iw >= w.in[2]) continue;
        fn(in_row + iw, kernel_row + kw);
      }
    }
  }
}

// The dtype of a Conv or ConvTranspose node: X's, a float type, which W and B
// (when given) must share.
inline Result<DType> conv_float_dtype(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 2));
  const DType t = init.input_dtypes[0];
  if (!dtype_is_float(t)) return not_implemented("dtype {} is not supported (float types only)", dtype_name(t));
  for (size_t i = 1; i < init.input_dtypes.size() && i < 3; ++i) {
    const DType other = init.input_dtypes[i];
    if (other != DType::kUndefined && other != t) {
      return invalid_argument("input {} is {} but X is {}", i, dtype_name(other), dtype_name(t));
    }
  }
  return t;
}

// Resolves the window over `in_spatial` with `kernel` (the effective kernel
// shape); fails when the ranks disagree or the output would be empty/negative.
Result<Window3d> resolve_window(const WindowAttrs& a, std::span<const int64_t> in_spatial,
                                std::span<const int64_t> kernel);

// The output shape [N, channels, out spatial dims...] for `spatial_rank` dims.
Shape window_output_shape(int64_t batch, int64_t channels, const Window3d& w, size_t spatial_rank);

}  // namespace ember::kernels
