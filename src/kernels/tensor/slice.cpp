// Slice: starts/ends/axes/steps from attributes (opset < 10) or inputs 1-4, then
// one strided copy (negative steps read backwards).
#include <algorithm>
#include <cstdint>

#include "kernels/common/shape_util.h"
#include "kernels/tensor/tensor_ops.h"
#include "kernels/tensor/tensor_util.h"

namespace ember::kernels::tensor_ops {
namespace {

struct SliceArgs {
  IndexVec starts;
  IndexVec ends;
  IndexVec axes;
  IndexVec steps;
  bool has_axes = false;
  bool has_steps = false;
};

// Per input dim: first index read, step, and output length.
struct SlicePlan {
  IndexVec start;
  IndexVec step;
  Shape out;
};

Result<SlicePlan> plan_slice(const Shape& in, const SliceArgs& a) {
  auto rank = static_cast<int64_t>(in.size());
  size_t n = a.starts.size();
  if (a.ends.size() != n || (a.has_axes && a.axes.size() != n) || (a.has_steps && a.steps.size() != n)) {
    return invalid_argument("starts {}, ends {}, axes {} and steps {} must have the same length",
                            shape_to_string(a.starts), shape_to_string(a.ends), shape_to_string(a.axes),
                            shape_to_string(a.steps));
  }
  SlicePlan p;
  p.start.resize(in.size(), 0);
  p.step.resize(in.size(), 1);
  p.out = in;
  IndexVec seen(in.size(), 0);
  for (size_t i = 0; i < n; ++i) {
    EMBER_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(a.has_axes ? a.axes[i] : static_cast<int64_t>(i), rank,
                                                        "axes value"));
    auto ax = static_cast<size_t>(axis);
    if (seen[ax]) return invalid_argument("axes {} repeats axis {}", shape_to_string(a.axes), axis);
    seen[ax] = 1;
    int64_t step = a.has_steps ? a.steps[i] : 1;
    if (step == 0) return invalid_argument("steps {} contains 0", shape_to_string(a.steps));
    int64_t dim = in[ax];
    int64_t s = a.starts[i] < 0 ? a.starts[i] + dim : a.starts[i];
    int64_t e = a.ends[i] < 0 ? a.ends[i] + dim : a.ends[i];
    int64_t len = 0;
    if (dim > 0 && step > 0) {
      s = std::clamp(s, int64_t{0}, dim);
      e = std::clamp(e, int64_t{0}, dim);
      len = e > s ? (e - s - 1) / step + 1 : 0;
    } else if (dim > 0) {
      s = std::clamp(s, int64_t{0}, dim - 1);
      e = std::clamp(e, int64_t{-1}, dim - 1);
      int64_t back = step == INT64_MIN ? INT64_MAX : -step;
      len = s > e ? (s - e - 1) / back + 1 : 0;
    }
    p.start[ax] = len > 0 ? s : 0;
    p.step[ax] = step;
    p.out[ax] = len;
  }
  return p;
}

class SliceKernel final : public OpKernel {
 public:
  SliceKernel(bool from_inputs, SliceArgs attr_args, size_t elem_size)
      : from_inputs_(from_inputs), attr_args_(std::move(attr_args)), elem_size_(elem_size) {}

  Status infer(KernelContext& ctx) const override {
    SliceArgs args;
    EMBER_RETURN_IF_ERROR(read_args(ctx, args));
    EMBER_ASSIGN_OR_RETURN(SlicePlan plan, plan_slice(ctx.input(0).shape(), args));
    ctx.set_output(0, ctx.input(0).dtype(), std::move(plan.out));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    SliceArgs args;
    EMBER_RETURN_IF_ERROR(read_args(ctx, args));
    EMBER_ASSIGN_OR_RETURN(SlicePlan plan, plan_slice(in.shape(), args));
    Shape in_strides = contiguous_strides(in.shape());
    IndexVec src_strides(in_strides.size());
    int64_t offset = 0;
    for (size_t d = 0; d < in_strides.size(); ++d) {
      offset += plan.start[d] * in_strides[d];
      src_strides[d] = in_strides[d] * plan.step[d];
    }
    const auto* src = static_cast<const std::byte*>(in.data()) + offset * static_cast<int64_t>(elem_size_);
    copy_strided(src, src_strides, ctx.output(0).data(), contiguous_strides(plan.out), plan.out, elem_size_);
    return Status::ok();
  }

 private:
  Status read_args(const KernelContext& ctx, SliceArgs& args) const {
    if (!from_inputs_) {
      args = attr_args_;
      return Status::ok();
    }
    static constexpr const char* kNames[] = {"", "input 1 (starts)", "input 2 (ends)", "input 3 (axes)",
                                             "input 4 (steps)"};
    IndexVec* targets[] = {nullptr, &args.starts, &args.ends, &args.axes, &args.steps};
    for (size_t i = 1; i <= 4; ++i) {
      if (!ctx.has_input(i)) continue;
      if (!ctx.has_value(i)) return needs_value(i);
      EMBER_ASSIGN_OR_RETURN(*targets[i], read_index_input(ctx.input(i), kNames[i]));
    }
    args.has_axes = ctx.has_input(3);
    args.has_steps = ctx.has_input(4);
    return Status::ok();
  }

  bool from_inputs_;
  SliceArgs attr_args_;
  size_t elem_size_;
};

}  // namespace

KernelResult create_slice(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_input(init, 0, "input 0"));
  EMBER_RETURN_IF_ERROR(check_movable_dtype(init.input_dtypes[0], "input 0"));
  bool from_inputs = init.node.opset >= 10;
  SliceArgs args;
  if (from_inputs) {
    EMBER_RETURN_IF_ERROR(require_input(init, 1, "input 1 (starts)"));
    EMBER_RETURN_IF_ERROR(require_input(init, 2, "input 2 (ends)"));
  } else {
    ir::AttrReader attrs(init.node);
    attrs.require("starts");
    attrs.require("ends");
    args.starts = to_index_vec(attrs.get_ints("starts"));
    args.ends = to_index_vec(attrs.get_ints("ends"));
    args.has_axes = attrs.has("axes");
    args.axes = to_index_vec(attrs.get_ints("axes"));
    EMBER_RETURN_IF_ERROR(attrs.status());
  }
  return std::unique_ptr<OpKernel>(new SliceKernel(from_inputs, std::move(args), dtype_size(init.input_dtypes[0])));
}

}  // namespace ember::kernels::tensor_ops
