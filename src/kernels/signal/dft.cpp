// DFT (opsets 17 and 20) and STFT, transformed in double precision.
#include <algorithm>
#include <complex>
#include <memory>
#include <vector>

#include "kernels/signal/fft.h"
#include "kernels/signal/signal_ops.h"

namespace ember::kernels {
namespace {

using Complex = std::complex<double>;

template <typename T>
double load(const T* p) {
  return static_cast<double>(static_cast<compute_t<T>>(*p));
}
template <typename T>
void store(T* p, double v) {
  *p = static_cast<T>(static_cast<compute_t<T>>(v));
}

// A scalar (or one-element) integer input.
Result<int64_t> read_scalar_int(const Tensor& t, const char* name) {
  if (!dtype_is_int(t.dtype())) return invalid_argument("{} has dtype {}; it must be an integer", name, dtype_name(t.dtype()));
  if (t.numel() != 1) return invalid_argument("{} must be a scalar, got shape {}", name, shape_to_string(t.shape()));
  return read_int(t, 0);
}

// The layout of a signal tensor [outer..., length (the axis), inner..., components].
struct Lines {
  int64_t outer = 1, length = 0, inner = 1, components = 1;
};

Lines lines_of(const Shape& shape, size_t axis) {
  Lines l;
  for (size_t i = 0; i < axis; ++i) l.outer *= shape[i];
  l.length = shape[axis];
  for (size_t i = axis + 1; i + 1 < shape.size(); ++i) l.inner *= shape[i];
  l.components = shape.back();
  return l;
}

class DftKernel final : public OpKernel {
 public:
  DftKernel(DType dtype, int opset, int64_t axis_attr, bool inverse, bool onesided)
      : dtype_(dtype), opset_(opset), axis_attr_(axis_attr), inverse_(inverse), onesided_(onesided) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(Plan plan, plan_of(ctx));
    Shape out = ctx.input(0).shape();
    out[plan.axis] = plan.out_length;
    out.back() = inverse_ && onesided_ ? 1 : 2;
    ctx.set_output(0, dtype_, out);
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(Plan plan, plan_of(ctx));
    EMBER_SWITCH_FLOAT(dtype_, T, { transform<T>(ctx, plan); },
                       return internal_error("DFT: unexpected dtype {}", dtype_name(dtype_)));
    return Status::ok();
  }

 private:
  struct Plan {
    size_t axis = 0;
    int64_t length = 0;      // dft_length
    int64_t out_length = 0;  // along the axis in the output
  };

  Result<Plan> plan_of(const KernelContext& ctx) const {
    const Shape& x = ctx.input(0).shape();
    const auto rank = static_cast<int64_t>(x.size());
    if (rank < 2) return invalid_argument("input must have rank >= 2 ([..., signal, 1 or 2]), got {}", shape_to_string(x));
    if (x.back() != 1 && x.back() != 2) {
      return invalid_argument("the last dimension of input {} must be 1 (real) or 2 (complex)", shape_to_string(x));
    }
    int64_t axis = axis_attr_;
    if (opset_ >= 20 && ctx.has_input(2)) {
      if (!ctx.has_value(2)) return needs_value(2);
      EMBER_ASSIGN_OR_RETURN(axis, read_scalar_int(ctx.input(2), "axis"));
    }
    const int64_t normalized = axis < 0 ? axis + rank : axis;
    if (normalized < 0 || normalized >= rank - 1) {
      return invalid_argument("axis {} is outside the signal dimensions of input {}", axis, shape_to_string(x));
    }
    Plan plan;
    plan.axis = static_cast<size_t>(normalized);
    const int64_t in_length = x[plan.axis];
    if (ctx.has_input(1)) {
      if (!ctx.has_value(1)) return needs_value(1);
      EMBER_ASSIGN_OR_RETURN(plan.length, read_scalar_int(ctx.input(1), "dft_length"));
      if (plan.length < 1) return invalid_argument("dft_length must be positive, got {}", plan.length);
    } else {
      // An inverse of a one-sided spectrum restores an even-length signal by default.
      plan.length = inverse_ && onesided_ ? 2 * (in_length - 1) : in_length;
      if (plan.length < 1) {
        return invalid_argument("input {} has no samples along axis {} to transform", shape_to_string(x), normalized);
      }
    }
    plan.out_length = !inverse_ && onesided_ ? plan.length / 2 + 1 : plan.length;
    return plan;
  }

