// ConvTranspose (1-D to 3-D, grouped, dilated, strided, padded, output_padding,
// output_shape, auto_pad): f32 through the sgemm driver and col2im, other float
// types through the direct loop.
#include "kernels/conv/conv_transpose.h"

#include <algorithm>
#include <memory>

#include "base/buffer.h"
#include "kernels/conv/conv_ops.h"
#include "kernels/matmul/sgemm.h"
#include "threading/thread_pool.h"

namespace ember::kernels {
namespace {

// The columns one GEMM produces are capped at this many floats (16 MiB), so a
// large image is processed in chunks of input positions instead of holding
// [out_channels/group * kernel, input positions] at once.
constexpr int64_t kColumnBudgetFloats = int64_t{4} << 20;
// The fewest input positions per chunk, so the GEMM keeps a useful width.
constexpr int64_t kMinChunkPositions = 256;
// Output elements one col2im range must add to be worth a thread. Not measured
// on its own: sized so a range takes about as long (25-50 us at 1-2 adds per ns)
// as the 512 Ki multiply-adds the sgemm driver found a range must hold
// (sgemm.cpp kMinRangeMacs).
constexpr int64_t kMinRangeAdds = int64_t{1} << 15;

// The column rows of one GEMM, reused between runs on the calling thread.
thread_local AlignedBuffer t_columns;

// Adds the columns of input positions [p0, p1) (row r of `columns` is kernel tap
// r of one output channel, `ld` floats long, position p at column p - p0) into
// that channel's output plane.
void col2im_channel(const Window3d& w, const float* columns, int64_t ld, int64_t p0, int64_t p1, float* plane) {
  const int64_t in_w = w.in[2];
  int64_t tap = 0;
  for (int64_t kd = 0; kd < w.kernel[0]; ++kd) {
    for (int64_t kh = 0; kh < w.kernel[1]; ++kh) {
      for (int64_t kw = 0; kw < w.kernel[2]; ++kw, ++tap) {
        const float* row = columns + tap * ld;
        const int64_t shift_w = kw * w.dilation[2] - w.pad_begin[2];
        // Input columns iw with 0 <= iw * stride + shift_w < out_w.
        const int64_t iw_lo = shift_w >= 0 ? 0 : (-shift_w + w.stride[2] - 1) / w.stride[2];
        const int64_t iw_hi = w.out[2] - shift_w <= 0 ? 0 : (w.out[2] - shift_w + w.stride[2] - 1) / w.stride[2];
        for (int64_t line = p0 / in_w; line * in_w < p1; ++line) {
          const int64_t id = line / w.in[1], ih = line % w.in[1];
          const int64_t od = id * w.stride[0] - w.pad_begin[0] + kd * w.dilation[0];
          const int64_t oh = ih * w.stride[1] - w.pad_begin[1] + kh * w.dilation[1];
          if (od < 0 || od >= w.out[0] || oh < 0 || oh >= w.out[1]) continue;
          const int64_t lo = std::max(iw_lo, p0 - line * in_w), hi = std::min(std::min(iw_hi, in_w), p1 - line * in_w);
          const int64_t src0 = line * in_w - p0;  // column of iw = 0 (negative on a line begun before p0)
          float* dst = plane + (od * w.out[1] + oh) * w.out[2];
          if (w.stride[2] == 1) {
            for (int64_t iw = lo; iw < hi; ++iw) dst[iw + shift_w] += row[src0 + iw];
          } else {
            for (int64_t iw = lo; iw < hi; ++iw) dst[iw * w.stride[2] + shift_w] += row[src0 + iw];
          }
        }
      }
    }
  }
}

}  // namespace

template <typename T>
void conv_transpose_ref(const ConvTransposeShape& s, const T* x, const T* weights, const T* bias, T* y) {
  using Acc = compute_t<T>;
  const Window3d& w = s.w;
  const int64_t cpg = s.in_channels / s.group, mpg = s.out_channels / s.group;
  const int64_t kernel_size = w.kernel_size();
  // The input index feeding output o through tap k along dim d, or -1.
  const auto source = [&w](int d, int64_t o, int64_t k) -> int64_t {
    const int64_t t = o + w.pad_begin[d] - k * w.dilation[d];
    if (t < 0 || t % w.stride[d] != 0 || t / w.stride[d] >= w.in[d]) return -1;
    return t / w.stride[d];
  };
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t m = 0; m < s.out_channels; ++m) {
      const int64_t g = m / mpg, ml = m % mpg;
      T* y_m = y + (n * s.out_channels + m) * w.out_size();
      for (int64_t od = 0; od < w.out[0]; ++od) {
        for (int64_t oh = 0; oh < w.out[1]; ++oh) {
          for (int64_t ow = 0; ow < w.out[2]; ++ow) {
            Acc acc = bias ? static_cast<Acc>(bias[m]) : Acc(0);
            for (int64_t c = g * cpg; c < (g + 1) * cpg; ++c) {
              const T* xc = x + (n * s.in_channels + c) * w.in_size();
              const T* wc = weights + (c * mpg + ml) * kernel_size;
              for (int64_t kd = 0; kd < w.kernel[0]; ++kd) {
                const int64_t id = source(0, od, kd);
                if (id < 0) continue;
                for (int64_t kh = 0; kh < w.kernel[1]; ++kh) {
                  const int64_t ih = source(1, oh, kh);
                  if (ih < 0) continue;
                  for (int64_t kw = 0; kw < w.kernel[2]; ++kw) {
                    const int64_t iw = source(2, ow, kw);
                    if (iw < 0) continue;
                    acc += static_cast<Acc>(xc[(id * w.in[1] + ih) * w.in[2] + iw]) *
                           static_cast<Acc>(wc[(kd * w.kernel[1] + kh) * w.kernel[2] + kw]);
                  }
                }
              }
            }
            y_m[(od * w.out[1] + oh) * w.out[2] + ow] = static_cast<T>(acc);
          }
        }
      }
    }
  }
}

