// DeformConv over 2-D images: each kernel tap samples X bilinearly (zeros
// outside the image) at its regular position plus a learned offset, scaled by
// an optional mask. The samples of one image and group form the columns
// [C/group * kernel taps, output positions] that one GEMM with W turns into Y.
#include <cmath>
#include <memory>
#include <vector>

#include "kernels/conv/conv_ops.h"
#include "kernels/matmul/gemm_ref.h"
#include "kernels/matmul/sgemm.h"

namespace ember::kernels {
namespace {

struct DeformShape {
  int64_t batch = 0, in_channels = 0, out_channels = 0, group = 1, offset_group = 1;
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0, kernel_h = 0, kernel_w = 0;
  int64_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1, pad_top = 0, pad_left = 0;
};

// X's plane at real position (y, x), bilinear between the four neighbours;
// neighbours outside the plane read as zero.
template <typename T>
T bilinear_zero_padded(const T* plane, int64_t h, int64_t w, T y, T x) {
  const T y0f = std::floor(y), x0f = std::floor(x);
  const int64_t y0 = static_cast<int64_t>(y0f), x0 = static_cast<int64_t>(x0f);
  const T ly = y - y0f, lx = x - x0f;
  const auto at = [&](int64_t yy, int64_t xx) -> T {
    return yy >= 0 && yy < h && xx >= 0 && xx < w ? plane[yy * w + xx] : T(0);
  };
  return (T(1) - ly) * ((T(1) - lx) * at(y0, x0) + lx * at(y0, x0 + 1)) +
         ly * ((T(1) - lx) * at(y0 + 1, x0) + lx * at(y0 + 1, x0 + 1));
}

// columns[(c * kernel taps + tap) * positions + p] for the channels of group g of image n.
template <typename T>
void deform_columns(const DeformShape& s, int64_t n, int64_t g, const T* x, const T* offset, const T* mask,
                    T* columns) {
  const int64_t taps = s.kernel_h * s.kernel_w, positions = s.out_h * s.out_w;
  const int64_t cpg = s.in_channels / s.group, channels_per_offset = s.in_channels / s.offset_group;
  for (int64_t cl = 0; cl < cpg; ++cl) {
    const int64_t c = g * cpg + cl, og = c / channels_per_offset;
    const T* plane = x + (n * s.in_channels + c) * s.in_h * s.in_w;
    for (int64_t kh = 0; kh < s.kernel_h; ++kh) {
      for (int64_t kw = 0; kw < s.kernel_w; ++kw) {
        const int64_t tap = kh * s.kernel_w + kw;
        const T* off_y = offset + ((n * s.offset_group + og) * taps + tap) * 2 * positions;
        const T* off_x = off_y + positions;
        const T* m = mask ? mask + ((n * s.offset_group + og) * taps + tap) * positions : nullptr;
        T* col = columns + (cl * taps + tap) * positions;
        for (int64_t oh = 0; oh < s.out_h; ++oh) {
          for (int64_t ow = 0; ow < s.out_w; ++ow) {
            const int64_t p = oh * s.out_w + ow;
            const T y = static_cast<T>(oh * s.stride_h - s.pad_top + kh * s.dilation_h) + off_y[p];
            const T xx = static_cast<T>(ow * s.stride_w - s.pad_left + kw * s.dilation_w) + off_x[p];
            const T v = bilinear_zero_padded(plane, s.in_h, s.in_w, y, xx);
            col[p] = m ? v * m[p] : v;
          }
        }
      }
    }
  }
}

template <typename T>
void deform_conv(const DeformShape& s, const T* x, const T* weights, const T* offset, const T* bias, const T* mask,
                 T* y) {
  const int64_t taps = s.kernel_h * s.kernel_w, positions = s.out_h * s.out_w;
  const int64_t cpg = s.in_channels / s.group, mpg = s.out_channels / s.group;
  thread_local std::vector<T> t_columns;
  t_columns.resize(static_cast<size_t>(cpg * taps * positions));
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t g = 0; g < s.group; ++g) {
      deform_columns(s, n, g, x, offset, mask, t_columns.data());
      T* y_g = y + (n * s.out_channels + g * mpg) * positions;
      GemmParams p;
      p.m = mpg;
      p.n = positions;
      p.k = cpg * taps;
      p.lda = cpg * taps;
      p.ldb = positions;
      p.ldc = positions;
      const T* w_g = weights + g * mpg * cpg * taps;
      if constexpr (std::is_same_v<T, float>) {
        sgemm::gemm(sgemm::sgemm_table(), p, w_g, t_columns.data(), y_g);
      } else {
        gemm_ref<T>(p, w_g, t_columns.data(), y_g);
      }
      if (bias == nullptr) continue;
      for (int64_t m = 0; m < mpg; ++m) {
        for (int64_t i = 0; i < positions; ++i) y_g[m * positions + i] += bias[g * mpg + m];
      }
    }
  }
}