  template <typename T>
  void transform(KernelContext& ctx, const Plan& plan) const {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const Lines in = lines_of(x.shape(), plan.axis);
    const Lines out = lines_of(y.shape(), plan.axis);
    const T* src = x.data_as<T>();
    T* dst = y.data_as<T>();
    const int64_t n = plan.length;
    const FourierTransform fft(n, inverse_);
    const double scale = inverse_ ? 1.0 / static_cast<double>(n) : 1.0;
    // An inverse one-sided transform reads bins 0..n/2 and mirrors the rest (Hermitian symmetry).
    const bool hermitian = inverse_ && onesided_;
    const int64_t read = std::min(in.length, hermitian ? n / 2 + 1 : n);
    std::vector<Complex> line(static_cast<size_t>(n)), scratch;
    for (int64_t o = 0; o < in.outer; ++o) {
      for (int64_t i = 0; i < in.inner; ++i) {
        std::fill(line.begin(), line.end(), Complex(0.0));
        for (int64_t k = 0; k < read; ++k) {
          const T* p = src + ((o * in.length + k) * in.inner + i) * in.components;
          line[static_cast<size_t>(k)] = {load(p), in.components == 2 ? load(p + 1) : 0.0};
        }
        if (hermitian) {
          for (int64_t k = n / 2 + 1; k < n; ++k) line[static_cast<size_t>(k)] = std::conj(line[static_cast<size_t>(n - k)]);
        }
        fft.apply(line.data(), scratch);
        for (int64_t k = 0; k < out.length; ++k) {
          T* p = dst + ((o * out.length + k) * out.inner + i) * out.components;
          const Complex v = line[static_cast<size_t>(k)] * scale;
          store(p, v.real());
          if (out.components == 2) store(p + 1, v.imag());
        }
      }
    }
  }

  DType dtype_;
  int opset_;
  int64_t axis_attr_;
  bool inverse_, onesided_;
};

class StftKernel final : public OpKernel {
 public:
  StftKernel(DType dtype, bool onesided) : dtype_(dtype), onesided_(onesided) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(Plan plan, plan_of(ctx));
    const Shape& x = ctx.input(0).shape();
    ctx.set_output(0, dtype_, Shape{x[0], plan.frames, plan.bins, 2});
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(Plan plan, plan_of(ctx));
    EMBER_SWITCH_FLOAT(dtype_, T, { transform<T>(ctx, plan); },
                       return internal_error("STFT: unexpected dtype {}", dtype_name(dtype_)));
    return Status::ok();
  }

 private:
  struct Plan {
    int64_t step = 0, frame_length = 0, frames = 0, bins = 0;
  };

  Result<Plan> plan_of(const KernelContext& ctx) const {
    const Shape& x = ctx.input(0).shape();
    if (x.size() != 3 || (x[2] != 1 && x[2] != 2)) {
      return invalid_argument("signal must have shape [batch, length, 1 or 2], got {}", shape_to_string(x));
    }
    Plan plan;
    if (!ctx.has_value(1)) return needs_value(1);
    EMBER_ASSIGN_OR_RETURN(plan.step, read_scalar_int(ctx.input(1), "frame_step"));
    if (plan.step < 1) return invalid_argument("frame_step must be positive, got {}", plan.step);
    const bool has_window = ctx.has_input(2);
    if (has_window && ctx.input(2).rank() != 1) {
      return invalid_argument("window must have rank 1, got {}", shape_to_string(ctx.input(2).shape()));
    }
    if (ctx.has_input(3)) {
      if (!ctx.has_value(3)) return needs_value(3);
      EMBER_ASSIGN_OR_RETURN(plan.frame_length, read_scalar_int(ctx.input(3), "frame_length"));
      if (has_window && ctx.input(2).dim(0) != plan.frame_length) {
        return invalid_argument("window has {} samples but frame_length is {}", ctx.input(2).dim(0), plan.frame_length);
      }
    } else {
      plan.frame_length = has_window ? ctx.input(2).dim(0) : x[1];
    }
    if (plan.frame_length < 1 || plan.frame_length > x[1]) {
      return invalid_argument("frame_length {} must be in [1, {}] (the signal length)", plan.frame_length, x[1]);
    }
    plan.frames = 1 + (x[1] - plan.frame_length) / plan.step;
    plan.bins = onesided_ ? plan.frame_length / 2 + 1 : plan.frame_length;
    return plan;
  }