template void conv_transpose_ref<float>(const ConvTransposeShape&, const float*, const float*, const float*, float*);
template void conv_transpose_ref<double>(const ConvTransposeShape&, const double*, const double*, const double*,
                                         double*);
template void conv_transpose_ref<Float16>(const ConvTransposeShape&, const Float16*, const Float16*, const Float16*,
                                          Float16*);
template void conv_transpose_ref<BFloat16>(const ConvTransposeShape&, const BFloat16*, const BFloat16*,
                                           const BFloat16*, BFloat16*);

void conv_transpose_f32_gemm(const ConvTransposeShape& s, const float* x, const float* weights, const float* bias,
                             float* y) {
  const Window3d& w = s.w;
  const int64_t cpg = s.in_channels / s.group, mpg = s.out_channels / s.group;
  const int64_t in_size = w.in_size(), out_size = w.out_size(), kernel_size = w.kernel_size();
  const int64_t rows = mpg * kernel_size;
  if (s.batch == 0 || s.out_channels == 0 || out_size == 0) return;
  const int64_t chunk =
      std::min(in_size, std::max(kMinChunkPositions, kColumnBudgetFloats / std::max<int64_t>(1, rows)));
  if (rows > 0 && in_size > 0) t_columns.resize(static_cast<size_t>(rows * chunk) * sizeof(float));
  float* const columns = static_cast<float*>(t_columns.data());
  const sgemm::SgemmTable& table = sgemm::sgemm_table();
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t g = 0; g < s.group; ++g) {
      float* const y_g = y + (n * s.out_channels + g * mpg) * out_size;
      const float* const x_g = x + (n * s.in_channels + g * cpg) * in_size;
      const float* const w_g = weights + g * cpg * rows;
      const int64_t grain = std::max<int64_t>(1, kMinRangeAdds / std::max<int64_t>(1, out_size + kernel_size * chunk));
      threading::parallel_for(mpg, grain, [&](int64_t begin, int64_t end) {
        for (int64_t ml = begin; ml < end; ++ml) {
          std::fill_n(y_g + ml * out_size, out_size, bias ? bias[g * mpg + ml] : 0.0f);
        }
      });
      for (int64_t p0 = 0; p0 < in_size; p0 += chunk) {
        const int64_t p1 = std::min(in_size, p0 + chunk), width = p1 - p0;
        GemmParams p;
        p.trans_a = true;
        p.m = rows;
        p.n = width;
        p.k = cpg;
        p.lda = rows;
        p.ldb = in_size;
        p.ldc = width;
        sgemm::gemm(table, p, w_g, x_g + p0, columns);
        threading::parallel_for(mpg, grain, [&](int64_t begin, int64_t end) {
          for (int64_t ml = begin; ml < end; ++ml) {
            col2im_channel(w, columns + ml * kernel_size * width, width, p0, p1, y_g + ml * out_size);
          }
        });
      }
    }
  }
}

