#pragma once
// Shape arithmetic shared by kernels: numpy broadcasting and axis normalization.
#include <span>

#include "base/status.h"
#include "base/tensor.h"

namespace ember::kernels {

// Numpy-style (multidirectional) broadcast of two shapes.
Result<Shape> broadcast_shapes(std::span<const int64_t> a, std::span<const int64_t> b);
// Element strides of `in_shape` read as `out_shape` (right-aligned; 0 on broadcast dims).
// Requires `in_shape` to broadcast to `out_shape`.
Shape broadcast_strides(std::span<const int64_t> in_shape, std::span<const int64_t> out_shape);
// Maps `axis` in [-rank, rank) to [0, rank); `what` names the attribute in errors.
Result<int64_t> normalize_axis(int64_t axis, int64_t rank, std::string_view what = "axis");

}  // namespace ember::kernels
