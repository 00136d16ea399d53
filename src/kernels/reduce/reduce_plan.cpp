#include "kernels/reduce/reduce_plan.h"

#include <algorithm>

namespace ember::kernels {

AxisMask all_axes_mask(int64_t rank) {
  return rank >= kMaxReduceRank ? ~AxisMask{0} : (AxisMask{1} << rank) - 1;
}

Result<AxisMask> axes_to_mask(std::span<const int64_t> axes, int64_t rank, std::string_view what) {
  if (rank > kMaxReduceRank) return invalid_argument("rank {} is above the supported {}", rank, kMaxReduceRank);
  AxisMask mask = 0;
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank) {
      return invalid_argument("{} value {} is out of range for rank {}", what, axis, rank);
    }
    const int64_t a = axis < 0 ? axis + rank : axis;
    if (mask & (AxisMask{1} << a)) return invalid_argument("{} repeats axis {}", what, a);
    mask |= AxisMask{1} << a;
  }
  return mask;
}

Shape reduced_shape(std::span<const int64_t> shape, AxisMask mask, bool keepdims) {
  Shape out;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!(mask & (AxisMask{1} << d))) {
      out.push_back(shape[d]);
    } else if (keepdims) {
      out.push_back(1);
    }
  }
  return out;
}

ReducePlan make_reduce_plan(std::span<const int64_t> shape, AxisMask mask) {
  struct Block {
    int64_t dim, stride;
    bool reduced;
  };
  SmallVector<Block, 8> blocks;  // innermost first
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    const int64_t dim = shape[d];
    if (dim == 1) continue;
    const bool reduced = (mask >> d) & 1;
    if (!blocks.empty() && blocks.back().reduced == reduced) {
      blocks.back().dim *= dim;
    } else {
      blocks.push_back({dim, stride, reduced});
    }
    stride *= dim;
  }
  std::reverse(blocks.begin(), blocks.end());

  ReducePlan plan;
  size_t reduced_blocks = 0;
  for (const Block& b : blocks) {
    if (b.reduced) {
      plan.reduced_dims.push_back(b.dim);
      plan.reduced_strides.push_back(b.stride);
      plan.reduced_count *= b.dim;
      ++reduced_blocks;
    } else {
      plan.kept_dims.push_back(b.dim);
      plan.kept_strides.push_back(b.stride);
      plan.output_count *= b.dim;
      (reduced_blocks == 0 ? plan.outer : plan.inner) *= b.dim;
    }
  }
  plan.blocked = reduced_blocks <= 1;
  if (reduced_blocks == 0) {
    plan.outer = plan.output_count;
    plan.inner = 1;
  }
  return plan;
}

}  // namespace ember::kernels
