// Resize (opsets 10-19) and Upsample (7, 9): the op object reads the attributes
// once, computes the output shape and per-axis plans on each call from the
// scales/sizes/roi inputs, and runs the fast NCHW path when it applies, the
// reference path otherwise.
#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/common/shape_util.h"
#include "kernels/image/image_ops.h"
#include "kernels/image/resize.h"
#include "kernels/tensor/tensor_util.h"

namespace ember::kernels::image {
namespace {

using tensor_ops::has_input;

enum class AspectPolicy { kStretch, kNotLarger, kNotSmaller };

// Where a form of the op takes its scales, sizes and roi.
struct ResizeForm {
  int scales_input = -1;  // -1: the `scales` attribute (Upsample-7)
  int sizes_input = -1;
  int roi_input = -1;
  std::vector<float> attr_scales;
  std::vector<int64_t> axes;  // empty: every axis
  AspectPolicy policy = AspectPolicy::kStretch;
};

// What one call resizes to.
struct Geometry {
  Shape out;
  std::vector<double> scales;
  std::vector<double> roi_start;
  std::vector<double> roi_end;
};

// Output lengths past this are refused before they overflow int64 (and memory).
constexpr double kMaxLength = 1e15;

class ResizeKernel final : public OpKernel {
 public:
  ResizeKernel(ResizeParams params, ResizeForm form) : params_(params), form_(std::move(form)) {}

  Status infer(KernelContext& ctx) const override {
    Geometry g;
    EMBER_RETURN_IF_ERROR(geometry(ctx, g));
    ctx.set_output(0, ctx.input(0).dtype(), std::move(g.out));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    Tensor& out = ctx.output(0);
    Geometry g;
    EMBER_RETURN_IF_ERROR(geometry(ctx, g));
    if (out.numel() == 0) return Status::ok();
    std::vector<AxisPlan> plans;
    plans.reserve(g.out.size());
    for (size_t d = 0; d < g.out.size(); ++d) {
      int64_t in_len = in.shape()[d];
      if (in_len == 0) return invalid_argument("cannot resize empty axis {} of input 0 {} to {}", d, in.describe(), g.out[d]);
      plans.push_back(plan_resize_axis(params_, in_len, g.out[d], g.scales[d], g.roi_start[d], g.roi_end[d]));
    }
    if (can_resize_nchw_f32(in, plans)) {
      resize_nchw_f32(in, out, plans);
    } else {
      resize_reference(in, out, plans, params_);
    }
    return Status::ok();
  }

 private:
  // The axes this node resizes (attribute `axes`, else all), normalized.
  Result<std::vector<size_t>> resized_axes(int64_t rank) const {
    std::vector<size_t> axes;
    if (form_.axes.empty()) {
      for (int64_t d = 0; d < rank; ++d) axes.push_back(static_cast<size_t>(d));
      return axes;
    }
    for (int64_t a : form_.axes) {
      EMBER_ASSIGN_OR_RETURN(int64_t d, normalize_axis(a, rank, "axes value"));
      if (std::find(axes.begin(), axes.end(), static_cast<size_t>(d)) != axes.end()) {
        return invalid_argument("axes lists axis {} twice", d);
      }
      axes.push_back(static_cast<size_t>(d));
    }
    return axes;
  }

  // A present, non-empty optional input (its value may be unknown in infer()).
  static bool given(const KernelContext& ctx, int i) {
    return i >= 0 && ctx.has_input(static_cast<size_t>(i)) && ctx.input(static_cast<size_t>(i)).numel() > 0;
  }

  Status geometry(const KernelContext& ctx, Geometry& g) const {
    const Tensor& in = ctx.input(0);
    EMBER_ASSIGN_OR_RETURN(std::vector<size_t> axes, resized_axes(in.rank()));
    auto rank = static_cast<size_t>(in.rank());
    g.out = in.shape();
    g.scales.assign(rank, 1.0);
    g.roi_start.assign(rank, 0.0);
    g.roi_end.assign(rank, 1.0);
    bool has_scales = form_.scales_input < 0 || given(ctx, form_.scales_input);
    bool has_sizes = given(ctx, form_.sizes_input);
    if (has_scales == has_sizes) {
      return invalid_argument("exactly one of scales and sizes must be given (non-empty); {}",
                              has_scales ? "both are" : "neither is");
    }
    if (has_scales) {
      EMBER_RETURN_IF_ERROR(read_scales(ctx, axes, g));
    } else {
      EMBER_RETURN_IF_ERROR(read_sizes(ctx, axes, g));
    }
    if (params_.coord == CoordMode::kTfCropAndResize) EMBER_RETURN_IF_ERROR(read_roi(ctx, axes, g));
    return Status::ok();
  }

