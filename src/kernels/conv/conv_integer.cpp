// ConvInteger and QLinearConv (1-D to 3-D, grouped, dilated, strided, padded,
// auto_pad) over u8/s8 operands: the exact int32 sum of (x - x_zero_point) *
// (w - w_zero_point[m]) with padding taps contributing zero. ConvInteger returns
// it; QLinearConv adds the int32 bias and requantizes as QLinearMatMul does
// (f32 multiplier x_scale * w_scale[m] / y_scale, round half to even, clamp).
#include <algorithm>
#include <memory>

#include "kernels/conv/conv_ops.h"
#include "kernels/matmul/window.h"
#include "kernels/quant/qgemm_driver.h"

namespace ember::kernels {
namespace {

struct IntConvShape {
  int64_t batch = 0, in_channels = 0, out_channels = 0, group = 1;
  Window3d w;
};

// A zero point (or scale) given per tensor (stride 0) or per output channel (stride 1).
template <typename T>
struct PerChannel {
  const T* data = nullptr;
  int64_t stride = 0;
  T at(int64_t m) const { return data[m * stride]; }
};

// acc[n, m, out...] = sum over the window of (x - zx) * (w - zw[m]), wrapping modulo 2^32.
template <typename TX, typename TW>
void conv_integer_ref(const IntConvShape& s, const TX* x, int32_t zx, const TW* weights, PerChannel<TW> zw,
                      int32_t* acc) {
  const Window3d& w = s.w;
  const int64_t cpg = s.in_channels / s.group, mpg = s.out_channels / s.group;
  const int64_t in_size = w.in_size(), kernel_size = w.kernel_size();
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t m = 0; m < s.out_channels; ++m) {
      const TX* x_group = x + (n * s.in_channels + (m / mpg) * cpg) * in_size;
      const TW* w_m = weights + m * cpg * kernel_size;
      const int32_t zwm = static_cast<int32_t>(zw.at(m));
      int32_t* y_m = acc + (n * s.out_channels + m) * w.out_size();
      for (int64_t od = 0; od < w.out[0]; ++od) {
        for (int64_t oh = 0; oh < w.out[1]; ++oh) {
          for (int64_t ow = 0; ow < w.out[2]; ++ow) {
            uint32_t sum = 0;
            for (int64_t c = 0; c < cpg; ++c) {
              const TX* xc = x_group + c * in_size;
              const TW* wc = w_m + c * kernel_size;
              for_each_tap(w, od, oh, ow, [&](int64_t i, int64_t k) {
                const int32_t xv = static_cast<int32_t>(xc[i]) - zx;
                const int32_t wv = static_cast<int32_t>(wc[k]) - zwm;
                sum += static_cast<uint32_t>(xv * wv);
              });
            }
            y_m[(od * w.out[1] + oh) * w.out[2] + ow] = static_cast<int32_t>(sum);
          }
        }
      }
    }
  }
}

bool is_8bit(DType t) { return t == DType::kU8 || t == DType::kI8; }

int32_t scalar_zero_point(const Tensor& t) {
  return t.dtype() == DType::kI8 ? t.data_as<int8_t>()[0] : t.data_as<uint8_t>()[0];
}

// Runs conv_integer_ref on u8/s8 X and W of any combination.
void run_conv_integer(const IntConvShape& s, const Tensor& x, int32_t zx, const Tensor& weights, const Tensor* zw,
                      int32_t* acc) {
  static constexpr uint8_t kZeroByte = 0;
  const void* zw_data = zw ? zw->data() : &kZeroByte;
  const int64_t zw_stride = zw && zw->numel() > 1 ? 1 : 0;
  const auto with_w = [&](auto* x_data) {
    using TX = std::remove_const_t<std::remove_pointer_t<decltype(x_data)>>;
    if (weights.dtype() == DType::kI8) {
      conv_integer_ref<TX, int8_t>(s, x_data, zx, weights.data_as<int8_t>(),
                                   {static_cast<const int8_t*>(zw_data), zw_stride}, acc);
    } else {
      conv_integer_ref<TX, uint8_t>(s, x_data, zx, weights.data_as<uint8_t>(),
                                    {static_cast<const uint8_t*>(zw_data), zw_stride}, acc);
    }
  };
  if (x.dtype() == DType::kI8) {
    with_w(x.data_as<int8_t>());
  } else {
    with_w(x.data_as<uint8_t>());
  }
}