namespace {

class ConvTransposeKernel final : public OpKernel {
 public:
  struct Attrs {
    WindowAttrs window;
    std::vector<int64_t> output_padding, output_shape;
    int64_t group = 1;
  };

  ConvTransposeKernel(DType dtype, Attrs attrs) : dtype_(dtype), attrs_(std::move(attrs)) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(ConvTransposeShape s, geometry(ctx));
    Shape out{s.batch, s.out_channels};
    const size_t rank = ctx.input(0).shape().size() - 2;
    for (size_t d = kMaxWindowRank - rank; d < kMaxWindowRank; ++d) out.push_back(s.w.out[d]);
    ctx.set_output(0, dtype_, std::move(out));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(ConvTransposeShape s, geometry(ctx));
    const bool has_bias = ctx.has_input(2);
    if (dtype_ == DType::kF32) {
      conv_transpose_f32_gemm(s, ctx.input(0).data_as<float>(), ctx.input(1).data_as<float>(),
                              has_bias ? ctx.input(2).data_as<float>() : nullptr, ctx.output(0).data_as<float>());
      return Status::ok();
    }
    EMBER_SWITCH_FLOAT(dtype_, T,
                       conv_transpose_ref<T>(s, ctx.input(0).data_as<T>(), ctx.input(1).data_as<T>(),
                                             has_bias ? ctx.input(2).data_as<T>() : nullptr,
                                             ctx.output(0).data_as<T>()),
                       return internal_error("ConvTranspose: unexpected dtype {}", dtype_name(dtype_)));
    return Status::ok();
  }