class DeformConvKernel final : public OpKernel {
 public:
  struct Attrs {
    std::vector<int64_t> kernel_shape, strides, dilations, pads;
    int64_t group = 1, offset_group = 1;
  };

  DeformConvKernel(DType dtype, Attrs attrs) : dtype_(dtype), attrs_(std::move(attrs)) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(DeformShape s, geometry(ctx));
    ctx.set_output(0, dtype_, Shape{s.batch, s.out_channels, s.out_h, s.out_w});
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(DeformShape s, geometry(ctx));
    const auto go = [&](auto tag) {
      using T = decltype(tag);
      deform_conv<T>(s, ctx.input(0).data_as<T>(), ctx.input(1).data_as<T>(), ctx.input(2).data_as<T>(),
                     ctx.has_input(3) ? ctx.input(3).data_as<T>() : nullptr,
                     ctx.has_input(4) ? ctx.input(4).data_as<T>() : nullptr, ctx.output(0).data_as<T>());
    };
    if (dtype_ == DType::kF32) {
      go(float{});
    } else {
      go(double{});
    }
    return Status::ok();
  }

 private:
  Result<DeformShape> geometry(const KernelContext& ctx) const {
    const Shape& x = ctx.input(0).shape();
    const Shape& wt = ctx.input(1).shape();
    const Shape& off = ctx.input(2).shape();
    if (x.size() != 4) return not_implemented("X {}: only 2-D images (N x C x H x W) are supported", shape_to_string(x));
    if (wt.size() != 4) return invalid_argument("W {} must be M x C/group x kH x kW", shape_to_string(wt));
    DeformShape s;
    s.batch = x[0];
    s.in_channels = x[1];
    s.in_h = x[2];
    s.in_w = x[3];
    s.out_channels = wt[0];
    s.group = attrs_.group;
    s.offset_group = attrs_.offset_group;
    s.kernel_h = wt[2];
    s.kernel_w = wt[3];
    if (s.in_channels % s.group != 0 || s.out_channels % s.group != 0 || wt[1] * s.group != s.in_channels) {
      return invalid_argument("X {} and W {} do not fit group={} (W must be M x C/group x kernel)", shape_to_string(x),
                              shape_to_string(wt), s.group);
    }
    if (s.in_channels % s.offset_group != 0) {
      return invalid_argument("X {} has channels not divisible by offset_group={}", shape_to_string(x), s.offset_group);
    }
    if (!attrs_.kernel_shape.empty() && (attrs_.kernel_shape[0] != s.kernel_h || attrs_.kernel_shape[1] != s.kernel_w)) {
      return invalid_argument("kernel_shape attribute does not match W {}", shape_to_string(wt));
    }
    const auto attr_at = [](const std::vector<int64_t>& v, size_t i, int64_t def) { return v.empty() ? def : v[i]; };
    s.stride_h = attr_at(attrs_.strides, 0, 1);
    s.stride_w = attr_at(attrs_.strides, 1, 1);
    s.dilation_h = attr_at(attrs_.dilations, 0, 1);
    s.dilation_w = attr_at(attrs_.dilations, 1, 1);
    s.pad_top = attr_at(attrs_.pads, 0, 0);
    s.pad_left = attr_at(attrs_.pads, 1, 0);
    const int64_t span_h = (s.kernel_h - 1) * s.dilation_h + 1, span_w = (s.kernel_w - 1) * s.dilation_w + 1;
    const int64_t padded_h = s.in_h + s.pad_top + attr_at(attrs_.pads, 2, 0);
    const int64_t padded_w = s.in_w + s.pad_left + attr_at(attrs_.pads, 3, 0);
    if (padded_h < span_h || padded_w < span_w) {
      return invalid_argument("X {} (with pads) is smaller than the kernel extent {}x{}", shape_to_string(x), span_h,
                              span_w);
    }
    s.out_h = (padded_h - span_h) / s.stride_h + 1;
    s.out_w = (padded_w - span_w) / s.stride_w + 1;
    const int64_t taps = s.kernel_h * s.kernel_w;
    const Shape want_offset{s.batch, s.offset_group * taps * 2, s.out_h, s.out_w};
    if (off != want_offset) {
      return invalid_argument("offset {} must have shape {}", shape_to_string(off), shape_to_string(want_offset));
    }
    if (ctx.has_input(3)) {
      const Shape& b = ctx.input(3).shape();
      if (b.size() != 1 || b[0] != s.out_channels) {
        return invalid_argument("B {} must have shape [{}]", shape_to_string(b), s.out_channels);
      }
    }
    if (ctx.has_input(4)) {
      const Shape want_mask{s.batch, s.offset_group * taps, s.out_h, s.out_w};
      if (ctx.input(4).shape() != want_mask) {
        return invalid_argument("mask {} must have shape {}", shape_to_string(ctx.input(4).shape()),
                                shape_to_string(want_mask));
      }
    }
    return s;
  }

  DType dtype_;
  Attrs attrs_;
};

}  // namespace