// Conv geometry from X [N, C, spatial] and W [M, C/group, kernel].
Result<IntConvShape> conv_geometry(const WindowAttrs& attrs, int64_t group, const Shape& x, const Shape& wt) {
  if (x.size() < 3 || wt.size() != x.size()) {
    return invalid_argument("X {} must be N x C x spatial and W {} of the same rank", shape_to_string(x),
                            shape_to_string(wt));
  }
  IntConvShape s;
  s.batch = x[0];
  s.in_channels = x[1];
  s.out_channels = wt[0];
  s.group = group;
  if (s.in_channels % group != 0 || s.out_channels % group != 0 || wt[1] * group != s.in_channels) {
    return invalid_argument("X {} and W {} do not fit group={} (W must be M x C/group x kernel)", shape_to_string(x),
                            shape_to_string(wt), group);
  }
  const std::span<const int64_t> kernel(wt.begin() + 2, wt.end());
  if (!attrs.kernel_shape.empty() &&
      !std::equal(kernel.begin(), kernel.end(), attrs.kernel_shape.begin(), attrs.kernel_shape.end())) {
    return invalid_argument("kernel_shape attribute does not match W {}", shape_to_string(wt));
  }
  EMBER_ASSIGN_OR_RETURN(s.w, resolve_window(attrs, std::span<const int64_t>(x.begin() + 2, x.end()), kernel));
  return s;
}

Shape output_shape(const IntConvShape& s, size_t spatial_rank) {
  return window_output_shape(s.batch, s.out_channels, s.w, spatial_rank);
}

// A zero point or scale of one element, or (when per_channel) of M elements.
Status check_count(const KernelContext& ctx, size_t i, int64_t m, bool per_channel, std::string_view what) {
  const Tensor& t = ctx.input(i);
  if (t.numel() == 1 && t.rank() <= 1) return Status::ok();
  if (per_channel && t.rank() == 1 && t.numel() == m) return Status::ok();
  return invalid_argument("{} {} must have one element{}", what, t.describe(),
                          per_channel ? fmt::format(" or one per output channel ({})", m) : "");
}

struct ConvAttrs {
  WindowAttrs window;
  int64_t group = 1;
};

Result<ConvAttrs> read_conv_attrs(const KernelInit& init) {
  ConvAttrs a;
  EMBER_ASSIGN_OR_RETURN(a.window, read_window_attrs(init.node, false));
  ir::AttrReader reader(init.node);
  a.group = reader.get_int("group", 1);
  EMBER_RETURN_IF_ERROR(reader.status());
  if (a.group < 1) return invalid_argument("group must be >= 1, got {}", a.group);
  return a;
}

class ConvIntegerKernel final : public OpKernel {
 public:
  explicit ConvIntegerKernel(ConvAttrs attrs) : attrs_(std::move(attrs)) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(IntConvShape s, geometry(ctx));
    ctx.set_output(0, DType::kI32, output_shape(s, ctx.input(0).shape().size() - 2));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(IntConvShape s, geometry(ctx));
    const int32_t zx = ctx.has_input(2) ? scalar_zero_point(ctx.input(2)) : 0;
    run_conv_integer(s, ctx.input(0), zx, ctx.input(1), ctx.has_input(3) ? &ctx.input(3) : nullptr,
                     ctx.output(0).data_as<int32_t>());
    return Status::ok();
  }

 private:
  Result<IntConvShape> geometry(const KernelContext& ctx) const {
    EMBER_ASSIGN_OR_RETURN(IntConvShape s,
                           conv_geometry(attrs_.window, attrs_.group, ctx.input(0).shape(), ctx.input(1).shape()));
    if (ctx.has_input(2)) EMBER_RETURN_IF_ERROR(check_count(ctx, 2, s.out_channels, false, "x_zero_point"));
    if (ctx.has_input(3)) EMBER_RETURN_IF_ERROR(check_count(ctx, 3, s.out_channels, true, "w_zero_point"));
    return s;
  }

  ConvAttrs attrs_;
};

enum QInput : size_t { kX = 0, kXScale, kXZp, kW, kWScale, kWZp, kYScale, kYZp, kBias };

