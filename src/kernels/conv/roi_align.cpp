// RoiAlign: each region of interest, scaled by spatial_scale (and shifted half
// a pixel under coordinate_transformation_mode=half_pixel, the opset-16
// default), is cut into output_height x output_width bins; each bin averages
// (mode=avg) or takes the largest of (mode=max) bilinear samples on a regular
// sampling_ratio grid (adaptive when 0). As in ONNX's reference and ONNX
// Runtime, max mode takes the largest of the four weighted neighbours of each
// sample rather than the interpolated value.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "kernels/conv/conv_ops.h"

namespace ember::kernels {
namespace {

struct RoiAlignParams {
  bool half_pixel = true;
  bool max_mode = false;
  int64_t out_h = 1, out_w = 1, sampling_ratio = 0;
  float spatial_scale = 1.0f;
};

// The four neighbours of one sample and their weights (all zero outside the image).
struct Sample {
  int64_t pos[4] = {0, 0, 0, 0};
  double weight[4] = {0, 0, 0, 0};
};

Sample sample_at(double y, double x, int64_t height, int64_t width) {
  Sample s;
  if (y < -1.0 || y > static_cast<double>(height) || x < -1.0 || x > static_cast<double>(width)) return s;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  int64_t y_low = static_cast<int64_t>(y), x_low = static_cast<int64_t>(x), y_high, x_high;
  if (y_low >= height - 1) {
    y_high = y_low = height - 1;
    y = static_cast<double>(y_low);
  } else {
    y_high = y_low + 1;
  }
  if (x_low >= width - 1) {
    x_high = x_low = width - 1;
    x = static_cast<double>(x_low);
  } else {
    x_high = x_low + 1;
  }
  const double ly = y - static_cast<double>(y_low), lx = x - static_cast<double>(x_low);
  const double hy = 1.0 - ly, hx = 1.0 - lx;
  s.pos[0] = y_low * width + x_low;
  s.pos[1] = y_low * width + x_high;
  s.pos[2] = y_high * width + x_low;
  s.pos[3] = y_high * width + x_high;
  s.weight[0] = hy * hx;
  s.weight[1] = hy * lx;
  s.weight[2] = ly * hx;
  s.weight[3] = ly * lx;
  return s;
}

template <typename T>
void roi_align_ref(const RoiAlignParams& p, int64_t channels, int64_t height, int64_t width, const T* x,
                   const T* rois, const int64_t* batch_indices, int64_t num_rois, T* y,
                   std::vector<Sample>& samples) {
  const double offset = p.half_pixel ? 0.5 : 0.0;
  for (int64_t r = 0; r < num_rois; ++r) {
    const T* roi = rois + r * 4;
    const double start_w = static_cast<double>(roi[0]) * p.spatial_scale - offset;
    const double start_h = static_cast<double>(roi[1]) * p.spatial_scale - offset;
    double roi_w = static_cast<double>(roi[2]) * p.spatial_scale - offset - start_w;
    double roi_h = static_cast<double>(roi[3]) * p.spatial_scale - offset - start_h;
    if (!p.half_pixel) {
      roi_w = std::max(roi_w, 1.0);
      roi_h = std::max(roi_h, 1.0);
    }
    const double bin_h = roi_h / static_cast<double>(p.out_h), bin_w = roi_w / static_cast<double>(p.out_w);
    const int64_t grid_h =
        p.sampling_ratio > 0 ? p.sampling_ratio : std::max<int64_t>(0, static_cast<int64_t>(std::ceil(bin_h)));
    const int64_t grid_w =
        p.sampling_ratio > 0 ? p.sampling_ratio : std::max<int64_t>(0, static_cast<int64_t>(std::ceil(bin_w)));
    const double count = static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1));
    samples.resize(static_cast<size_t>(p.out_h * p.out_w * grid_h * grid_w));
    size_t k = 0;
    for (int64_t ph = 0; ph < p.out_h; ++ph) {
      for (int64_t pw = 0; pw < p.out_w; ++pw) {
        for (int64_t iy = 0; iy < grid_h; ++iy) {
          const double yy = start_h + static_cast<double>(ph) * bin_h +
                            (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(grid_h);
          for (int64_t ix = 0; ix < grid_w; ++ix) {
            const double xx = start_w + static_cast<double>(pw) * bin_w +
                              (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(grid_w);
            samples[k++] = sample_at(yy, xx, height, width);
          }
        }
      }
    }
    const int64_t per_bin = grid_h * grid_w;
    for (int64_t c = 0; c < channels; ++c) {
      const T* plane = x + (batch_indices[r] * channels + c) * height * width;
      T* out = y + (r * channels + c) * p.out_h * p.out_w;
      for (int64_t bin = 0; bin < p.out_h * p.out_w; ++bin) {
        const Sample* s = samples.data() + bin * per_bin;
        double value = 0.0;
        for (int64_t i = 0; i < per_bin; ++i) {
          if (p.max_mode) {
            double best = s[i].weight[0] * static_cast<double>(plane[s[i].pos[0]]);
            for (int j = 1; j < 4; ++j) best = std::max(best, s[i].weight[j] * static_cast<double>(plane[s[i].pos[j]]));
            value = i == 0 ? best : std::max(value, best);
          } else {
            for (int j = 0; j < 4; ++j) value += s[i].weight[j] * static_cast<double>(plane[s[i].pos[j]]);
          }
        }
        out[bin] = static_cast<T>(p.max_mode ? value : value / count);
      }
    }
  }
}

class RoiAlignKernel final : public OpKernel {
 public:
  RoiAlignKernel(DType dtype, RoiAlignParams params) : dtype_(dtype), params_(params) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_RETURN_IF_ERROR(check_shapes(ctx));
    ctx.set_output(0, dtype_, Shape{ctx.input(1).dim(0), ctx.input(0).dim(1), params_.out_h, params_.out_w});
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    EMBER_RETURN_IF_ERROR(check_shapes(ctx));
    const Tensor& x = ctx.input(0);
    const Tensor& batch_indices = ctx.input(2);
    const int64_t* bi = batch_indices.data_as<int64_t>();
    for (int64_t r = 0; r < batch_indices.numel(); ++r) {
      if (bi[r] < 0 || bi[r] >= x.dim(0)) {
        return invalid_argument("batch_indices[{}] = {} is outside X's batch of {}", r, bi[r], x.dim(0));
      }
    }
    if (x.dim(2) == 0 || x.dim(3) == 0) {
      if (ctx.output(0).numel() != 0) return invalid_argument("X {} has an empty image", x.describe());
      return Status::ok();
    }
    thread_local std::vector<Sample> t_samples;
    EMBER_SWITCH_FLOAT(dtype_, T,
                       roi_align_ref<T>(params_, x.dim(1), x.dim(2), x.dim(3), x.data_as<T>(), ctx.input(1).data_as<T>(),
                                        bi, batch_indices.numel(), ctx.output(0).data_as<T>(), t_samples),
                       return internal_error("RoiAlign: unexpected dtype {}", dtype_name(dtype_)));
    return Status::ok();
  }