Result<std::unique_ptr<OpKernel>> create_deform_conv(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 3));
  const DType t = init.input_dtypes[0];
  if (t != DType::kF32 && t != DType::kF64) {
    return not_implemented("dtype {} is not supported (float32 and float64 only)", dtype_name(t));
  }
  for (size_t i = 1; i < init.input_dtypes.size() && i < 5; ++i) {
    const DType other = init.input_dtypes[i];
    if (other != DType::kUndefined && other != t) {
      return invalid_argument("input {} is {} but X is {}", i, dtype_name(other), dtype_name(t));
    }
  }
  ir::AttrReader reader(init.node);
  DeformConvKernel::Attrs a;
  a.kernel_shape = reader.get_ints("kernel_shape");
  a.strides = reader.get_ints("strides");
  a.dilations = reader.get_ints("dilations");
  a.pads = reader.get_ints("pads");
  a.group = reader.get_int("group", 1);
  a.offset_group = reader.get_int("offset_group", 1);
  EMBER_RETURN_IF_ERROR(reader.status());
  const auto check = [](const std::vector<int64_t>& v, size_t len, int64_t min, std::string_view what) -> Status {
    if (!v.empty() && v.size() != len) return invalid_argument("{} has {} values, expected {}", what, v.size(), len);
    for (int64_t x : v) {
      if (x < min) return invalid_argument("{} must be >= {}, got {}", what, min, x);
    }
    return Status::ok();
  };
  EMBER_RETURN_IF_ERROR(check(a.kernel_shape, 2, 1, "kernel_shape"));
  EMBER_RETURN_IF_ERROR(check(a.strides, 2, 1, "strides"));
  EMBER_RETURN_IF_ERROR(check(a.dilations, 2, 1, "dilations"));
  EMBER_RETURN_IF_ERROR(check(a.pads, 4, 0, "pads"));
  if (a.group < 1) return invalid_argument("group must be >= 1, got {}", a.group);
  if (a.offset_group < 1) return invalid_argument("offset_group must be >= 1, got {}", a.offset_group);
  return std::unique_ptr<OpKernel>(std::make_unique<DeformConvKernel>(t, std::move(a)));
}

}  // namespace ember::kernels
