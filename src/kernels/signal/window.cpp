// The window generators (HannWindow, HammingWindow, BlackmanWindow) and
// MelWeightMatrix, computed in double and cast to output_datatype.
#include <cmath>
#include <memory>
#include <numbers>
#include <vector>

#include "kernels/signal/signal_ops.h"

namespace ember::kernels {
namespace {

enum class WindowKind { kHann, kHamming, kBlackman };

Status check_output_datatype(int64_t value, DType& out) {
  if (!dtype_is_known(static_cast<int32_t>(value))) return not_implemented("output_datatype {} is not supported", value);
  out = static_cast<DType>(value);
  if (!dtype_is_float(out) && !dtype_is_int(out)) {
    return not_implemented("output_datatype {} is not supported", dtype_name(out));
  }
  return Status::ok();
}

Status write_values(Tensor& out, const std::vector<double>& values) {
  EMBER_SWITCH_NUMERIC(out.dtype(), T, {
    T* dst = out.data_as<T>();
    for (size_t i = 0; i < values.size(); ++i) dst[i] = static_cast<T>(static_cast<compute_t<T>>(values[i]));
  }, return internal_error("unexpected output dtype {}", dtype_name(out.dtype())));
  return Status::ok();
}

Result<int64_t> scalar_int(const KernelContext& ctx, size_t i, const char* name) {
  const Tensor& t = ctx.input(i);
  if (t.numel() != 1) return invalid_argument("{} must be a scalar, got shape {}", name, shape_to_string(t.shape()));
  return read_int(t, 0);
}

Result<double> scalar_double(const KernelContext& ctx, size_t i, const char* name) {
  const Tensor& t = ctx.input(i);
  if (t.numel() != 1) return invalid_argument("{} must be a scalar, got shape {}", name, shape_to_string(t.shape()));
  return read_double(t, 0);
}

class WindowKernel final : public OpKernel {
 public:
  WindowKernel(WindowKind kind, DType dtype, bool periodic) : kind_(kind), dtype_(dtype), periodic_(periodic) {}

  Status infer(KernelContext& ctx) const override {
    if (!ctx.has_value(0)) return needs_value(0);
    EMBER_ASSIGN_OR_RETURN(int64_t size, scalar_int(ctx, 0, "size"));
    if (size < 0) return invalid_argument("size must be >= 0, got {}", size);
    ctx.set_output(0, dtype_, Shape{size});
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const int64_t size = ctx.output(0).dim(0);
    // A symmetric window of one sample divides by zero: it is the limit, 1.
    const double period = static_cast<double>(periodic_ ? size : size - 1);
    std::vector<double> values(static_cast<size_t>(size), 1.0);
    for (int64_t n = 0; n < size && period > 0; ++n) {
      const double x = 2.0 * std::numbers::pi * static_cast<double>(n) / period;
      double v = 0;
      switch (kind_) {
        case WindowKind::kHann: v = 0.5 - 0.5 * std::cos(x); break;
        case WindowKind::kHamming: v = 25.0 / 46.0 - (21.0 / 46.0) * std::cos(x); break;
        case WindowKind::kBlackman: v = 0.42 - 0.5 * std::cos(x) + 0.08 * std::cos(2.0 * x); break;
      }
      values[static_cast<size_t>(n)] = v;
    }
    return write_values(ctx.output(0), values);
  }

 private:
  WindowKind kind_;
  DType dtype_;
  bool periodic_;
};

class MelWeightMatrixKernel final : public OpKernel {
 public:
  explicit MelWeightMatrixKernel(DType dtype) : dtype_(dtype) {}

