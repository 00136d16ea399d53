// DepthToSpace and SpaceToDepth: a 6-D view of the input, transposed and copied.
#include "kernels/tensor/tensor_ops.h"
#include "kernels/tensor/tensor_util.h"

namespace ember::kernels::tensor_ops {
namespace {

enum class Layout { kDepthToSpaceDcr, kDepthToSpaceCrd, kSpaceToDepthDcr, kSpaceToDepthCrd };

class SpaceDepthKernel final : public OpKernel {
 public:
  SpaceDepthKernel(Layout layout, int64_t block, size_t elem_size)
      : layout_(layout), block_(block), elem_size_(elem_size) {}

  Status infer(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    if (in.rank() != 4) return invalid_argument("input 0 must be 4-D (NCHW), got {}", in.describe());
    int64_t n = in.dim(0), c = in.dim(1), h = in.dim(2), w = in.dim(3);
    int64_t bb = block_ * block_;
    if (layout_ == Layout::kSpaceToDepthDcr || layout_ == Layout::kSpaceToDepthCrd) {
      if (h % block_ != 0 || w % block_ != 0) {
        return invalid_argument("height and width of input 0 {} must be multiples of blocksize {}", in.describe(),
                                block_);
      }
      ctx.set_output(0, in.dtype(), Shape{n, c * bb, h / block_, w / block_});
      return Status::ok();
    }
    if (c % bb != 0) {
      return invalid_argument("channels of input 0 {} must be a multiple of blocksize^2 = {}", in.describe(), bb);
    }
    ctx.set_output(0, in.dtype(), Shape{n, c / bb, h * block_, w * block_});
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    int64_t n = in.dim(0), c = in.dim(1), h = in.dim(2), w = in.dim(3);
    int64_t b = block_;
    // view: the input read as 6-D; perm: which view dim each output dim reads.
    Shape view;
    IndexVec perm;
    switch (layout_) {
      case Layout::kDepthToSpaceDcr:
        view = {n, b, b, c / (b * b), h, w};
        perm = {0, 3, 4, 1, 5, 2};
        break;
      case Layout::kDepthToSpaceCrd:
        view = {n, c / (b * b), b, b, h, w};
        perm = {0, 1, 4, 2, 5, 3};
        break;
      case Layout::kSpaceToDepthDcr:
        view = {n, c, h / b, b, w / b, b};
        perm = {0, 3, 5, 1, 2, 4};
        break;
      case Layout::kSpaceToDepthCrd:
        view = {n, c, h / b, b, w / b, b};
        perm = {0, 1, 3, 5, 2, 4};
        break;
    }
    Shape view_strides = contiguous_strides(view);
    IndexVec out_shape(6);
    IndexVec src_strides(6);
    for (size_t i = 0; i < 6; ++i) {
      out_shape[i] = view[static_cast<size_t>(perm[i])];
      src_strides[i] = view_strides[static_cast<size_t>(perm[i])];
    }
    Shape dst_strides = contiguous_strides(out_shape);
    copy_strided(in.data(), src_strides, ctx.output(0).data(), dst_strides, out_shape, elem_size_);
    return Status::ok();
  }

 private:
  Layout layout_;
  int64_t block_;
  size_t elem_size_;
};

Result<int64_t> read_blocksize(ir::AttrReader& attrs) {
  attrs.require("blocksize");
  int64_t block = attrs.get_int("blocksize", 0);
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (block < 1) return invalid_argument("blocksize must be positive, got {}", block);
  return block;
}

}  // namespace

KernelResult create_depth_to_space(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_input(init, 0, "input 0"));
  EMBER_RETURN_IF_ERROR(check_movable_dtype(init.input_dtypes[0], "input 0"));
  ir::AttrReader attrs(init.node);
  EMBER_ASSIGN_OR_RETURN(int64_t block, read_blocksize(attrs));
  std::string mode = init.node.opset >= 11 ? attrs.get_string("mode", "DCR") : "DCR";
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (mode != "DCR" && mode != "CRD") return invalid_argument("mode '{}' is not DCR or CRD", mode);
  Layout layout = mode == "DCR" ? Layout::kDepthToSpaceDcr : Layout::kDepthToSpaceCrd;
  return std::unique_ptr<OpKernel>(new SpaceDepthKernel(layout, block, dtype_size(init.input_dtypes[0])));
}

KernelResult create_space_to_depth(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_input(init, 0, "input 0"));
  EMBER_RETURN_IF_ERROR(check_movable_dtype(init.input_dtypes[0], "input 0"));
  ir::AttrReader attrs(init.node);
  EMBER_ASSIGN_OR_RETURN(int64_t block, read_blocksize(attrs));
  const std::string mode = attrs.get_string("mode", "DCR");
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (mode != "DCR" && mode != "CRD") return invalid_argument("mode '{}' is not DCR or CRD", mode);
  Layout layout = mode == "DCR" ? Layout::kSpaceToDepthDcr : Layout::kSpaceToDepthCrd;
  return std::unique_ptr<OpKernel>(new SpaceDepthKernel(layout, block, dtype_size(init.input_dtypes[0])));
}

}  // namespace ember::kernels::tensor_ops
