#pragma once
// Resize and Upsample: one plan per axis (source taps and weights for every output
// position, built once per call from the ONNX coordinate rules), then either the
// reference path (every axis in turn, in double, any rank and dtype) or the fast
// path for f32 NCHW tensors resized on their two inner axes.
#include <cstdint>
#include <span>
#include <vector>

#include "base/tensor.h"

namespace ember::kernels::image {

enum class ResizeMode { kNearest, kLinear, kCubic };

enum class CoordMode {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNN,
  kTfCropAndResize,
};

// kSimple is Resize-10's and Upsample's rounding (they name none): as ONNX
// Runtime, floor when upsampling and ceil when downsampling.
enum class NearestMode { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kSimple };

struct ResizeParams {
  ResizeMode mode = ResizeMode::kNearest;
  CoordMode coord = CoordMode::kHalfPixel;
  NearestMode nearest = NearestMode::kRoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;
  double extrapolation_value = 0.0;
};

// How one axis is resampled: output position y reads input positions
// index[y*taps + k] (already clamped into [0, in_len)) with weight[y*taps + k],
// or is extrapolation_value when extrapolated[y] (tf_crop_and_resize only).
struct AxisPlan {
  int64_t in_len = 0;
  int64_t out_len = 0;
  int64_t taps = 0;
  bool identity = false;  // output equals input along this axis; no taps are built
  std::vector<int64_t> index;
  std::vector<double> weight;
  std::vector<uint8_t> extrapolated;  // empty when nothing is extrapolated
};

// The plan of one axis of `in_len` resized to `out_len` at `scale` (the scale
// ONNX's coordinate formulas use: the given one, or out/in for sizes); roi_start
// and roi_end are the axis's region for tf_crop_and_resize.
AxisPlan plan_resize_axis(const ResizeParams& p, int64_t in_len, int64_t out_len, double scale, double roi_start,
                          double roi_end);

// The reference: resamples one axis after another in double and casts to the
// dtype at the end (integers round half to even and saturate). `in` and `out`
// are contiguous; plans[d] describes axis d.
void resize_reference(const Tensor& in, Tensor& out, std::span<const AxisPlan> plans, const ResizeParams& p);

// The fast path: a contiguous f32 [N, C, H, W] tensor whose N and C plans are
// identity and whose H and W plans have one or two taps (nearest, linear
// without antialias) and nothing extrapolated. False when it does not apply.
bool can_resize_nchw_f32(const Tensor& in, std::span<const AxisPlan> plans);
void resize_nchw_f32(const Tensor& in, Tensor& out, std::span<const AxisPlan> plans);

}  // namespace ember::kernels::image
