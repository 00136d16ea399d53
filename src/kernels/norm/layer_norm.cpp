// LayerNormalization reference: normalizes over the dims from `axis` on, with
// statistics accumulated in double. f64 inputs run here; row_norm.cpp runs the
// other float types on the row microkernels.
#include <cmath>
#include <memory>

#include "kernels/common/shape_util.h"
#include "kernels/norm/norm_ops.h"

namespace ember::kernels {
namespace {

struct RowStats {
  double mean = 0;
  double inv_std_dev = 0;
};

template <typename T>
RowStats row_stats(const T* x, int64_t n, double epsilon) {
  RowStats s;
  if (n > 0) {
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += static_cast<double>(static_cast<compute_t<T>>(x[j]));
    s.mean = sum / static_cast<double>(n);
  }
  double sq = 0;
  for (int64_t j = 0; j < n; ++j) {
    const double d = static_cast<double>(static_cast<compute_t<T>>(x[j])) - s.mean;
    sq += d * d;
  }
  const double var = n > 0 ? sq / static_cast<double>(n) : 0.0;
  s.inv_std_dev = 1.0 / std::sqrt(var + epsilon);
  return s;
}

// Scale and B as read over the normalized dims: element strides, all 1-strided
// (contiguous) in the common case where they have the full normalized shape.
struct ParamLayout {
  Shape norm_shape;
  Shape scale_strides, bias_strides;
  bool contiguous = true;
};

template <typename T>
void normalize_row(const T* x, T* y, const T* scale, const T* bias, const ParamLayout& l, int64_t n,
                   const RowStats& s) {
  const auto value = [&](int64_t j, int64_t si, int64_t bi) {
    double v = (static_cast<double>(static_cast<compute_t<T>>(x[j])) - s.mean) * s.inv_std_dev;
    v *= static_cast<double>(static_cast<compute_t<T>>(scale[si]));
    if (bias) v += static_cast<double>(static_cast<compute_t<T>>(bias[bi]));
    y[j] = static_cast<T>(static_cast<compute_t<T>>(v));
  };
  if (l.contiguous) {
    for (int64_t j = 0; j < n; ++j) value(j, j, j);
    return;
  }
  Shape index(l.norm_shape.size(), 0);
  int64_t si = 0, bi = 0;
  for (int64_t j = 0; j < n; ++j) {
    value(j, si, bi);
    for (size_t d = index.size(); d-- > 0;) {
      si += l.scale_strides[d];
      bi += l.bias_strides[d];
      if (++index[d] < l.norm_shape[d]) break;
      si -= l.scale_strides[d] * l.norm_shape[d];
      bi -= l.bias_strides[d] * l.norm_shape[d];
      index[d] = 0;
    }
  }
}

class LayerNormKernel final : public OpKernel {
 public:
  LayerNormKernel(DType dtype, int64_t axis, float epsilon) : dtype_(dtype), axis_(axis), epsilon_(epsilon) {}

  Status infer(KernelContext& ctx) const override {
    const Shape& x = ctx.input(0).shape();
    EMBER_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_, static_cast<int64_t>(x.size())));
    const Shape norm_shape(x.begin() + axis, x.end());
    for (size_t i = 1; i < 3; ++i) {
      if (!ctx.has_input(i)) continue;
      const Shape& p = ctx.input(i).shape();
      bool ok = p.size() <= norm_shape.size();
      for (size_t d = 0; ok && d < p.size(); ++d) ok = p[d] == 1 || p[d] == norm_shape[d + norm_shape.size() - p.size()];
      if (!ok) {
        return invalid_argument("{} {} does not broadcast to the normalized shape {} of X {} (axis {})",
                                i == 1 ? "Scale" : "B", shape_to_string(p), shape_to_string(norm_shape),
                                shape_to_string(x), axis_);
      }
    }
    Shape stats_shape = x;
    for (size_t d = static_cast<size_t>(axis); d < stats_shape.size(); ++d) stats_shape[d] = 1;
    ctx.set_output(0, dtype_, x);
    ctx.set_output(1, DType::kF32, stats_shape);
    ctx.set_output(2, DType::kF32, stats_shape);
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int64_t axis = axis_ < 0 ? axis_ + x.rank() : axis_;
    int64_t rows = 1;
    for (int64_t d = 0; d < axis; ++d) rows *= x.dim(d);
    ParamLayout layout;
    layout.norm_shape.assign(x.shape().begin() + axis, x.shape().end());
    const int64_t n = shape_numel(layout.norm_shape);
    const Tensor& scale = ctx.input(1);
    const Tensor* bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    layout.contiguous = scale.numel() == n && (!bias || bias->numel() == n);
    if (!layout.contiguous) {
      layout.scale_strides = broadcast_strides(scale.shape(), layout.norm_shape);
      layout.bias_strides = bias ? broadcast_strides(bias->shape(), layout.norm_shape) : Shape(layout.norm_shape.size(), 0);
    }
    float* mean = ctx.has_output(1) ? ctx.output(1).data_as<float>() : nullptr;
    float* inv_std_dev = ctx.has_output(2) ? ctx.output(2).data_as<float>() : nullptr;
    EMBER_SWITCH_FLOAT(dtype_, T, {
      const T* xd = x.data_as<T>();
      T* yd = ctx.output(0).data_as<T>();
      const T* bd = bias ? bias->data_as<T>() : nullptr;
      for (int64_t r = 0; r < rows; ++r) {
        const RowStats s = row_stats(xd + r * n, n, epsilon_);
        normalize_row(xd + r * n, yd + r * n, scale.data_as<T>(), bd, layout, n, s);
        if (mean) mean[r] = static_cast<float>(s.mean);
        if (inv_std_dev) inv_std_dev[r] = static_cast<float>(s.inv_std_dev);
      }
    }, return internal_error("LayerNormalization: unexpected dtype {}", dtype_name(dtype_)));
    return Status::ok();
  }

 private:
  DType dtype_;
  int64_t axis_;
  float epsilon_;
};

}  // namespace

Result<std::unique_ptr<OpKernel>> create_layer_normalization_reference(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(check_float_inputs(init, 2, true));
  ir::AttrReader attrs(init.node);
  const int64_t axis = attrs.get_int("axis", -1);
  const float epsilon = attrs.get_float("epsilon", 1e-5f);
  const int64_t stash_type = attrs.get_int("stash_type", 1);
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (stash_type != static_cast<int64_t>(DType::kF32)) {
    return not_implemented("stash_type {} is not supported (only 1, float32)", stash_type);
  }
  if (!(epsilon >= 0.0f)) return invalid_argument("epsilon must be >= 0, got {}", epsilon);
  return std::unique_ptr<OpKernel>(std::make_unique<LayerNormKernel>(init.input_dtypes[0], axis, epsilon));
}

}  // namespace ember::kernels