 private:
  Result<ConvTransposeShape> geometry(const KernelContext& ctx) const {
    const Shape& x = ctx.input(0).shape();
    const Shape& wt = ctx.input(1).shape();
    if (x.size() < 3 || wt.size() != x.size()) {
      return invalid_argument("X {} must be N x C x spatial and W {} of the same rank", shape_to_string(x),
                              shape_to_string(wt));
    }
    const size_t rank = x.size() - 2;
    if (rank > kMaxWindowRank) return not_implemented("{} spatial dims are not supported (1 to 3)", rank);
    ConvTransposeShape s;
    s.batch = x[0];
    s.in_channels = x[1];
    s.group = attrs_.group;
    s.out_channels = wt[1] * attrs_.group;
    if (wt[0] != s.in_channels || s.in_channels % s.group != 0) {
      return invalid_argument("X {} and W {} do not fit group={} (W must be C x M/group x kernel)",
                              shape_to_string(x), shape_to_string(wt), s.group);
    }
    const WindowAttrs& a = attrs_.window;
    if (!a.kernel_shape.empty() && !std::equal(wt.begin() + 2, wt.end(), a.kernel_shape.begin(), a.kernel_shape.end())) {
      return invalid_argument("kernel_shape attribute does not match W {}", shape_to_string(wt));
    }
    const auto check_len = [rank](const std::vector<int64_t>& v, size_t want, std::string_view what) -> Status {
      if (!v.empty() && v.size() != want) return invalid_argument("{} has {} values, expected {}", what, v.size(), want);
      return Status::ok();
    };
    EMBER_RETURN_IF_ERROR(check_len(a.strides, rank, "strides"));
    EMBER_RETURN_IF_ERROR(check_len(a.dilations, rank, "dilations"));
    EMBER_RETURN_IF_ERROR(check_len(a.pads, 2 * rank, "pads"));
    EMBER_RETURN_IF_ERROR(check_len(attrs_.output_padding, rank, "output_padding"));
    EMBER_RETURN_IF_ERROR(check_len(attrs_.output_shape, rank, "output_shape"));
    if (ctx.has_input(2)) {
      const Shape& b = ctx.input(2).shape();
      if (b.size() != 1 || b[0] != s.out_channels) {
        return invalid_argument("B {} must have shape [{}]", shape_to_string(b), s.out_channels);
      }
    }
    Window3d& w = s.w;
    const size_t lift = kMaxWindowRank - rank;
    for (size_t i = 0; i < rank; ++i) {
      const size_t d = i + lift;
      w.in[d] = x[i + 2];
      w.kernel[d] = wt[i + 2];
      w.stride[d] = a.strides.empty() ? 1 : a.strides[i];
      w.dilation[d] = a.dilations.empty() ? 1 : a.dilations[i];
      const int64_t out_pad = attrs_.output_padding.empty() ? 0 : attrs_.output_padding[i];
      const int64_t full = w.stride[d] * (w.in[d] - 1) + out_pad + (w.kernel[d] - 1) * w.dilation[d] + 1;
      // As ONNX's reference: explicit pads (or none, under NOTSET/VALID) are used
      // as given; under SAME_* without pads the padding is what makes the output
      // output_shape (default in * stride), the odd unit at the end for SAME_UPPER.
      if (!a.pads.empty() || (a.auto_pad != AutoPad::kSameUpper && a.auto_pad != AutoPad::kSameLower)) {
        w.pad_begin[d] = a.pads.empty() ? 0 : a.pads[i];
        w.pad_end[d] = a.pads.empty() ? 0 : a.pads[i + rank];
        w.out[d] = attrs_.output_shape.empty() ? full - w.pad_begin[d] - w.pad_end[d] : attrs_.output_shape[i];
      } else {
        w.out[d] = attrs_.output_shape.empty() ? w.in[d] * w.stride[d] : attrs_.output_shape[i];
        const int64_t total = full - w.out[d];
        const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);  // floor(total / 2)
        w.pad_begin[d] = a.auto_pad == AutoPad::kSameUpper ? half : total - half;
        w.pad_end[d] = total - w.pad_begin[d];
      }
      if (w.out[d] < 0) {
        return invalid_argument("spatial dim {} of X {} gives a negative output size {}", i, shape_to_string(x),
                                w.out[d]);
      }
    }
    return s;
  }

  DType dtype_;
  Attrs attrs_;
};

}  // namespace

Result<std::unique_ptr<OpKernel>> create_conv_transpose(const KernelInit& init) {
  EMBER_ASSIGN_OR_RETURN(const DType t, conv_float_dtype(init));
  ConvTransposeKernel::Attrs attrs;
  EMBER_ASSIGN_OR_RETURN(attrs.window, read_window_attrs(init.node, false));
  ir::AttrReader reader(init.node);
  attrs.group = reader.get_int("group", 1);
  attrs.output_padding = reader.get_ints("output_padding");
  attrs.output_shape = reader.get_ints("output_shape");
  EMBER_RETURN_IF_ERROR(reader.status());
  if (attrs.group < 1) return invalid_argument("group must be >= 1, got {}", attrs.group);
  for (int64_t v : attrs.output_padding) {
    if (v < 0) return invalid_argument("output_padding values must be >= 0, got {}", v);
  }
  for (int64_t v : attrs.output_shape) {
    if (v < 0) return invalid_argument("output_shape values must be >= 0, got {}", v);
  }
  return std::unique_ptr<OpKernel>(std::make_unique<ConvTransposeKernel>(t, std::move(attrs)));
}

}  // namespace ember::kernels