  Status read_scales(const KernelContext& ctx, const std::vector<size_t>& axes, Geometry& g) const {
    std::vector<double> scales(form_.attr_scales.begin(), form_.attr_scales.end());
    if (form_.scales_input >= 0) {
      auto i = static_cast<size_t>(form_.scales_input);
      if (!ctx.has_value(i)) return needs_value(i);
      const Tensor& t = ctx.input(i);
      if (!dtype_is_float(t.dtype())) return invalid_argument("input {} (scales) must be floating point, got {}", i, t.describe());
      scales.clear();
      for (int64_t k = 0; k < t.numel(); ++k) scales.push_back(read_double(t, k));
    }
    if (scales.size() != axes.size()) {
      return invalid_argument("scales has {} values for {} resized axes of input 0 {}", scales.size(), axes.size(),
                              ctx.input(0).describe());
    }
    for (size_t k = 0; k < axes.size(); ++k) {
      size_t d = axes[k];
      double length = std::floor(scales[k] * static_cast<double>(g.out[d]));
      if (!(scales[k] > 0) || !(length < kMaxLength)) {
        return invalid_argument("scale {} for axis {} of input 0 {} is not a positive size factor", scales[k], d,
                                ctx.input(0).describe());
      }
      g.scales[d] = scales[k];
      g.out[d] = static_cast<int64_t>(length);
    }
    return Status::ok();
  }

  Status read_sizes(const KernelContext& ctx, const std::vector<size_t>& axes, Geometry& g) const {
    auto i = static_cast<size_t>(form_.sizes_input);
    if (!ctx.has_value(i)) return needs_value(i);
    const Tensor& in = ctx.input(0);
    EMBER_ASSIGN_OR_RETURN(Shape sizes, read_ints(ctx.input(i), "input 3 (sizes)"));
    if (sizes.size() != axes.size()) {
      return invalid_argument("sizes {} has {} values for {} resized axes of input 0 {}", shape_to_string(sizes),
                              sizes.size(), axes.size(), in.describe());
    }
    for (size_t k = 0; k < axes.size(); ++k) {
      size_t d = axes[k];
      if (sizes[k] < 0) return invalid_argument("sizes {} has a negative length", shape_to_string(sizes));
      if (in.shape()[d] == 0 && sizes[k] != 0) {
        return invalid_argument("cannot resize empty axis {} of input 0 {} to {}", d, in.describe(), sizes[k]);
      }
      g.out[d] = sizes[k];
      g.scales[d] = in.shape()[d] == 0 ? 1.0 : static_cast<double>(sizes[k]) / static_cast<double>(in.shape()[d]);
    }
    if (form_.policy == AspectPolicy::kStretch || axes.empty()) return Status::ok();
    // keep_aspect_ratio_policy: one scale for every resized axis, lengths rounded half up.
    double scale = g.scales[axes[0]];
    for (size_t d : axes) {
      scale = form_.policy == AspectPolicy::kNotLarger ? std::min(scale, g.scales[d]) : std::max(scale, g.scales[d]);
    }
    for (size_t d : axes) {
      g.scales[d] = scale;
      g.out[d] = static_cast<int64_t>(scale * static_cast<double>(in.shape()[d]) + 0.5);
    }
    return Status::ok();
  }

  Status read_roi(const KernelContext& ctx, const std::vector<size_t>& axes, Geometry& g) const {
    if (!given(ctx, form_.roi_input)) {
      return invalid_argument("coordinate_transformation_mode tf_crop_and_resize needs input 1 (roi)");
    }
    auto i = static_cast<size_t>(form_.roi_input);
    if (!ctx.has_value(i)) return needs_value(i);
    const Tensor& roi = ctx.input(i);
    if (!dtype_is_float(roi.dtype())) return invalid_argument("input 1 (roi) must be floating point, got {}", roi.describe());
    if (roi.numel() != static_cast<int64_t>(2 * axes.size())) {
      return invalid_argument("roi {} must hold {} values (start and end of {} axes)", roi.describe(), 2 * axes.size(),
                              axes.size());
    }
    for (size_t k = 0; k < axes.size(); ++k) {
      g.roi_start[axes[k]] = read_double(roi, static_cast<int64_t>(k));
      g.roi_end[axes[k]] = read_double(roi, static_cast<int64_t>(k + axes.size()));
    }
    return Status::ok();
  }

