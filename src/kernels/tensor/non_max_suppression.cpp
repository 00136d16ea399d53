// NonMaxSuppression: per batch and class, greedily keeps the highest-scoring
// boxes, dropping any box whose IoU with a kept one exceeds iou_threshold. The
// number of selected boxes is known only after running, so the kernel
// allocates its output.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "kernels/tensor/gather_scatter_common.h"

namespace ember::kernels::gather_scatter {
namespace {

// A box as its min/max corners, whatever order the input gave them in.
struct Corners {
  double y_min, x_min, y_max, x_max;
};

Corners corners_of(const float* b, bool center_point_box) {
  if (center_point_box) {
    const double xc = b[0], yc = b[1], half_w = b[2] / 2.0, half_h = b[3] / 2.0;
    return {yc - half_h, xc - half_w, yc + half_h, xc + half_w};
  }
  return {std::min<double>(b[0], b[2]), std::min<double>(b[1], b[3]), std::max<double>(b[0], b[2]),
          std::max<double>(b[1], b[3])};
}

// True when the IoU of a and b is above the threshold; boxes without area
// never suppress each other.
bool suppresses(const Corners& a, const Corners& b, double iou_threshold) {
  const double ix = std::min(a.x_max, b.x_max) - std::max(a.x_min, b.x_min);
  const double iy = std::min(a.y_max, b.y_max) - std::max(a.y_min, b.y_min);
  if (!(ix > 0) || !(iy > 0)) return false;
  const double inter = ix * iy;
  const double area_a = (a.x_max - a.x_min) * (a.y_max - a.y_min);
  const double area_b = (b.x_max - b.x_min) * (b.y_max - b.y_min);
  const double uni = area_a + area_b - inter;
  if (!(area_a > 0) || !(area_b > 0) || !(uni > 0)) return false;
  return inter / uni > iou_threshold;
}

class NonMaxSuppressionKernel final : public OpKernel {
 public:
  explicit NonMaxSuppressionKernel(bool center_point_box) : center_point_box_(center_point_box) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_RETURN_IF_ERROR(check_shapes(ctx));
    ctx.set_output(0, DType::kI64, Shape{0, 3});
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    EMBER_RETURN_IF_ERROR(check_shapes(ctx));
    const Tensor& boxes = ctx.input(0);
    const Tensor& scores = ctx.input(1);
    const int64_t batches = boxes.dim(0), num_boxes = boxes.dim(1), classes = scores.dim(1);
    // An absent max_output_boxes_per_class means 0: nothing is selected.
    const int64_t max_per_class = ctx.has_input(2) && ctx.input(2).numel() > 0 ? read_int(ctx.input(2), 0) : 0;
    const double iou_threshold = ctx.has_input(3) && ctx.input(3).numel() > 0 ? read_double(ctx.input(3), 0) : 0.0;
    const bool has_score_threshold = ctx.has_input(4) && ctx.input(4).numel() > 0;
    const float score_threshold = has_score_threshold ? static_cast<float>(read_double(ctx.input(4), 0)) : 0.0f;

    std::vector<int64_t> selected;  // (batch, class, box) triples
    std::vector<Corners> corners(static_cast<size_t>(num_boxes));
    std::vector<int64_t> order;
    std::vector<int64_t> kept;
    for (int64_t b = 0; b < batches && max_per_class > 0; ++b) {
      const float* batch_boxes = boxes.data_as<float>() + b * num_boxes * 4;
      for (int64_t i = 0; i < num_boxes; ++i) {
        corners[static_cast<size_t>(i)] = corners_of(batch_boxes + i * 4, center_point_box_);
      }
      for (int64_t c = 0; c < classes; ++c) {
        const float* s = scores.data_as<float>() + (b * classes + c) * num_boxes;
        order.clear();
        for (int64_t i = 0; i < num_boxes; ++i) {
          if (!has_score_threshold || s[i] > score_threshold) order.push_back(i);
        }
        // Highest score first; equal scores keep the lower box index first.
        std::stable_sort(order.begin(), order.end(), [s](int64_t x, int64_t y) { return s[x] > s[y]; });
        kept.clear();
        for (int64_t i : order) {
          if (static_cast<int64_t>(kept.size()) >= max_per_class) break;
          const Corners& box = corners[static_cast<size_t>(i)];
          const bool suppressed = std::any_of(kept.begin(), kept.end(), [&](int64_t k) {
            return suppresses(box, corners[static_cast<size_t>(k)], iou_threshold);
          });
          if (suppressed) continue;
          kept.push_back(i);
          selected.insert(selected.end(), {b, c, i});
        }
      }
    }
    const auto count = static_cast<int64_t>(selected.size() / 3);
    Tensor out = Tensor::allocate_uninitialized(DType::kI64, Shape{count, 3});
    std::copy(selected.begin(), selected.end(), out.data_as<int64_t>());
    ctx.output(0) = std::move(out);
    return Status::ok();
  }

  bool allocates_outputs() const override { return true; }

 private:
  static Status check_shapes(const KernelContext& ctx) {
    const Tensor& boxes = ctx.input(0);
    const Tensor& scores = ctx.input(1);
    if (boxes.rank() != 3 || boxes.dim(2) != 4) {
      return invalid_argument("boxes must have shape [num_batches, spatial_dimension, 4], got {}", boxes.describe());
    }
    if (scores.rank() != 3 || scores.dim(0) != boxes.dim(0) || scores.dim(2) != boxes.dim(1)) {
      return invalid_argument("scores {} must have shape [{}, num_classes, {}] to match boxes {}", scores.describe(),
                              boxes.dim(0), boxes.dim(1), boxes.describe());
    }
    static constexpr const char* kNames[] = {"", "", "max_output_boxes_per_class", "iou_threshold", "score_threshold"};
    for (size_t i = 2; i < 5; ++i) {
      if (ctx.has_input(i) && ctx.input(i).numel() > 1) {
        return invalid_argument("{} must hold one value, got {}", kNames[i], ctx.input(i).describe());
      }
    }
    return Status::ok();
  }

  bool center_point_box_;
};

}  // namespace

KernelResult create_non_max_suppression(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 2));
  for (size_t i : {size_t{0}, size_t{1}, size_t{3}, size_t{4}}) {
    const DType t = input_dtype(init, i);
    if (t != DType::kUndefined && t != DType::kF32) {
      return not_implemented("input {} has dtype {}; NonMaxSuppression supports float32 only", i, dtype_name(t));
    }
  }
  const DType max_t = input_dtype(init, 2);
  if (max_t != DType::kUndefined && max_t != DType::kI64) {
    return invalid_argument("max_output_boxes_per_class must be int64, got {}", dtype_name(max_t));
  }
  ir::AttrReader attrs(init.node);
  const int64_t center_point_box = attrs.get_int("center_point_box", 0);
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (center_point_box != 0 && center_point_box != 1) {
    return invalid_argument("center_point_box must be 0 or 1, got {}", center_point_box);
  }
  return std::unique_ptr<OpKernel>(new NonMaxSuppressionKernel(center_point_box == 1));
}

}  // namespace ember::kernels::gather_scatter
