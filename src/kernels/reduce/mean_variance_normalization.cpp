// MeanVarianceNormalization: (X - E[X]) / (sqrt(E[(X - E[X])^2]) + 1e-9) over
// `axes`, the formula of ONNX's function body. Statistics are computed in double
// with two passes, so a constant group gives exactly 0 instead of a rounding
// residue from E[X^2] - E[X]^2.
#include <cmath>

#include "kernels/reduce/reduce_ops.h"
#include "kernels/reduce/reduce_plan.h"

namespace ember::kernels {
namespace {

constexpr double kEpsilon = 1e-9;

template <typename T>
void mvn_tensor(const T* x, T* y, const ReducePlan& plan) {
  using C = compute_t<T>;
  const double n = static_cast<double>(plan.reduced_count);
  auto value = [&](int64_t offset) { return static_cast<double>(static_cast<C>(x[offset])); };
  for_each_output_base(plan, [&](int64_t, int64_t base) {
    double sum = 0;
    for_each_reduced_offset(base, plan, [&](int64_t offset) { sum += value(offset); });
    const double mean = sum / n;
    double sq = 0;
    for_each_reduced_offset(base, plan, [&](int64_t offset) {
      const double d = value(offset) - mean;
      sq += d * d;
    });
    const double scale = 1.0 / (std::sqrt(sq / n) + kEpsilon);
    for_each_reduced_offset(base, plan, [&](int64_t offset) {
      y[offset] = static_cast<T>(static_cast<C>((value(offset) - mean) * scale));
    });
  });
}

class MeanVarianceNormalizationKernel final : public OpKernel {
 public:
  explicit MeanVarianceNormalizationKernel(std::vector<int64_t> axes) : axes_(std::move(axes)) {}

  Status infer(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    EMBER_RETURN_IF_ERROR(axes_to_mask(axes_, x.rank(), "attribute 'axes'").status());
    ctx.set_output(0, x.dtype(), x.shape());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    EMBER_ASSIGN_OR_RETURN(AxisMask mask, axes_to_mask(axes_, x.rank(), "attribute 'axes'"));
    const ReducePlan plan = make_reduce_plan(x.shape(), mask);
    Tensor& y = ctx.output(0);
    EMBER_SWITCH_FLOAT(x.dtype(), T, mvn_tensor<T>(x.data_as<T>(), y.data_as<T>(), plan); return Status::ok(), break);
    return internal_error("MeanVarianceNormalization: unexpected dtype {}", dtype_name(x.dtype()));
  }

 private:
  std::vector<int64_t> axes_;
};

}  // namespace

KernelResult create_mean_variance_normalization(const KernelInit& init) {
  ir::AttrReader attrs(init.node);
  std::vector<int64_t> axes = attrs.get_ints("axes", {0, 2, 3});
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (init.input_dtypes.size() != 1) return invalid_argument("expects 1 input, got {}", init.input_dtypes.size());
  const DType dtype = init.input_dtypes[0];
  if (dtype == DType::kString) return not_implemented("string tensors are not supported");
  if (!dtype_is_float(dtype)) {
    return invalid_argument("input 'X' must be a floating-point tensor, got {}", dtype_name(dtype));
  }
  return std::unique_ptr<OpKernel>(std::make_unique<MeanVarianceNormalizationKernel>(std::move(axes)));
}

}  // namespace ember::kernels