  template <typename T>
  void transform(KernelContext& ctx, const Plan& plan) const {
    const Tensor& x = ctx.input(0);
    const int64_t batch = x.dim(0), length = x.dim(1), components = x.dim(2);
    const T* src = x.data_as<T>();
    const T* window = ctx.has_input(2) ? ctx.input(2).data_as<T>() : nullptr;
    T* dst = ctx.output(0).data_as<T>();
    const FourierTransform fft(plan.frame_length, false);
    std::vector<Complex> frame(static_cast<size_t>(plan.frame_length)), scratch;
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t f = 0; f < plan.frames; ++f) {
        for (int64_t k = 0; k < plan.frame_length; ++k) {
          const T* p = src + (b * length + f * plan.step + k) * components;
          const double w = window ? load(window + k) : 1.0;
          frame[static_cast<size_t>(k)] = {load(p) * w, components == 2 ? load(p + 1) * w : 0.0};
        }
        fft.apply(frame.data(), scratch);
        T* out = dst + (b * plan.frames + f) * plan.bins * 2;
        for (int64_t k = 0; k < plan.bins; ++k) {
          store(out + 2 * k, frame[static_cast<size_t>(k)].real());
          store(out + 2 * k + 1, frame[static_cast<size_t>(k)].imag());
        }
      }
    }
  }

  DType dtype_;
  bool onesided_;
};

Status check_signal_dtypes(const KernelInit& init, size_t data_input, std::initializer_list<size_t> int_inputs) {
  const DType t = input_dtype(init, 0);
  if (!dtype_is_float(t)) return not_implemented("input 0 has dtype {}; only float types are supported", dtype_name(t));
  if (data_input != 0 && input_dtype(init, data_input) != DType::kUndefined && input_dtype(init, data_input) != t) {
    return invalid_argument("input {} has dtype {} but input 0 is {}", data_input,
                            dtype_name(input_dtype(init, data_input)), dtype_name(t));
  }
  for (size_t i : int_inputs) {
    const DType it = input_dtype(init, i);
    if (it != DType::kUndefined && !dtype_is_int(it)) {
      return invalid_argument("input {} has dtype {}; it must be int32 or int64", i, dtype_name(it));
    }
  }
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<OpKernel>> create_dft(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 1));
  EMBER_RETURN_IF_ERROR(check_signal_dtypes(init, 0, {1, 2}));
  ir::AttrReader attrs(init.node);
  // Opset 20 moved the axis into input 2 (default -2); opset 17 has the attribute (default 1).
  const int64_t axis = init.node.opset >= 20 ? -2 : attrs.get_int("axis", 1);
  const int64_t inverse = attrs.get_int("inverse", 0);
  const int64_t onesided = attrs.get_int("onesided", 0);
  EMBER_RETURN_IF_ERROR(attrs.status());
  return std::unique_ptr<OpKernel>(
      std::make_unique<DftKernel>(init.input_dtypes[0], init.node.opset, axis, inverse != 0, onesided != 0));
}

Result<std::unique_ptr<OpKernel>> create_stft(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 2));
  EMBER_RETURN_IF_ERROR(check_signal_dtypes(init, 2, {1, 3}));
  ir::AttrReader attrs(init.node);
  const int64_t onesided = attrs.get_int("onesided", 1);
  EMBER_RETURN_IF_ERROR(attrs.status());
  return std::unique_ptr<OpKernel>(std::make_unique<StftKernel>(init.input_dtypes[0], onesided != 0));
}

}  // namespace ember::kernels
