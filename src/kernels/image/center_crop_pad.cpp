// CenterCropPad (opset 18): crops or zero-pads each listed axis to the given
// length around its center (the extra element of an odd difference goes to the end).
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/common/shape_util.h"
#include "kernels/image/image_ops.h"
#include "kernels/tensor/tensor_util.h"

namespace ember::kernels::image {
namespace {

class CenterCropPadKernel final : public OpKernel {
 public:
  CenterCropPadKernel(std::vector<int64_t> axes, size_t elem_size) : axes_(std::move(axes)), elem_size_(elem_size) {}

  Status infer(KernelContext& ctx) const override {
    Shape out;
    EMBER_RETURN_IF_ERROR(output_shape(ctx, out));
    ctx.set_output(0, ctx.input(0).dtype(), std::move(out));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    Tensor& out = ctx.output(0);
    if (out.nbytes() != 0) std::memset(out.data(), 0, out.nbytes());
    if (out.numel() == 0 || in.numel() == 0) return Status::ok();
    Shape in_strides = contiguous_strides(in.shape());
    Shape out_strides = contiguous_strides(out.shape());
    Shape region(in.shape().size());
    int64_t src_offset = 0;
    int64_t dst_offset = 0;
    for (size_t d = 0; d < region.size(); ++d) {
      int64_t n = in.shape()[d];
      int64_t m = out.shape()[d];
      region[d] = std::min(n, m);
      if (n > m) src_offset += (n - m) / 2 * in_strides[d];
      if (m > n) dst_offset += (m - n) / 2 * out_strides[d];
    }
    const auto* src = static_cast<const std::byte*>(in.data()) + static_cast<size_t>(src_offset) * elem_size_;
    auto* dst = static_cast<std::byte*>(out.data()) + static_cast<size_t>(dst_offset) * elem_size_;
    tensor_ops::copy_strided(src, in_strides, dst, out_strides, region, elem_size_);
    return Status::ok();
  }

 private:
  Status output_shape(const KernelContext& ctx, Shape& out) const {
    const Tensor& in = ctx.input(0);
    if (!ctx.has_value(1)) return needs_value(1);
    EMBER_ASSIGN_OR_RETURN(Shape lengths, read_ints(ctx.input(1), "input 1 (shape)"));
    std::vector<int64_t> axes = axes_;
    if (axes.empty()) {
      for (int64_t d = 0; d < in.rank(); ++d) axes.push_back(d);
    }
    if (lengths.size() != axes.size()) {
      return invalid_argument("input 1 (shape) {} has {} values for {} axes of input 0 {}", shape_to_string(lengths),
                              lengths.size(), axes.size(), in.describe());
    }
    out = in.shape();
    std::vector<bool> seen(static_cast<size_t>(in.rank()), false);
    for (size_t k = 0; k < axes.size(); ++k) {
      EMBER_ASSIGN_OR_RETURN(int64_t d, normalize_axis(axes[k], in.rank(), "axes value"));
      if (seen[static_cast<size_t>(d)]) return invalid_argument("axes lists axis {} twice", d);
      seen[static_cast<size_t>(d)] = true;
      if (lengths[k] < 0) return invalid_argument("input 1 (shape) {} has a negative length", shape_to_string(lengths));
      out[static_cast<size_t>(d)] = lengths[k];
    }
    return Status::ok();
  }

  std::vector<int64_t> axes_;
  size_t elem_size_;
};

}  // namespace

KernelResult create_center_crop_pad(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(tensor_ops::require_input(init, 0, "input 0 (input_data)"));
  EMBER_RETURN_IF_ERROR(tensor_ops::require_input(init, 1, "input 1 (shape)"));
  DType dtype = init.input_dtypes[0];
  EMBER_RETURN_IF_ERROR(tensor_ops::check_movable_dtype(dtype, "input 0 (input_data)"));
  if (dtype_is_packed(dtype)) return not_implemented("CenterCropPad of packed dtype {}", dtype_name(dtype));
  ir::AttrReader attrs(init.node);
  std::vector<int64_t> axes = attrs.get_ints("axes");
  EMBER_RETURN_IF_ERROR(attrs.status());
  return std::unique_ptr<OpKernel>(new CenterCropPadKernel(std::move(axes), dtype_size(dtype)));
}

}  // namespace ember::kernels::image
