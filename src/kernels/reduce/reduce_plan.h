#pragma once
// Axis bookkeeping shared by the reductions and MeanVarianceNormalization: which
// axes are reduced (a bit mask), the output shape, and the loop structure over a
// row-major input.
#include <cstdint>
#include <span>

#include "base/status.h"
#include "base/tensor.h"

namespace ember::kernels {

// Bit d set = axis d is reduced; ranks above 64 are rejected.
using AxisMask = uint64_t;
inline constexpr int64_t kMaxReduceRank = 64;

AxisMask all_axes_mask(int64_t rank);
// Validates `axes` (range [-rank, rank), no repeats) and returns their mask.
Result<AxisMask> axes_to_mask(std::span<const int64_t> axes, int64_t rank, std::string_view what);
// Reduced axes become 1 (keepdims) or disappear.
Shape reduced_shape(std::span<const int64_t> shape, AxisMask mask, bool keepdims);

// The input seen as blocks: neighbouring axes of the same kind (kept or reduced)
// are merged and size-1 axes dropped. Output elements follow the kept blocks in
// row-major order; `reduced_*` enumerate the inputs that feed one output.
struct ReducePlan {
  Shape kept_dims, kept_strides;
  Shape reduced_dims, reduced_strides;
  int64_t output_count = 1;
  int64_t reduced_count = 1;
  // At most one reduced block: the input is [outer, reduced_count, inner] and
  // output (o, i) reads input o * reduced_count * inner + r * inner + i.
  bool blocked = false;
  int64_t outer = 1;
  int64_t inner = 1;
};

ReducePlan make_reduce_plan(std::span<const int64_t> shape, AxisMask mask);

// Calls fn(offset) for each input offset reduced into the output whose first
// input sits at `base` (the reduced axes all at index 0).
template <typename Fn>
inline void for_each_reduced_offset(int64_t base, const ReducePlan& plan, Fn&& fn) {
  const size_t n = plan.reduced_dims.size();
  if (n == 0) {
    fn(base);
    return;
  }
  if (n == 1) {
    const int64_t stride = plan.reduced_strides[0];
    for (int64_t r = 0; r < plan.reduced_dims[0]; ++r) fn(base + r * stride);
    return;
  }
  Shape index(n, 0);
  int64_t offset = base;
  for (int64_t k = 0; k < plan.reduced_count; ++k) {
    fn(offset);
    for (size_t d = n; d-- > 0;) {
      offset += plan.reduced_strides[d];
      if (++index[d] < plan.reduced_dims[d]) break;
      offset -= plan.reduced_strides[d] * plan.reduced_dims[d];
      index[d] = 0;
    }
  }
}

// Calls fn(output_index, base) for each output in row-major order, where `base`
// is the offset of its first input.
template <typename Fn>
inline void for_each_output_base(const ReducePlan& plan, Fn&& fn) {
  const size_t n = plan.kept_dims.size();
  Shape index(n, 0);
  int64_t base = 0;
  for (int64_t o = 0; o < plan.output_count; ++o) {
    fn(o, base);
    for (size_t d = n; d-- > 0;) {
      base += plan.kept_strides[d];
      if (++index[d] < plan.kept_dims[d]) break;
      base -= plan.kept_strides[d] * plan.kept_dims[d];
      index[d] = 0;
    }
  }
}

}  // namespace ember::kernels
