// Resize's coordinate rules and reference path, following the ONNX Resize-19
// specification (and its reference implementation's tie-breaking: an integer
// source coordinate counts as ratio 1 from the pixel on its left).
#include <algorithm>
#include <cmath>
#include <limits>

#include "base/dtype.h"
#include "kernels/image/resize.h"

namespace ember::kernels::image {
namespace {

// The source coordinate of output position y.
double source_coordinate(const ResizeParams& p, double y, double scale, int64_t in_len, int64_t out_len,
                         double roi_start, double roi_end) {
  // ONNX uses the unrounded output length scale*in_len in these formulas.
  double out_width = scale * static_cast<double>(in_len);
  double in_width = static_cast<double>(in_len);
  switch (p.coord) {
    case CoordMode::kAlignCorners:
      return out_width == 1 ? 0.0 : y * (in_width - 1) / (out_width - 1);
    case CoordMode::kAsymmetric:
      return y / scale;
    case CoordMode::kTfHalfPixelForNN:
      return (y + 0.5) / scale;
    case CoordMode::kTfCropAndResize: {
      double x = out_width == 1 ? (roi_end - roi_start) * (in_width - 1) / 2
                                : y * (roi_end - roi_start) * (in_width - 1) / (out_width - 1);
      return x + roi_start * (in_width - 1);
    }
    case CoordMode::kPytorchHalfPixel:
      return out_width == 1 ? -0.5 : (y + 0.5) / scale - 0.5;
    case CoordMode::kHalfPixelSymmetric: {
      double adjustment = static_cast<double>(out_len) / out_width;
      double offset = in_width / 2 * (1 - adjustment);
      return offset + (y + 0.5) / scale - 0.5;
    }
    case CoordMode::kHalfPixel:
      break;
  }
  return (y + 0.5) / scale - 0.5;
}

// Keys' cubic convolution kernel with parameter a, at distance x.
double cubic_weight(double x, double a) {
  x = std::abs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0.0;
}

bool nearest_rounds_up(NearestMode mode, double ratio, double scale) {
  switch (mode) {
    case NearestMode::kRoundPreferFloor:
      return ratio > 0.5;
    case NearestMode::kRoundPreferCeil:
      return ratio >= 0.5;
    case NearestMode::kFloor:
      return false;
    case NearestMode::kCeil:
      return true;
    case NearestMode::kSimple:
      return scale < 1;
  }
  return false;
}

// Fills the taps of one output position. `base` is the pixel left of the source
// coordinate and `ratio` in (0, 1] the distance from it.
void fill_taps(const ResizeParams& p, double scale, int64_t base, double ratio, int64_t* index, double* weight,
               int64_t taps) {
  if (p.mode == ResizeMode::kNearest) {
    // An integer coordinate has ratio 1: it is the pixel right of `base`.
    bool up = ratio == 1.0 || nearest_rounds_up(p.nearest, ratio, scale);
    index[0] = base + (up ? 1 : 0);
    weight[0] = 1.0;
    return;
  }
  // Taps run from `first` to first + taps - 1 around base; antialiasing widens
  // the kernel by 1/scale when downsampling and normalizes it.
  int64_t first = 1 - taps / 2;
  double stretch = p.antialias ? std::min(scale, 1.0) : 1.0;
  double sum = 0;
  for (int64_t k = 0; k < taps; ++k) {
    int64_t i = first + k;
    double d = (static_cast<double>(i) - ratio) * stretch;
    double w = p.mode == ResizeMode::kLinear ? std::clamp(1 - std::abs(d), 0.0, 1.0) : cubic_weight(d, p.cubic_a);
    index[k] = base + i;
    weight[k] = w;
    sum += w;
  }
  if (p.antialias) {
    for (int64_t k = 0; k < taps; ++k) weight[k] /= sum;
  }
}

int64_t tap_count(const ResizeParams& p, double scale) {
  if (p.mode == ResizeMode::kNearest) return 1;
  int64_t reach = p.mode == ResizeMode::kLinear ? 1 : 2;
  if (!p.antialias || scale >= 1) return 2 * reach;
  // ONNX: the first tap is floor(-reach/scale) + 1, the window symmetric about 0.5.
  auto first = static_cast<int64_t>(std::floor(-static_cast<double>(reach) / scale)) + 1;
  return 2 - 2 * first;
}

template <typename T>
T saturate_from_double(double v) {
  if constexpr (std::is_integral_v<T>) {
    if (std::isnan(v)) return T{0};
    v = std::nearbyint(v);
    v = std::clamp(v, static_cast<double>(std::numeric_limits<T>::lowest()),
                   static_cast<double>(std::numeric_limits<T>::max()));
    return static_cast<T>(v);
  } else {
    return static_cast<T>(static_cast<compute_t<T>>(v));
  }
}

// Resamples the middle axis of a [outer, in_len, inner] block into [outer, out_len, inner].
void resample_axis(const double* src, double* dst, int64_t outer, int64_t inner, const AxisPlan& plan,
                   double extrapolation_value) {
  for (int64_t o = 0; o < outer; ++o) {
    const double* s = src + o * plan.in_len * inner;
    double* d = dst + o * plan.out_len * inner;
    for (int64_t y = 0; y < plan.out_len; ++y) {
      double* row = d + y * inner;
      if (!plan.extrapolated.empty() && plan.extrapolated[static_cast<size_t>(y)]) {
        std::fill(row, row + inner, extrapolation_value);
        continue;
      }
      std::fill(row, row + inner, 0.0);
      for (int64_t k = 0; k < plan.taps; ++k) {
        auto t = static_cast<size_t>(y * plan.taps + k);
        const double* from = s + plan.index[t] * inner;
        double w = plan.weight[t];
        for (int64_t i = 0; i < inner; ++i) row[i] += w * from[i];
      }
    }
  }
}

}  // namespace

AxisPlan plan_resize_axis(const ResizeParams& p, int64_t in_len, int64_t out_len, double scale, double roi_start,
                          double roi_end) {
  AxisPlan plan;
  plan.in_len = in_len;
  plan.out_len = out_len;
  bool default_roi = p.coord != CoordMode::kTfCropAndResize || (roi_start == 0.0 && roi_end == 1.0);
  if (out_len == in_len && std::abs(scale - 1.0) <= 1e-9 && default_roi) {
    plan.identity = true;
    return plan;
  }
  plan.taps = tap_count(p, scale);
  plan.index.resize(static_cast<size_t>(out_len * plan.taps));
  plan.weight.resize(plan.index.size());
  for (int64_t y = 0; y < out_len; ++y) {
    double x = source_coordinate(p, static_cast<double>(y), scale, in_len, out_len, roi_start, roi_end);
    if (p.coord == CoordMode::kTfCropAndResize && (x < 0 || x > static_cast<double>(in_len - 1))) {
      if (plan.extrapolated.empty()) plan.extrapolated.assign(static_cast<size_t>(out_len), 0);
      plan.extrapolated[static_cast<size_t>(y)] = 1;
    }
    double left = std::isnan(x) ? 0.0 : std::floor(x);
    double ratio = x - left;
    if (ratio == 0.0) {
      ratio = 1.0;
      left -= 1;
    }
    // Coordinates far outside the input only read its edge; keep the index in range of int64.
    left = std::clamp(left, -static_cast<double>(plan.taps) - 1, static_cast<double>(in_len + plan.taps));
    int64_t* index = plan.index.data() + y * plan.taps;
    double* weight = plan.weight.data() + y * plan.taps;
    fill_taps(p, scale, static_cast<int64_t>(left), ratio, index, weight, plan.taps);
    if (p.exclude_outside) {
      double sum = 0;
      for (int64_t k = 0; k < plan.taps; ++k) {
        if (index[k] < 0 || index[k] >= in_len) weight[k] = 0;
        sum += weight[k];
      }
      if (sum != 0) {
        for (int64_t k = 0; k < plan.taps; ++k) weight[k] /= sum;
      }
    }
    for (int64_t k = 0; k < plan.taps; ++k) index[k] = std::clamp<int64_t>(index[k], 0, in_len - 1);
  }
  return plan;
}

void resize_reference(const Tensor& in, Tensor& out, std::span<const AxisPlan> plans, const ResizeParams& p) {
  if (out.numel() == 0) return;
  Shape shape = in.shape();
  std::vector<double> current(static_cast<size_t>(in.numel()));
  EMBER_SWITCH_NUMERIC(in.dtype(), T, {
    const T* src = in.data_as<T>();
    for (size_t i = 0; i < current.size(); ++i) current[i] = static_cast<double>(static_cast<compute_t<T>>(src[i]));
  }, return);
  std::vector<double> next;
  for (size_t d = 0; d < plans.size(); ++d) {
    const AxisPlan& plan = plans[d];
    if (plan.identity) continue;
    int64_t outer = shape_numel(std::span<const int64_t>(shape.data(), d));
    int64_t inner = shape_numel(std::span<const int64_t>(shape.data() + d + 1, shape.size() - d - 1));
    next.assign(static_cast<size_t>(outer * plan.out_len * inner), 0.0);
    resample_axis(current.data(), next.data(), outer, inner, plan, p.extrapolation_value);
    current.swap(next);
    shape[d] = plan.out_len;
  }
  EMBER_SWITCH_NUMERIC(out.dtype(), T, {
    T* dst = out.data_as<T>();
    for (size_t i = 0; i < current.size(); ++i) dst[i] = saturate_from_double<T>(current[i]);
  }, return);
}

}  // namespace ember::kernels::image
