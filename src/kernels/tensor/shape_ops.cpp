// Shape, Size and the ops that only reinterpret input 0's bytes under a new shape
// (Reshape, Flatten, Squeeze, Unsqueeze, Identity).
#include <algorithm>

#include "base/value_list.h"
#include "kernels/common/shape_util.h"
#include "kernels/control/control_ops.h"
#include "kernels/tensor/tensor_ops.h"
#include "kernels/tensor/tensor_util.h"

namespace ember::kernels::tensor_ops {
namespace {

class ShapeKernel final : public OpKernel {
 public:
  ShapeKernel(int64_t start, int64_t end) : start_(start), end_(end) {}

  Status infer(KernelContext& ctx) const override {
    auto [begin, end] = range(ctx.input(0).rank());
    ctx.set_output(0, DType::kI64, Shape{end - begin});
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    const Shape& shape = ctx.input(0).shape();
    auto [begin, end] = range(static_cast<int64_t>(shape.size()));
    auto* out = ctx.output(0).data_as<int64_t>();
    for (int64_t i = begin; i < end; ++i) out[i - begin] = shape[static_cast<size_t>(i)];
    return Status::ok();
  }
  bool reads_input_data() const override { return false; }

 private:
  // The [start, end) dims selected, clamped to [0, rank] like a Python slice.
  std::pair<int64_t, int64_t> range(int64_t rank) const {
    auto clamp = [rank](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
    int64_t begin = clamp(start_);
    int64_t end = clamp(end_);
    return {begin, std::max(begin, end)};
  }
  int64_t start_;
  int64_t end_;
};

class SizeKernel final : public OpKernel {
 public:
  Status infer(KernelContext& ctx) const override {
    ctx.set_output(0, DType::kI64, Shape{});
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    *ctx.output(0).data_as<int64_t>() = ctx.input(0).numel();
    return Status::ok();
  }
  bool reads_input_data() const override { return false; }
};

// ONNX Reshape semantics: 0 copies the input dim (unless allowzero), one -1 is inferred.
Result<Shape> reshape_output(const Shape& in, const IndexVec& requested, bool allowzero) {
  Shape out(requested.size());
  int64_t inferred = -1;
  int64_t known = 1;
  for (size_t i = 0; i < requested.size(); ++i) {
    int64_t v = requested[i];
    if (v == 0 && !allowzero) {
      if (i >= in.size()) {
        return invalid_argument("shape {} copies dim {} (0) but the input {} has rank {}",
                                shape_to_string(requested), i, shape_to_string(in), in.size());
      }
      v = in[i];
    } else if (v == -1) {
      if (inferred >= 0) return invalid_argument("shape {} has more than one -1", shape_to_string(requested));
      inferred = static_cast<int64_t>(i);
      continue;
    } else if (v < 0) {
      return invalid_argument("shape {} has invalid dim {}", shape_to_string(requested), v);
    }
    out[i] = v;
    known *= v;
  }
  int64_t numel = shape_numel(in);
  if (inferred >= 0) {
    if (known == 0 || numel % known != 0) {
      return invalid_argument("cannot infer the -1 of shape {} for an input of shape {}", shape_to_string(requested),
                              shape_to_string(in));
    }
    out[static_cast<size_t>(inferred)] = numel / known;
  } else if (known != numel) {
    return invalid_argument("cannot reshape {} to {}: element counts differ", shape_to_string(in),
                            shape_to_string(requested));
  }
  return out;
}

class ReshapeKernel final : public ViewKernel {
 public:
  ReshapeKernel(bool from_attr, IndexVec shape_attr, bool allowzero)
      : from_attr_(from_attr), shape_attr_(std::move(shape_attr)), allowzero_(allowzero) {}

  Status infer(KernelContext& ctx) const override {
    IndexVec requested = shape_attr_;
    if (!from_attr_) {
      if (!ctx.has_input(1)) return invalid_argument("input 1 (shape) is missing");
      if (!ctx.has_value(1)) return needs_value(1);
      EMBER_ASSIGN_OR_RETURN(requested, read_index_input(ctx.input(1), "input 1 (shape)"));
    }
    EMBER_ASSIGN_OR_RETURN(Shape out, reshape_output(ctx.input(0).shape(), requested, allowzero_));
    ctx.set_output(0, ctx.input(0).dtype(), std::move(out));
    return Status::ok();
  }

