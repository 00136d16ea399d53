// Conv (1-D to 3-D, grouped, dilated, strided, padded): f32 through the direct
// depthwise kernel (one input channel per group) or the filter packed once as
// a GEMM's A against im2col panels (kernels/conv/conv_f32.h); other float types
// and EMBER_REFERENCE=1 through a direct reference loop over output positions
// with a compute_t<T> accumulator.
#include <algorithm>
#include <memory>

#include "kernels/conv/conv_f32.h"
#include "kernels/matmul/matmul_ops.h"
#include "kernels/matmul/sgemm_ukernels.h"
#include "kernels/matmul/window.h"

namespace ember::kernels {
namespace {

template <typename T>
void conv_ref(const ConvShape& s, const T* x, const T* weights, const T* bias, T* y) {
  using Acc = compute_t<T>;
  const Window3d& w = s.w;
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
  // `fast`: f32 outside EMBER_REFERENCE=1; `filter`: W (and B) packed at
  // creation, or empty.
  ConvKernel(DType dtype, WindowAttrs attrs, int64_t group, bool fast, ConvFilter filter)
      : dtype_(dtype), attrs_(std::move(attrs)), group_(group), fast_(fast), filter_(std::move(filter)) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(const ConvShape s, geometry(ctx));
    ctx.set_output(0, dtype_, window_output_shape(s.batch, s.out_channels, s.w, ctx.input(0).shape().size() - 2));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(const ConvShape s, geometry(ctx));
    if (fast_) {
      run_f32(ctx, s);
      return Status::ok();
    }
    const bool has_bias = ctx.has_input(2);
    EMBER_SWITCH_FLOAT(dtype_, T,
                       conv_ref<T>(s, ctx.input(0).data_as<T>(), ctx.input(1).data_as<T>(),
                                   has_bias ? ctx.input(2).data_as<T>() : nullptr, ctx.output(0).data_as<T>()),
                       return internal_error("Conv: unexpected dtype {}", dtype_name(dtype_)));
    return Status::ok();
  }

  bool prepacked_input(size_t i) const override {
    return !filter_.empty() && (i == 1 || (i == 2 && filter_.has_bias()));
  }
  int64_t packed_bytes() const override { return filter_.bytes(); }

 private:
  void run_f32(KernelContext& ctx, const ConvShape& s) const {
    const float* x = ctx.input(0).data_as<float>();
    float* y = ctx.output(0).data_as<float>();
    if (!filter_.empty()) {
      conv_f32_gemm(s, filter_, x, y);
      return;
    }
    const float* w = ctx.input(1).data_as<float>();
    const float* bias = ctx.has_input(2) ? ctx.input(2).data_as<float>() : nullptr;
    if (conv_is_depthwise(s)) {
      conv_f32_depthwise(dwconv::dwconv_table(), s, x, w, bias, y);
      return;
    }
    // W or B computed at run time: packed on every run, into a buffer that
    // keeps its capacity.
    thread_local ConvFilter t_filter;
    t_filter.pack(sgemm::sgemm_table(), w, bias, s.out_channels, s.group,
                  s.in_channels / s.group * s.w.kernel_size());
    conv_f32_gemm(s, t_filter, x, y);
  }

  Result<ConvShape> geometry(const KernelContext& ctx) const {
    const Shape& x = ctx.input(0).shape();
    const Shape& wt = ctx.input(1).shape();
    if (x.size() < 3 || wt.size() != x.size()) {
      return invalid_argument("X {} must be N x C x spatial and W {} of the same rank", shape_to_string(x),
                              shape_to_string(wt));
    }
    ConvShape s;
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
    EMBER_ASSIGN_OR_RETURN(s.w, resolve_window(attrs_, std::span<const int64_t>(x.begin() + 2, x.end()), kernel));
    return s;
  }

  DType dtype_;
  WindowAttrs attrs_;
  int64_t group_;
  bool fast_;
  ConvFilter filter_;
};

// W (and B, when present) packed for the GEMM path at creation, when both are
// constants of a shape that fits `group` and the Conv is not depthwise (W's
// second dim, C / group, is 1: that path reads W as it is); else empty.
ConvFilter pack_constant_filter(const KernelInit& init, int64_t group) {
  ConvFilter filter;
  const Tensor* w = init.constant_inputs.size() > 1 ? init.constant_inputs[1] : nullptr;
  const bool has_bias = input_dtype(init, 2) != DType::kUndefined;
  const Tensor* b = has_bias && init.constant_inputs.size() > 2 ? init.constant_inputs[2] : nullptr;
  if (w == nullptr || w->data() == nullptr || w->rank() < 3 || w->dim(0) % group != 0 || w->dim(1) == 1) {
    return filter;
  }
  if (has_bias && (b == nullptr || b->data() == nullptr || b->rank() != 1 || b->dim(0) != w->dim(0))) return filter;
  const int64_t out_channels = w->dim(0);
  filter.pack(sgemm::sgemm_table(), w->data_as<float>(), has_bias ? b->data_as<float>() : nullptr, out_channels, group,
              out_channels == 0 ? 0 : w->numel() / out_channels);
  return filter;
}

}  // namespace

Result<std::unique_ptr<OpKernel>> create_conv(const KernelInit& init) {
  EMBER_ASSIGN_OR_RETURN(const DType t, conv_float_dtype(init));
  EMBER_ASSIGN_OR_RETURN(WindowAttrs attrs, read_window_attrs(init.node, false));
  ir::AttrReader reader(init.node);
  const int64_t group = reader.get_int("group", 1);
  EMBER_RETURN_IF_ERROR(reader.status());
  if (group < 1) return invalid_argument("group must be >= 1, got {}", group);
  const bool fast = t == DType::kF32 && !reference_mode();
  ConvFilter filter = fast ? pack_constant_filter(init, group) : ConvFilter();
  return std::unique_ptr<OpKernel>(std::make_unique<ConvKernel>(t, std::move(attrs), group, fast, std::move(filter)));
}

}  // namespace ember::kernels