class QLinearConvKernel final : public OpKernel {
 public:
  QLinearConvKernel(ConvAttrs attrs, DType y_dtype) : attrs_(std::move(attrs)), y_dtype_(y_dtype) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(IntConvShape s, geometry(ctx));
    ctx.set_output(0, y_dtype_, output_shape(s, ctx.input(kX).shape().size() - 2));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(IntConvShape s, geometry(ctx));
    Tensor& y = ctx.output(0);
    // The int32 sums, staged in a buffer the calling thread reuses between runs.
    thread_local std::vector<int32_t> t_acc;
    t_acc.resize(static_cast<size_t>(y.numel()));
    run_conv_integer(s, ctx.input(kX), scalar_zero_point(ctx.input(kXZp)), ctx.input(kW), &ctx.input(kWZp),
                     t_acc.data());
    const float x_scale = ctx.input(kXScale).data_as<float>()[0];
    const float y_scale = ctx.input(kYScale).data_as<float>()[0];
    const Tensor& w_scale = ctx.input(kWScale);
    const int64_t ws_stride = w_scale.numel() > 1 ? 1 : 0;
    const int32_t y_zp = scalar_zero_point(ctx.input(kYZp));
    const bool y_signed = y_dtype_ == DType::kI8;
    const int32_t* bias = ctx.has_input(kBias) ? ctx.input(kBias).data_as<int32_t>() : nullptr;
    const int64_t out_size = s.w.out_size();
    auto* out = static_cast<uint8_t*>(y.data());
    for (int64_t n = 0; n < s.batch; ++n) {
      for (int64_t m = 0; m < s.out_channels; ++m) {
        const float mult = x_scale * w_scale.data_as<float>()[m * ws_stride] / y_scale;
        const uint32_t b = bias ? static_cast<uint32_t>(bias[m]) : 0u;
        const int64_t base = (n * s.out_channels + m) * out_size;
        for (int64_t i = base; i < base + out_size; ++i) {
          const int32_t acc = static_cast<int32_t>(static_cast<uint32_t>(t_acc[static_cast<size_t>(i)]) + b);
          out[i] = static_cast<uint8_t>(quant::qgemm_requantize(acc, mult, y_zp, y_signed));
        }
      }
    }
    return Status::ok();
  }

 private:
  Result<IntConvShape> geometry(const KernelContext& ctx) const {
    EMBER_ASSIGN_OR_RETURN(IntConvShape s,
                           conv_geometry(attrs_.window, attrs_.group, ctx.input(kX).shape(), ctx.input(kW).shape()));
    EMBER_RETURN_IF_ERROR(check_count(ctx, kXScale, s.out_channels, false, "x_scale"));
    EMBER_RETURN_IF_ERROR(check_count(ctx, kXZp, s.out_channels, false, "x_zero_point"));
    EMBER_RETURN_IF_ERROR(check_count(ctx, kWScale, s.out_channels, true, "w_scale"));
    EMBER_RETURN_IF_ERROR(check_count(ctx, kWZp, s.out_channels, true, "w_zero_point"));
    EMBER_RETURN_IF_ERROR(check_count(ctx, kYScale, s.out_channels, false, "y_scale"));
    EMBER_RETURN_IF_ERROR(check_count(ctx, kYZp, s.out_channels, false, "y_zero_point"));
    if (ctx.has_input(kBias)) {
      const Shape& b = ctx.input(kBias).shape();
      if (b.size() != 1 || b[0] != s.out_channels) {
        return invalid_argument("B {} must have shape [{}]", shape_to_string(b), s.out_channels);
      }
    }
    return s;
  }

  ConvAttrs attrs_;
  DType y_dtype_;
};

}  // namespace

Result<std::unique_ptr<OpKernel>> create_conv_integer(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 2));
  const DType tx = init.input_dtypes[0], tw = init.input_dtypes[1];
  if (!is_8bit(tx) || !is_8bit(tw)) {
    return not_implemented("X {} and W {} must be uint8 or int8", dtype_name(tx), dtype_name(tw));
  }
  const DType zx = input_dtype(init, 2), zw = input_dtype(init, 3);
  if (zx != DType::kUndefined && zx != tx) {
    return invalid_argument("x_zero_point is {} but X is {}", dtype_name(zx), dtype_name(tx));
  }
  if (zw != DType::kUndefined && zw != tw) {
    return invalid_argument("w_zero_point is {} but W is {}", dtype_name(zw), dtype_name(tw));
  }
  EMBER_ASSIGN_OR_RETURN(ConvAttrs attrs, read_conv_attrs(init));
  return std::unique_ptr<OpKernel>(std::make_unique<ConvIntegerKernel>(std::move(attrs)));
}

Result<std::unique_ptr<OpKernel>> create_qlinear_conv(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 8));
  const DType tx = init.input_dtypes[kX], tw = init.input_dtypes[kW], ty = init.input_dtypes[kYZp];
  if (!is_8bit(tx) || !is_8bit(tw) || !is_8bit(ty)) {
    return not_implemented("x {}, w {} and y_zero_point {} must be uint8 or int8", dtype_name(tx), dtype_name(tw),
                           dtype_name(ty));
  }
  if (init.input_dtypes[kXZp] != tx || init.input_dtypes[kWZp] != tw) {
    return invalid_argument("x_zero_point ({}) and w_zero_point ({}) must have the types of x ({}) and w ({})",
                            dtype_name(init.input_dtypes[kXZp]), dtype_name(init.input_dtypes[kWZp]), dtype_name(tx),
                            dtype_name(tw));
  }
  for (size_t i : {kXScale, kWScale, kYScale}) {
    if (init.input_dtypes[i] != DType::kF32) {
      return not_implemented("input {} is {}; scales must be float32", i, dtype_name(init.input_dtypes[i]));
    }
  }
  const DType tb = input_dtype(init, kBias);
  if (tb != DType::kUndefined && tb != DType::kI32) return invalid_argument("B must be int32, got {}", dtype_name(tb));
  EMBER_ASSIGN_OR_RETURN(ConvAttrs attrs, read_conv_attrs(init));
  return std::unique_ptr<OpKernel>(std::make_unique<QLinearConvKernel>(std::move(attrs), ty));
}

}  // namespace ember::kernels