  Status infer(KernelContext& ctx) const override {
    if (!ctx.has_value(0)) return needs_value(0);
    if (!ctx.has_value(1)) return needs_value(1);
    EMBER_ASSIGN_OR_RETURN(int64_t mel_bins, scalar_int(ctx, 0, "num_mel_bins"));
    EMBER_ASSIGN_OR_RETURN(int64_t dft_length, scalar_int(ctx, 1, "dft_length"));
    if (mel_bins < 1) return invalid_argument("num_mel_bins must be positive, got {}", mel_bins);
    if (dft_length < 1) return invalid_argument("dft_length must be positive, got {}", dft_length);
    ctx.set_output(0, dtype_, Shape{dft_length / 2 + 1, mel_bins});
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const int64_t spectrogram_bins = ctx.output(0).dim(0), mel_bins = ctx.output(0).dim(1);
    const int64_t dft_length = read_int(ctx.input(1), 0);
    EMBER_ASSIGN_OR_RETURN(int64_t sample_rate, scalar_int(ctx, 2, "sample_rate"));
    EMBER_ASSIGN_OR_RETURN(double lower_hz, scalar_double(ctx, 3, "lower_edge_hertz"));
    EMBER_ASSIGN_OR_RETURN(double upper_hz, scalar_double(ctx, 4, "upper_edge_hertz"));
    if (sample_rate < 1) return invalid_argument("sample_rate must be positive, got {}", sample_rate);
    if (!(lower_hz >= 0.0 && lower_hz < upper_hz)) {
      return invalid_argument("need 0 <= lower_edge_hertz < upper_edge_hertz, got {} and {}", lower_hz, upper_hz);
    }
    // HTK mel scale, mel = 2595 * log10(1 + hz / 700); mel_bins + 2 edges evenly spaced in mel
    // (with step (high - low) / (mel_bins + 2), as ONNX's reference), mapped to DFT bins.
    const auto to_mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
    const double low = to_mel(lower_hz), high = to_mel(upper_hz);
    const double step = (high - low) / static_cast<double>(mel_bins + 2);
    std::vector<int64_t> edges(static_cast<size_t>(mel_bins + 2));
    for (int64_t i = 0; i < mel_bins + 2; ++i) {
      const double hz = 700.0 * std::expm1((static_cast<double>(i) * step + low) / 2595.0 * std::numbers::ln10);
      edges[static_cast<size_t>(i)] =
          static_cast<int64_t>(std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate)));
      if (edges[static_cast<size_t>(i)] >= spectrogram_bins) {
        return invalid_argument("upper_edge_hertz {} maps past the last of {} spectrogram bins (sample_rate {})",
                                upper_hz, spectrogram_bins, sample_rate);
      }
    }
    std::vector<double> values(static_cast<size_t>(spectrogram_bins * mel_bins), 0.0);
    auto at = [&](int64_t bin, int64_t mel) -> double& { return values[static_cast<size_t>(bin * mel_bins + mel)]; };
    for (int64_t m = 0; m < mel_bins; ++m) {
      const int64_t left = edges[static_cast<size_t>(m)], center = edges[static_cast<size_t>(m + 1)],
                    right = edges[static_cast<size_t>(m + 2)];
      if (center == left) {
        at(center, m) = 1.0;
      } else {
        for (int64_t j = left; j <= center; ++j) at(j, m) = static_cast<double>(j - left) / static_cast<double>(center - left);
      }
      for (int64_t j = center; j < right; ++j) at(j, m) = static_cast<double>(right - j) / static_cast<double>(right - center);
    }
    return write_values(ctx.output(0), values);
  }

 private:
  DType dtype_;
};

}  // namespace

Result<std::unique_ptr<OpKernel>> create_window(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 1));
  if (!dtype_is_int(init.input_dtypes[0])) {
    return invalid_argument("size has dtype {}; it must be int32 or int64", dtype_name(init.input_dtypes[0]));
  }
  ir::AttrReader attrs(init.node);
  const int64_t output_datatype = attrs.get_int("output_datatype", static_cast<int64_t>(DType::kF32));
  const int64_t periodic = attrs.get_int("periodic", 1);
  EMBER_RETURN_IF_ERROR(attrs.status());
  DType dtype = DType::kUndefined;
  EMBER_RETURN_IF_ERROR(check_output_datatype(output_datatype, dtype));
  const std::string& op = init.node.op_type;
  const WindowKind kind = op == "HannWindow" ? WindowKind::kHann : op == "HammingWindow" ? WindowKind::kHamming
                                                                                        : WindowKind::kBlackman;
  return std::unique_ptr<OpKernel>(std::make_unique<WindowKernel>(kind, dtype, periodic != 0));
}

Result<std::unique_ptr<OpKernel>> create_mel_weight_matrix(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 5));
  for (size_t i = 0; i < 3; ++i) {
    if (!dtype_is_int(init.input_dtypes[i])) {
      return invalid_argument("input {} has dtype {}; it must be int32 or int64", i, dtype_name(init.input_dtypes[i]));
    }
  }
  for (size_t i = 3; i < 5; ++i) {
    if (!dtype_is_float(init.input_dtypes[i])) {
      return invalid_argument("input {} has dtype {}; it must be a float type", i, dtype_name(init.input_dtypes[i]));
    }
  }
  ir::AttrReader attrs(init.node);
  const int64_t output_datatype = attrs.get_int("output_datatype", static_cast<int64_t>(DType::kF32));
  EMBER_RETURN_IF_ERROR(attrs.status());
  DType dtype = DType::kUndefined;
  EMBER_RETURN_IF_ERROR(check_output_datatype(output_datatype, dtype));
  return std::unique_ptr<OpKernel>(std::make_unique<MelWeightMatrixKernel>(dtype));
}

}  // namespace ember::kernels
