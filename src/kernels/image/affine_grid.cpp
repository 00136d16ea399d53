// AffineGrid (opset 20): the sampling grid of a batch of affine matrices theta
// [N, 2, 3] (2-D) or [N, 3, 4] (3-D) over the output size [N, C, (D,) H, W], in
// GridSample's normalized coordinates (x along W first).
#include <vector>

#include "kernels/image/image_ops.h"
#include "kernels/tensor/tensor_util.h"

namespace ember::kernels::image {
namespace {

// Normalized coordinate of position i of an axis of length len; a length-1
// axis sits at 0, as PyTorch's affine_grid.
double base_coordinate(int64_t i, int64_t len, bool align_corners) {
  if (len <= 1) return 0.0;
  auto n = static_cast<double>(len);
  if (align_corners) return -1.0 + static_cast<double>(i) * (2.0 / (n - 1));
  double step = 2.0 / n;
  return (-1.0 + step / 2) + static_cast<double>(i) * step;
}

class AffineGridKernel final : public OpKernel {
 public:
  explicit AffineGridKernel(bool align_corners) : align_corners_(align_corners) {}

  Status infer(KernelContext& ctx) const override {
    const Tensor& theta = ctx.input(0);
    if (!ctx.has_value(1)) return needs_value(1);
    EMBER_ASSIGN_OR_RETURN(Shape size, read_ints(ctx.input(1), "input 1 (size)"));
    if (size.size() != 4 && size.size() != 5) {
      return invalid_argument("input 1 (size) {} must be [N, C, H, W] or [N, C, D, H, W]", shape_to_string(size));
    }
    auto r = static_cast<int64_t>(size.size()) - 2;
    if (theta.rank() != 3 || theta.dim(0) != size[0] || theta.dim(1) != r || theta.dim(2) != r + 1) {
      return invalid_argument("input 0 (theta) {} must be [{}, {}, {}] for size {}", theta.describe(), size[0], r, r + 1,
                              shape_to_string(size));
    }
    for (int64_t d : size) {
      if (d < 0) return invalid_argument("input 1 (size) {} has a negative length", shape_to_string(size));
    }
    Shape out{size[0]};
    for (size_t d = 2; d < size.size(); ++d) out.push_back(size[d]);
    out.push_back(r);
    ctx.set_output(0, theta.dtype(), std::move(out));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& theta = ctx.input(0);
    Tensor& out = ctx.output(0);
    if (out.numel() == 0) return Status::ok();
    const int64_t r = out.rank() - 2;
    // Spatial lengths innermost first: W, H (, D), the order of the grid's last axis.
    std::vector<int64_t> lengths;
    for (int64_t d = out.rank() - 2; d >= 1; --d) lengths.push_back(out.dim(d));
    const int64_t positions = out.numel() / (out.dim(0) * r);
    EMBER_SWITCH_FLOAT(theta.dtype(), T, {
      const T* th = theta.data_as<T>();
      T* dst = out.data_as<T>();
      std::vector<double> homo(static_cast<size_t>(r + 1), 1.0);
      for (int64_t n = 0; n < out.dim(0); ++n) {
        const T* m = th + n * r * (r + 1);
        for (int64_t p = 0; p < positions; ++p) {
          int64_t rest = p;
          for (size_t k = 0; k < lengths.size(); ++k) {
            homo[k] = base_coordinate(rest % lengths[k], lengths[k], align_corners_);
            rest /= lengths[k];
          }
          T* o = dst + (n * positions + p) * r;
          for (int64_t j = 0; j < r; ++j) {
            double acc = 0;
            for (int64_t k = 0; k <= r; ++k) acc += static_cast<double>(static_cast<compute_t<T>>(m[j * (r + 1) + k])) * homo[static_cast<size_t>(k)];
            o[j] = static_cast<T>(static_cast<compute_t<T>>(acc));
          }
        }
      }
    }, return not_implemented("AffineGrid of theta dtype {}", dtype_name(theta.dtype())));
    return Status::ok();
  }

 private:
  bool align_corners_;
};

}  // namespace

KernelResult create_affine_grid(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(tensor_ops::require_input(init, 0, "input 0 (theta)"));
  EMBER_RETURN_IF_ERROR(tensor_ops::require_input(init, 1, "input 1 (size)"));
  if (!dtype_is_float(init.input_dtypes[0])) {
    return invalid_argument("input 0 (theta) must be floating point, got {}", dtype_name(init.input_dtypes[0]));
  }
  ir::AttrReader attrs(init.node);
  bool align_corners = attrs.get_int("align_corners", 0) != 0;
  EMBER_RETURN_IF_ERROR(attrs.status());
  return std::unique_ptr<OpKernel>(new AffineGridKernel(align_corners));
}

}  // namespace ember::kernels::image