 private:
  bool from_attr_;
  IndexVec shape_attr_;
  bool allowzero_;
};

class FlattenKernel final : public ViewKernel {
 public:
  explicit FlattenKernel(int64_t axis) : axis_(axis) {}

  Status infer(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    int64_t rank = in.rank();
    if (axis_ < -rank || axis_ > rank) return invalid_argument("axis {} is out of range for rank {}", axis_, rank);
    int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= in.dim(d);
    int64_t inner = 1;
    for (int64_t d = axis; d < rank; ++d) inner *= in.dim(d);
    ctx.set_output(0, in.dtype(), Shape{outer, inner});
    return Status::ok();
  }

 private:
  int64_t axis_;
};

// Reads the axes of Squeeze/Unsqueeze: an attribute before opset 13, input 1 after.
struct AxesSource {
  bool from_input = false;
  bool has_attr = false;
  IndexVec attr;

  // Sets `present` when axes were given; returns needs_value when input 1 is unknown.
  Status read(const KernelContext& ctx, IndexVec& axes, bool& present) const {
    if (!from_input) {
      axes = attr;
      present = has_attr;
      return Status::ok();
    }
    present = ctx.has_input(1);
    if (!present) return Status::ok();
    if (!ctx.has_value(1)) return needs_value(1);
    EMBER_ASSIGN_OR_RETURN(axes, read_index_input(ctx.input(1), "input 1 (axes)"));
    return Status::ok();
  }
};

// Marks the axes (normalized against `rank`) in `marks`; rejects duplicates.
Status mark_axes(const IndexVec& axes, int64_t rank, IndexVec& marks) {
  marks.clear();
  marks.resize(static_cast<size_t>(rank), 0);
  for (int64_t a : axes) {
    EMBER_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(a, rank, "axes value"));
    if (marks[static_cast<size_t>(axis)]) return invalid_argument("axes {} repeats axis {}", shape_to_string(axes), a);
    marks[static_cast<size_t>(axis)] = 1;
  }
  return Status::ok();
}

class SqueezeKernel final : public ViewKernel {
 public:
  explicit SqueezeKernel(AxesSource axes) : axes_(std::move(axes)) {}

  Status infer(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    IndexVec axes;
    bool present = false;
    EMBER_RETURN_IF_ERROR(axes_.read(ctx, axes, present));
    IndexVec marks;
    if (present && !axes.empty()) {
      EMBER_RETURN_IF_ERROR(mark_axes(axes, in.rank(), marks));
      for (int64_t d = 0; d < in.rank(); ++d) {
        if (marks[static_cast<size_t>(d)] && in.dim(d) != 1) {
          return invalid_argument("cannot squeeze axis {} of shape {}: its size is not 1", d,
                                  shape_to_string(in.shape()));
        }
      }
    } else {
      marks.resize(static_cast<size_t>(in.rank()), 0);
      for (int64_t d = 0; d < in.rank(); ++d) marks[static_cast<size_t>(d)] = in.dim(d) == 1;
    }
    Shape out;
    for (int64_t d = 0; d < in.rank(); ++d) {
      if (!marks[static_cast<size_t>(d)]) out.push_back(in.dim(d));
    }
    ctx.set_output(0, in.dtype(), std::move(out));
    return Status::ok();
  }

 private:
  AxesSource axes_;
};

class UnsqueezeKernel final : public ViewKernel {
 public:
  explicit UnsqueezeKernel(AxesSource axes) : axes_(std::move(axes)) {}

  Status infer(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    IndexVec axes;
    bool present = false;
    EMBER_RETURN_IF_ERROR(axes_.read(ctx, axes, present));
    if (!present) return invalid_argument("axes are required");
    int64_t out_rank = in.rank() + static_cast<int64_t>(axes.size());
    IndexVec marks;
    EMBER_RETURN_IF_ERROR(mark_axes(axes, out_rank, marks));
    Shape out(static_cast<size_t>(out_rank));
    int64_t next = 0;
    for (int64_t d = 0; d < out_rank; ++d) out[static_cast<size_t>(d)] = marks[static_cast<size_t>(d)] ? 1 : in.dim(next++);
    ctx.set_output(0, in.dtype(), std::move(out));
    return Status::ok();
  }

