// Conv (1-D to 3-D, grouped, dilated, strided, padded): f32 through im2col and
// the sgemm driver (kernels/conv/conv_gemm.h), other float types through a
// direct reference loop over output positions with a compute_t<T> accumulator.
#include <algorithm>
#include <memory>

#include "kernels/conv/conv_gemm.h"
#include "kernels/matmul/matmul_ops.h"
#include "kernels/matmul/window.h"

namespace ember::kernels {
namespace {

struct ConvShape {
  int64_t batch = 0, in_channels = 0, out_channels = 0, group = 1;
};

template <typename T>
void conv_ref(const ConvShape& s, const Window3d& w, const T* x, const T* weights, const T* bias, T* y) {
  using Acc = compute_t<T>;
  const int64_t cpg = s.in_channels / s.group, mpg = s.out_channels / s.group;
  const int64_t in_size = w.in_size(), kernel_size = w.kernel_size();
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t m = 0; m < s.out_channels; ++m) {
      const T* x_group = x + (n * s.in_channels + (m / mpg) * cpg) * in_size;
      const T* w_m = weights + m * cpg * kernel_size;
      T* y_m = y + (n * s.out_channels + m) * w.out_size();
      for (int64_t od = 0; od < w.out[0]; ++od) {
        for (int64_t oh = 0; oh < w.out[1]; ++oh) {
          for (int64_t ow = 0; ow < w.out[2]; ++ow) {
            Acc acc = bias ? static_cast<Acc>(bias[m]) : Acc(0);
            for (int64_t c = 0; c < cpg; ++c) {
              const T* xc = x_group + c * in_size;
              const T* wc = w_m + c * kernel_size;
              for_each_tap(w, od, oh, ow,
                           [&](int64_t i, int64_t k) { acc += static_cast<Acc>(xc[i]) * static_cast<Acc>(wc[k]); });
            }
            y_m[(od * w.out[1] + oh) * w.out[2] + ow] = static_cast<T>(acc);
          }
        }
      }
    }
  }
}

class ConvKernel final : public OpKernel {
 public:
  ConvKernel(DType dtype, WindowAttrs attrs, int64_t group) : dtype_(dtype), attrs_(std::move(attrs)), group_(group) {}

  Status infer(KernelContext& ctx) const override {
    ConvShape s;
    EMBER_ASSIGN_OR_RETURN(Window3d w, geometry(ctx, s));
    ctx.set_output(0, dtype_, window_output_shape(s.batch, s.out_channels, w, ctx.input(0).shape().size() - 2));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    ConvShape s;
    EMBER_ASSIGN_OR_RETURN(Window3d w, geometry(ctx, s));
    const bool has_bias = ctx.has_input(2);
    if (dtype_ == DType::kF32) {
      conv_f32_gemm({s.batch, s.in_channels, s.out_channels, s.group, w}, ctx.input(0).data_as<float>(),
                    ctx.input(1).data_as<float>(), has_bias ? ctx.input(2).data_as<float>() : nullptr,
                    ctx.output(0).data_as<float>());
      return Status::ok();
    }
    EMBER_SWITCH_FLOAT(dtype_, T,
                       conv_ref<T>(s, w, ctx.input(0).data_as<T>(), ctx.input(1).data_as<T>(),
                                   has_bias ? ctx.input(2).data_as<T>() : nullptr, ctx.output(0).data_as<T>()),
                       return internal_error("Conv: unexpected dtype {}", dtype_name(dtype_)));
    return Status::ok();
  }

 private:
  Result<Window3d> geometry(const KernelContext& ctx, ConvShape& s) const {
    const Shape& x = ctx.input(0).shape();
    const Shape& wt = ctx.input(1).shape();
    if (x.size() < 3 || wt.size() != x.size()) {
      return invalid_argument("X {} must be N x C x spatial and W {} of the same rank", shape_to_string(x),
                              shape_to_string(wt));
    }
    s.batch = x[0];
    s.in_channels = x[1];
    s.out_channels = wt[0];
    s.group = group_;
    if (s.in_channels % group_ != 0 || s.out_channels % group_ != 0 || wt[1] * group_ != s.in_channels) {
      return invalid_argument("X {} and W {} do not fit group={} (W must be M x C/group x kernel)", shape_to_string(x),
                              shape_to_string(wt), group_);
    }
    const std::span<const int64_t> kernel(wt.begin() + 2, wt.end());
    if (!attrs_.kernel_shape.empty() &&
        !std::equal(kernel.begin(), kernel.end(), attrs_.kernel_shape.begin(), attrs_.kernel_shape.end())) {
      return invalid_argument("kernel_shape attribute does not match W {}", shape_to_string(wt));
    }
    if (ctx.has_input(2)) {
      const Shape& b = ctx.input(2).shape();
      if (b.size() != 1 || b[0] != s.out_channels) {
        return invalid_argument("B {} must have shape [{}]", shape_to_string(b), s.out_channels);
      }
    }
    return resolve_window(attrs_, std::span<const int64_t>(x.begin() + 2, x.end()), kernel);
  }

  DType dtype_;
  WindowAttrs attrs_;
  int64_t group_;
};

}  // namespace

Result<std::unique_ptr<OpKernel>> create_conv(const KernelInit& init) {
  EMBER_ASSIGN_OR_RETURN(const DType t, conv_float_dtype(init));
  EMBER_ASSIGN_OR_RETURN(WindowAttrs attrs, read_window_attrs(init.node, false));
  ir::AttrReader reader(init.node);
  const int64_t group = reader.get_int("group", 1);
  EMBER_RETURN_IF_ERROR(reader.status());
  if (group < 1) return invalid_argument("group must be >= 1, got {}", group);
  return std::unique_ptr<OpKernel>(std::make_unique<ConvKernel>(t, std::move(attrs), group));
}

}  // namespace ember::kernels
