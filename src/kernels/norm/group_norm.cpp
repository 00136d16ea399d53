// GroupNormalization: mean and variance per (instance, group of channels),
// accumulated in double. Opset 18 takes scale and bias per group; opset 21
// changed them to per channel (and added stash_type).
#include <cmath>
#include <memory>

#include "kernels/norm/norm_ops.h"

namespace ember::kernels {
namespace {

class GroupNormKernel final : public OpKernel {
 public:
  GroupNormKernel(DType dtype, int64_t num_groups, float epsilon, bool per_channel)
      : dtype_(dtype), num_groups_(num_groups), epsilon_(epsilon), per_channel_(per_channel) {}

  Status infer(KernelContext& ctx) const override {
    const Shape& x = ctx.input(0).shape();
    if (x.size() < 2) return invalid_argument("X must have rank >= 2 (N x C x ...), got {}", shape_to_string(x));
    if (x[1] % num_groups_ != 0) {
      return invalid_argument("the {} channels of X {} do not split into num_groups={} groups", x[1],
                              shape_to_string(x), num_groups_);
    }
    const int64_t params = per_channel_ ? x[1] : num_groups_;
    for (size_t i = 1; i < 3; ++i) {
      const Shape& p = ctx.input(i).shape();
      if (p.size() != 1 || p[0] != params) {
        return invalid_argument("{} {} must have shape [{}] (one per {} of X {})", i == 1 ? "scale" : "bias",
                                shape_to_string(p), params, per_channel_ ? "channel" : "group", shape_to_string(x));
      }
    }
    ctx.set_output(0, dtype_, x);
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int64_t batch = x.dim(0), channels = x.dim(1);
    const int64_t group_channels = channels / num_groups_;
    int64_t spatial = 1;
    for (int64_t d = 2; d < x.rank(); ++d) spatial *= x.dim(d);
    const int64_t group_size = group_channels * spatial;
    EMBER_SWITCH_FLOAT(dtype_, T, {
      const T* xd = x.data_as<T>();
      const T* scale = ctx.input(1).data_as<T>();
      const T* bias = ctx.input(2).data_as<T>();
      T* yd = ctx.output(0).data_as<T>();
      auto value = [](T v) { return static_cast<double>(static_cast<compute_t<T>>(v)); };
      for (int64_t n = 0; n < batch; ++n) {
        for (int64_t g = 0; g < num_groups_; ++g) {
          const int64_t offset = (n * num_groups_ + g) * group_size;
          double sum = 0;
          for (int64_t i = 0; i < group_size; ++i) sum += value(xd[offset + i]);
          const double mean = group_size > 0 ? sum / static_cast<double>(group_size) : 0.0;
          double sq = 0;
          for (int64_t i = 0; i < group_size; ++i) {
            const double d = value(xd[offset + i]) - mean;
            sq += d * d;
          }
          const double var = group_size > 0 ? sq / static_cast<double>(group_size) : 0.0;
          const double inv_std = 1.0 / std::sqrt(var + epsilon_);
          for (int64_t c = 0; c < group_channels; ++c) {
            const int64_t p = per_channel_ ? g * group_channels + c : g;
            const double a = value(scale[p]) * inv_std;
            const double b = value(bias[p]) - mean * a;
            const int64_t row = offset + c * spatial;
            for (int64_t s = 0; s < spatial; ++s) {
              yd[row + s] = static_cast<T>(static_cast<compute_t<T>>(value(xd[row + s]) * a + b));
            }
          }
        }
      }
    }, return internal_error("GroupNormalization: unexpected dtype {}", dtype_name(dtype_)));
    return Status::ok();
  }

 private:
  DType dtype_;
  int64_t num_groups_;
  float epsilon_;
  bool per_channel_;
};

}  // namespace

Result<std::unique_ptr<OpKernel>> create_group_normalization(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(check_float_inputs(init, 3, true));
  ir::AttrReader attrs(init.node);
  const float epsilon = attrs.get_float("epsilon", 1e-5f);
  const int64_t num_groups = attrs.get_int("num_groups", 0);
  // stash_type 1 (float32) asks for at least float32 statistics; Ember keeps them in double.
  const int64_t stash_type = attrs.get_int("stash_type", 1);
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (!attrs.has("num_groups")) return invalid_model("the num_groups attribute is required");
  if (num_groups <= 0) return invalid_argument("num_groups must be > 0, got {}", num_groups);
  if (stash_type != 1) return not_implemented("stash_type={} is not supported (only 1, float32)", stash_type);
  if (!(epsilon >= 0.0f)) return invalid_argument("epsilon must be >= 0, got {}", epsilon);
  return std::unique_ptr<OpKernel>(
      std::make_unique<GroupNormKernel>(init.input_dtypes[0], num_groups, epsilon, init.node.opset >= 21));
}

}  // namespace ember::kernels
