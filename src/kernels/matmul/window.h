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

// Resolves the window over `in_spatial` with `kernel` (the effective kernel
// shape); fails when the ranks disagree or the output would be empty/negative.
Result<Window3d> resolve_window(const WindowAttrs& a, std::span<const int64_t> in_spatial,
                                std::span<const int64_t> kernel);

// The output shape [N, channels, out spatial dims...] for `spatial_rank` dims.
Shape window_output_shape(int64_t batch, int64_t channels, const Window3d& w, size_t spatial_rank);

}  // namespace ember::kernels
