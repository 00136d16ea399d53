// Expand and Tile: strided copies that read some source dims with stride 0.
#include "kernels/common/shape_util.h"
#include "kernels/tensor/tensor_ops.h"
#include "kernels/tensor/tensor_util.h"

namespace ember::kernels::tensor_ops {
namespace {

// Reads the shape-like input 1 (Expand's shape, Tile's repeats), or asks for its value.
Status read_input1(const KernelContext& ctx, std::string_view what, IndexVec& out) {
  if (!ctx.has_value(1)) return needs_value(1);
  EMBER_ASSIGN_OR_RETURN(out, read_index_input(ctx.input(1), what));
  for (int64_t v : out) {
    if (v < 0) return invalid_argument("{} {} has a negative entry", what, shape_to_string(out));
  }
  return Status::ok();
}

class ExpandKernel final : public OpKernel {
 public:
  explicit ExpandKernel(size_t elem_size) : elem_size_(elem_size) {}

  Status infer(KernelContext& ctx) const override {
    IndexVec shape;
    EMBER_RETURN_IF_ERROR(read_input1(ctx, "input 1 (shape)", shape));
    auto out = broadcast_shapes(ctx.input(0).shape(), shape);
    if (!out.is_ok()) {
      return invalid_argument("input 0 {} cannot be expanded to {}", ctx.input(0).describe(), shape_to_string(shape));
    }
    ctx.set_output(0, ctx.input(0).dtype(), std::move(out).value());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    Tensor& out = ctx.output(0);
    Shape src_strides = broadcast_strides(in.shape(), out.shape());
    copy_strided(in.data(), src_strides, out.data(), contiguous_strides(out.shape()), out.shape(), elem_size_);
    return Status::ok();
  }

 private:
  size_t elem_size_;
};

class TileKernel final : public OpKernel {
 public:
  TileKernel(bool single_axis, size_t elem_size) : single_axis_(single_axis), elem_size_(elem_size) {}

  Status infer(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    IndexVec repeats;
    if (single_axis_) {
      EMBER_RETURN_IF_ERROR(read_single_axis(ctx, repeats));
    } else {
      EMBER_RETURN_IF_ERROR(read_input1(ctx, "input 1 (repeats)", repeats));
    }
    if (static_cast<int64_t>(repeats.size()) != in.rank()) {
      return invalid_argument("repeats {} must have one entry per dim of input 0 {}", shape_to_string(repeats),
                              in.describe());
    }
    Shape out = in.shape();
    for (size_t d = 0; d < out.size(); ++d) out[d] *= repeats[d];
    ctx.set_output(0, in.dtype(), std::move(out));
    return Status::ok();
  }

  // The output viewed as [r0, d0, r1, d1, ...] is the input read with stride 0
  // over every repeat dim.
  Status run(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    Shape in_strides = contiguous_strides(in.shape());
    size_t rank = in_strides.size();
    IndexVec shape(2 * rank);
    IndexVec src_strides(2 * rank);
    for (size_t d = 0; d < rank; ++d) {
      int64_t dim = in.dim(static_cast<int64_t>(d));
      shape[2 * d] = dim == 0 ? 0 : ctx.output(0).dim(static_cast<int64_t>(d)) / dim;
      shape[2 * d + 1] = dim;
      src_strides[2 * d] = 0;
      src_strides[2 * d + 1] = in_strides[d];
    }
    IndexVec dst_strides(2 * rank);
    int64_t stride = 1;
    for (size_t d = 2 * rank; d-- > 0;) {
      dst_strides[d] = stride;
      stride *= shape[d];
    }
    copy_strided(in.data(), src_strides, ctx.output(0).data(), dst_strides, shape, elem_size_);
    return Status::ok();
  }

 private:
  // Opset 1 repeats along one axis: input 1 is the count, input 2 the axis.
  static Status read_single_axis(const KernelContext& ctx, IndexVec& repeats) {
    IndexVec tiles;
    EMBER_RETURN_IF_ERROR(read_input1(ctx, "input 1 (tiles)", tiles));
    if (!ctx.has_input(2)) return invalid_argument("input 2 (axis) is required");
    if (!ctx.has_value(2)) return needs_value(2);
    EMBER_ASSIGN_OR_RETURN(IndexVec axis, read_index_input(ctx.input(2), "input 2 (axis)"));
    if (tiles.size() != 1 || axis.size() != 1) {
      return invalid_argument("inputs 1 (tiles) and 2 (axis) must hold one value each");
    }
    int64_t rank = ctx.input(0).rank();
    EMBER_ASSIGN_OR_RETURN(int64_t a, normalize_axis(axis[0], rank));
    repeats.clear();
    repeats.resize(static_cast<size_t>(rank), 1);
    repeats[static_cast<size_t>(a)] = tiles[0];
    return Status::ok();
  }

  bool single_axis_;
  size_t elem_size_;
};

Status check_inputs(const KernelInit& init, std::string_view input1) {
  EMBER_RETURN_IF_ERROR(require_input(init, 0, "input 0"));
  EMBER_RETURN_IF_ERROR(require_input(init, 1, input1));
  return check_movable_dtype(init.input_dtypes[0], "input 0");
}

}  // namespace

KernelResult create_expand(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(check_inputs(init, "input 1 (shape)"));
  return std::unique_ptr<OpKernel>(new ExpandKernel(dtype_size(init.input_dtypes[0])));
}

KernelResult create_tile(const KernelInit& init) {
  bool single_axis = init.node.opset < 6;
  EMBER_RETURN_IF_ERROR(check_inputs(init, single_axis ? "input 1 (tiles)" : "input 1 (repeats)"));
  if (single_axis) EMBER_RETURN_IF_ERROR(require_input(init, 2, "input 2 (axis)"));
  return std::unique_ptr<OpKernel>(new TileKernel(single_axis, dtype_size(init.input_dtypes[0])));
}

}  // namespace ember::kernels::tensor_ops