 private:
  AxesSource axes_;
};

class IdentityKernel final : public ViewKernel {
 public:
  Status infer(KernelContext& ctx) const override {
    ctx.set_output(0, ctx.input(0).dtype(), ctx.input(0).shape());
    return Status::ok();
  }
};

Result<AxesSource> read_axes_source(const KernelInit& init, int input_since_opset) {
  AxesSource src;
  src.from_input = init.node.opset >= input_since_opset;
  if (!src.from_input) {
    ir::AttrReader attrs(init.node);
    src.has_attr = attrs.has("axes");
    src.attr = to_index_vec(attrs.get_ints("axes"));
    EMBER_RETURN_IF_ERROR(attrs.status());
  }
  return src;
}

}  // namespace

KernelResult create_shape(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_input(init, 0, "input 0"));
  ir::AttrReader attrs(init.node);
  int64_t start = 0;
  int64_t end = INT64_MAX;
  if (init.node.opset >= 15) {
    start = attrs.get_int("start", 0);
    end = attrs.get_int("end", INT64_MAX);
  }
  EMBER_RETURN_IF_ERROR(attrs.status());
  return std::unique_ptr<OpKernel>(new ShapeKernel(start, end));
}

KernelResult create_size(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_input(init, 0, "input 0"));
  return std::unique_ptr<OpKernel>(new SizeKernel());
}

KernelResult create_reshape(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_input(init, 0, "input 0"));
  EMBER_RETURN_IF_ERROR(check_movable_dtype(init.input_dtypes[0], "input 0"));
  ir::AttrReader attrs(init.node);
  bool from_attr = init.node.opset < 5;
  if (from_attr) attrs.require("shape");
  IndexVec shape_attr = to_index_vec(attrs.get_ints("shape"));
  int64_t allowzero = init.node.opset >= 14 ? attrs.get_int("allowzero", 0) : 0;
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (allowzero != 0 && allowzero != 1) return invalid_argument("allowzero must be 0 or 1, got {}", allowzero);
  if (!from_attr) EMBER_RETURN_IF_ERROR(require_input(init, 1, "input 1 (shape)"));
  return std::unique_ptr<OpKernel>(new ReshapeKernel(from_attr, std::move(shape_attr), allowzero == 1));
}

KernelResult create_flatten(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_input(init, 0, "input 0"));
  EMBER_RETURN_IF_ERROR(check_movable_dtype(init.input_dtypes[0], "input 0"));
  ir::AttrReader attrs(init.node);
  int64_t axis = attrs.get_int("axis", 1);
  EMBER_RETURN_IF_ERROR(attrs.status());
  return std::unique_ptr<OpKernel>(new FlattenKernel(axis));
}

KernelResult create_squeeze(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_input(init, 0, "input 0"));
  EMBER_RETURN_IF_ERROR(check_movable_dtype(init.input_dtypes[0], "input 0"));
  EMBER_ASSIGN_OR_RETURN(AxesSource axes, read_axes_source(init, 13));
  return std::unique_ptr<OpKernel>(new SqueezeKernel(std::move(axes)));
}

KernelResult create_unsqueeze(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_input(init, 0, "input 0"));
  EMBER_RETURN_IF_ERROR(check_movable_dtype(init.input_dtypes[0], "input 0"));
  EMBER_ASSIGN_OR_RETURN(AxesSource axes, read_axes_source(init, 13));
  if (!axes.from_input && !axes.has_attr) return invalid_model("attribute 'axes' is required");
  if (axes.from_input) EMBER_RETURN_IF_ERROR(require_input(init, 1, "input 1 (axes)"));
  return std::unique_ptr<OpKernel>(new UnsqueezeKernel(std::move(axes)));
}

KernelResult create_identity(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_input(init, 0, "input 0"));
  if (dtype_is_container(init.input_dtypes[0])) return control_ops::create_container_identity(init);
  EMBER_RETURN_IF_ERROR(check_movable_dtype(init.input_dtypes[0], "input 0"));
  return std::unique_ptr<OpKernel>(new IdentityKernel());
}

}  // namespace ember::kernels::tensor_ops