 private:
  static Status check_shapes(const KernelContext& ctx) {
    const Shape& x = ctx.input(0).shape();
    const Shape& rois = ctx.input(1).shape();
    const Shape& bi = ctx.input(2).shape();
    if (x.size() != 4) return invalid_argument("X {} must be N x C x H x W", shape_to_string(x));
    if (rois.size() != 2 || rois[1] != 4) return invalid_argument("rois {} must be num_rois x 4", shape_to_string(rois));
    if (bi.size() != 1 || bi[0] != rois[0]) {
      return invalid_argument("batch_indices {} must have shape [{}]", shape_to_string(bi), rois[0]);
    }
    return Status::ok();
  }

  DType dtype_;
  RoiAlignParams params_;
};

}  // namespace

Result<std::unique_ptr<OpKernel>> create_roi_align(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 3));
  const DType t = init.input_dtypes[0];
  if (!dtype_is_float(t)) return not_implemented("dtype {} is not supported (float types only)", dtype_name(t));
  if (init.input_dtypes[1] != t) {
    return invalid_argument("rois is {} but X is {}", dtype_name(init.input_dtypes[1]), dtype_name(t));
  }
  if (init.input_dtypes[2] != DType::kI64) {
    return invalid_argument("batch_indices must be int64, got {}", dtype_name(init.input_dtypes[2]));
  }
  ir::AttrReader reader(init.node);
  RoiAlignParams p;
  // Opset 10 has no coordinate_transformation_mode and behaves as output_half_pixel.
  const std::string ctm =
      reader.get_string("coordinate_transformation_mode", init.node.opset >= 16 ? "half_pixel" : "output_half_pixel");
  const std::string mode = reader.get_string("mode", "avg");
  p.out_h = reader.get_int("output_height", 1);
  p.out_w = reader.get_int("output_width", 1);
  p.sampling_ratio = reader.get_int("sampling_ratio", 0);
  p.spatial_scale = reader.get_float("spatial_scale", 1.0f);
  EMBER_RETURN_IF_ERROR(reader.status());
  if (ctm != "half_pixel" && ctm != "output_half_pixel") {
    return invalid_argument("coordinate_transformation_mode '{}' is not half_pixel or output_half_pixel", ctm);
  }
  if (mode != "avg" && mode != "max") return invalid_argument("mode '{}' is not avg or max", mode);
  if (p.out_h < 1 || p.out_w < 1) {
    return invalid_argument("output_height and output_width must be >= 1, got {} and {}", p.out_h, p.out_w);
  }
  if (p.sampling_ratio < 0) return invalid_argument("sampling_ratio must be >= 0, got {}", p.sampling_ratio);
  p.half_pixel = ctm == "half_pixel";
  p.max_mode = mode == "max";
  return std::unique_ptr<OpKernel>(std::make_unique<RoiAlignKernel>(t, p));
}

}  // namespace ember::kernels