  ResizeParams params_;
  ResizeForm form_;
};

Result<ResizeMode> parse_mode(const std::string& s, bool cubic_allowed) {
  if (s == "nearest") return ResizeMode::kNearest;
  if (s == "linear" || s == "bilinear") return ResizeMode::kLinear;
  if (s == "cubic" && cubic_allowed) return ResizeMode::kCubic;
  return invalid_argument("mode '{}' is not one of nearest, linear{}", s, cubic_allowed ? ", cubic" : "");
}

Result<CoordMode> parse_coord(const std::string& s) {
  if (s == "half_pixel") return CoordMode::kHalfPixel;
  if (s == "half_pixel_symmetric") return CoordMode::kHalfPixelSymmetric;
  if (s == "pytorch_half_pixel") return CoordMode::kPytorchHalfPixel;
  if (s == "align_corners") return CoordMode::kAlignCorners;
  if (s == "asymmetric") return CoordMode::kAsymmetric;
  if (s == "tf_half_pixel_for_nn") return CoordMode::kTfHalfPixelForNN;
  if (s == "tf_crop_and_resize") return CoordMode::kTfCropAndResize;
  return invalid_argument(
      "coordinate_transformation_mode '{}' is not one of half_pixel, half_pixel_symmetric, pytorch_half_pixel, "
      "align_corners, asymmetric, tf_half_pixel_for_nn, tf_crop_and_resize",
      s);
}

Result<NearestMode> parse_nearest(const std::string& s) {
  if (s == "round_prefer_floor") return NearestMode::kRoundPreferFloor;
  if (s == "round_prefer_ceil") return NearestMode::kRoundPreferCeil;
  if (s == "floor") return NearestMode::kFloor;
  if (s == "ceil") return NearestMode::kCeil;
  return invalid_argument("nearest_mode '{}' is not one of round_prefer_floor, round_prefer_ceil, floor, ceil", s);
}

Result<AspectPolicy> parse_policy(const std::string& s) {
  if (s == "stretch") return AspectPolicy::kStretch;
  if (s == "not_larger") return AspectPolicy::kNotLarger;
  if (s == "not_smaller") return AspectPolicy::kNotSmaller;
  return invalid_argument("keep_aspect_ratio_policy '{}' is not one of stretch, not_larger, not_smaller", s);
}

Status check_dtype(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(tensor_ops::require_input(init, 0, "input 0 (X)"));
  DType t = init.input_dtypes[0];
  if ((!dtype_is_float(t) && !dtype_is_int(t)) || dtype_is_narrow(t)) {
    return not_implemented("{} of input 0 {}: only numeric tensors are resized", init.node.op_type, dtype_name(t));
  }
  return Status::ok();
}

// Resize-10 and Upsample: asymmetric coordinates and ONNX Runtime's simple rounding.
KernelResult create_legacy(const KernelInit& init, ResizeForm form) {
  EMBER_RETURN_IF_ERROR(check_dtype(init));
  ir::AttrReader attrs(init.node);
  ResizeParams p;
  EMBER_ASSIGN_OR_RETURN(p.mode, parse_mode(attrs.get_string("mode", "nearest"), false));
  p.coord = CoordMode::kAsymmetric;
  p.nearest = NearestMode::kSimple;
  if (form.scales_input < 0) {
    attrs.require("scales");
    form.attr_scales = attrs.get_floats("scales");
  } else {
    EMBER_RETURN_IF_ERROR(tensor_ops::require_input(init, 1, "input 1 (scales)"));
  }
  EMBER_RETURN_IF_ERROR(attrs.status());
  return std::unique_ptr<OpKernel>(new ResizeKernel(p, std::move(form)));
}

}  // namespace

KernelResult create_resize(const KernelInit& init) {
  int opset = init.node.opset;
  if (opset < 11) {
    ResizeForm form;
    form.scales_input = 1;
    return create_legacy(init, std::move(form));
  }
  EMBER_RETURN_IF_ERROR(check_dtype(init));
  ir::AttrReader attrs(init.node);
  ResizeParams p;
  EMBER_ASSIGN_OR_RETURN(p.mode, parse_mode(attrs.get_string("mode", "nearest"), true));
  EMBER_ASSIGN_OR_RETURN(p.coord, parse_coord(attrs.get_string("coordinate_transformation_mode", "half_pixel")));
  EMBER_ASSIGN_OR_RETURN(p.nearest, parse_nearest(attrs.get_string("nearest_mode", "round_prefer_floor")));
  p.cubic_a = attrs.get_float("cubic_coeff_a", -0.75f);
  p.exclude_outside = attrs.get_int("exclude_outside", 0) != 0;
  p.extrapolation_value = attrs.get_float("extrapolation_value", 0.0f);
  ResizeForm form;
  form.roi_input = 1;
  form.scales_input = 2;
  form.sizes_input = 3;
  if (opset >= 18) {
    // Antialiasing only changes the linear and cubic filters.
    p.antialias = attrs.get_int("antialias", 0) != 0 && p.mode != ResizeMode::kNearest;
    form.axes = attrs.get_ints("axes");
    EMBER_ASSIGN_OR_RETURN(form.policy, parse_policy(attrs.get_string("keep_aspect_ratio_policy", "stretch")));
  }
  EMBER_RETURN_IF_ERROR(attrs.status());
  return std::unique_ptr<OpKernel>(new ResizeKernel(p, std::move(form)));
}

KernelResult create_upsample(const KernelInit& init) {
  ResizeForm form;
  if (init.node.opset >= 9) form.scales_input = 1;
  return create_legacy(init, std::move(form));
}

}  // namespace ember::kernels::image
