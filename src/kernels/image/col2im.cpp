// Col2Im (opset 18): sums the sliding blocks of input [N, C*prod(block_shape), L]
// back into images [N, C, *image_shape] (the inverse layout of an im2col with
// the given dilations, pads and strides; overlapping blocks add up).
#include <vector>

#include "kernels/image/image_ops.h"
#include "kernels/tensor/tensor_util.h"

namespace ember::kernels::image {
namespace {

class Col2ImKernel final : public OpKernel {
 public:
  Col2ImKernel(std::vector<int64_t> dilations, std::vector<int64_t> pads, std::vector<int64_t> strides)
      : dilations_(std::move(dilations)), pads_(std::move(pads)), strides_(std::move(strides)) {}

  Status infer(KernelContext& ctx) const override {
    Layout l;
    EMBER_RETURN_IF_ERROR(layout(ctx, l));
    Shape out{ctx.input(0).dim(0), l.channels};
    for (int64_t d : l.image) out.push_back(d);
    ctx.set_output(0, ctx.input(0).dtype(), std::move(out));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    Tensor& out = ctx.output(0);
    Layout l;
    EMBER_RETURN_IF_ERROR(layout(ctx, l));
    Status status = Status::ok();
    EMBER_SWITCH_NUMERIC(in.dtype(), T, { scatter<T>(in, out, l); },
                         status = not_implemented("Col2Im of dtype {}", dtype_name(in.dtype())));
    return status;
  }

 private:
  struct Layout {
    std::vector<int64_t> image;
    std::vector<int64_t> block;
    std::vector<int64_t> blocks;  // sliding positions per axis
    std::vector<int64_t> dilations;
    std::vector<int64_t> strides;
    std::vector<int64_t> pad_begin;
    int64_t channels = 0;
  };

  template <typename T>
  void scatter(const Tensor& in, Tensor& out, const Layout& l) const {
    using C = compute_t<T>;
    const size_t r = l.image.size();
    const int64_t kernel = shape_numel(l.block);
    const int64_t length = shape_numel(l.blocks);
    const int64_t plane = shape_numel(l.image);
    const T* src = in.data_as<T>();
    T* dst = out.data_as<T>();
    std::vector<C> acc(static_cast<size_t>(plane));
    std::vector<int64_t> k_index(r);
    std::vector<int64_t> b_index(r);
    for (int64_t nc = 0; nc < in.dim(0) * l.channels; ++nc) {
      std::fill(acc.begin(), acc.end(), C(0));
      for (int64_t k = 0; k < kernel; ++k) {
        unravel(k, l.block, k_index);
        const T* row = src + (nc * kernel + k) * length;
        for (int64_t b = 0; b < length; ++b) {
          unravel(b, l.blocks, b_index);
          int64_t offset = 0;
          bool inside = true;
          for (size_t d = 0; d < r && inside; ++d) {
            int64_t i = b_index[d] * l.strides[d] - l.pad_begin[d] + k_index[d] * l.dilations[d];
            inside = i >= 0 && i < l.image[d];
            offset = offset * l.image[d] + i;
          }
          if (inside) acc[static_cast<size_t>(offset)] += static_cast<C>(row[b]);
        }
      }
      for (int64_t i = 0; i < plane; ++i) dst[nc * plane + i] = static_cast<T>(acc[static_cast<size_t>(i)]);
    }
  }

  static void unravel(int64_t flat, const std::vector<int64_t>& dims, std::vector<int64_t>& index) {
    for (size_t d = dims.size(); d-- > 0;) {
      index[d] = flat % dims[d];
      flat /= dims[d];
    }
  }

  Status layout(const KernelContext& ctx, Layout& l) const {
    const Tensor& in = ctx.input(0);
    if (!ctx.has_value(1)) return needs_value(1);
    if (!ctx.has_value(2)) return needs_value(2);
    EMBER_ASSIGN_OR_RETURN(Shape image, read_ints(ctx.input(1), "input 1 (image_shape)"));
    EMBER_ASSIGN_OR_RETURN(Shape block, read_ints(ctx.input(2), "input 2 (block_shape)"));
    l.image.assign(image.begin(), image.end());
    l.block.assign(block.begin(), block.end());
    const size_t r = l.image.size();
    if (r == 0 || l.block.size() != r) {
      return invalid_argument("image_shape {} and block_shape {} must have the same, non-zero length",
                              shape_to_string(image), shape_to_string(block));
    }
    auto check = [&](const std::vector<int64_t>& v, size_t n, const char* name) -> Status {
      if (!v.empty() && v.size() != n) return invalid_argument("{} has {} values, expected {}", name, v.size(), n);
      return Status::ok();
    };
    EMBER_RETURN_IF_ERROR(check(dilations_, r, "dilations"));
    EMBER_RETURN_IF_ERROR(check(pads_, 2 * r, "pads"));
    EMBER_RETURN_IF_ERROR(check(strides_, r, "strides"));
    if (in.rank() != 3) return invalid_argument("input 0 {} must be [N, C*prod(block_shape), L]", in.describe());
    int64_t kernel = 1;
    int64_t length = 1;
    for (size_t d = 0; d < r; ++d) {
      int64_t dilation = dilations_.empty() ? 1 : dilations_[d];
      int64_t stride = strides_.empty() ? 1 : strides_[d];
      int64_t pad = pads_.empty() ? 0 : pads_[d] + pads_[d + r];
      if (l.block[d] <= 0 || l.image[d] < 0 || dilation <= 0 || stride <= 0) {
        return invalid_argument("image_shape {}, block_shape {}, dilations and strides must be positive",
                                shape_to_string(image), shape_to_string(block));
      }
      int64_t n = (l.image[d] + pad - dilation * (l.block[d] - 1) - 1) / stride + 1;
      if (n < 1) {
        return invalid_argument("block_shape {} does not fit image_shape {} with these pads and dilations",
                                shape_to_string(block), shape_to_string(image));
      }
      l.blocks.push_back(n);
      l.dilations.push_back(dilation);
      l.strides.push_back(stride);
      l.pad_begin.push_back(pads_.empty() ? 0 : pads_[d]);
      kernel *= l.block[d];
      length *= n;
    }
    if (in.dim(1) % kernel != 0 || in.dim(2) != length) {
      return invalid_argument("input 0 {} must be [N, C*{}, {}] for image_shape {} and block_shape {}", in.describe(),
                              kernel, length, shape_to_string(image), shape_to_string(block));
    }
    l.channels = in.dim(1) / kernel;
    return Status::ok();
  }

  std::vector<int64_t> dilations_;
  std::vector<int64_t> pads_;
  std::vector<int64_t> strides_;
};

}  // namespace

KernelResult create_col2im(const KernelInit& init) {
  for (size_t i = 0; i < 3; ++i) {
    EMBER_RETURN_IF_ERROR(tensor_ops::require_input(init, i, i == 0 ? "input 0" : (i == 1 ? "input 1 (image_shape)" : "input 2 (block_shape)")));
  }
  ir::AttrReader attrs(init.node);
  std::vector<int64_t> dilations = attrs.get_ints("dilations");
  std::vector<int64_t> pads = attrs.get_ints("pads");
  std::vector<int64_t> strides = attrs.get_ints("strides");
  EMBER_RETURN_IF_ERROR(attrs.status());
  return std::unique_ptr<OpKernel>(new Col2ImKernel(std::move(dilations), std::move(pads), std::move(strides)));
}

}  // namespace ember::kernels::image
