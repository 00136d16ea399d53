// Dropout. In inference (the default, and every opset before 12) the output is
// the input and the optional mask is all ones. In training mode (opset 12's
// training_mode input set to true) each element is kept with probability
// 1 - ratio, drawn from RandomSource as U >= ratio, and scaled by 1 / (1 - ratio).
#include <cstring>
#include <memory>

#include "kernels/random/random_ops.h"

namespace ember::kernels::random_ops {
namespace {

class DropoutKernel final : public OpKernel {
 public:
  DropoutKernel(DType dtype, DType mask_dtype, std::optional<uint32_t> seed)
      : dtype_(dtype), mask_dtype_(mask_dtype), seed_(seed) {}

  Status infer(KernelContext& ctx) const override {
    for (size_t i = 1; i < 3; ++i) {
      if (ctx.has_input(i) && ctx.input(i).numel() != 1) {
        return invalid_argument("input {} ({}) must hold one value, got {}", i, i == 1 ? "ratio" : "training_mode",
                                ctx.input(i).describe());
      }
    }
    ctx.set_output(0, dtype_, ctx.input(0).shape());
    ctx.set_output(1, mask_dtype_, ctx.input(0).shape());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const bool training = ctx.has_input(2) && ctx.input(2).data_as<bool>()[0];
    const double ratio = ctx.has_input(1) ? read_double(ctx.input(1), 0) : 0.5;
    if (!training || ratio == 0.0) {
      if (ctx.output(0).data() != x.data() && x.nbytes()) std::memcpy(ctx.output(0).data(), x.data(), x.nbytes());
      if (ctx.has_output(1)) fill_mask_ones(ctx.output(1));
      return Status::ok();
    }
    if (!(ratio > 0.0 && ratio < 1.0)) {
      return invalid_argument("ratio must be in [0, 1) in training mode, got {}", ratio);
    }
    RandomSource source = RandomSource::from(seed_);
    bool* mask = ctx.has_output(1) ? ctx.output(1).data_as<bool>() : nullptr;
    const int64_t n = x.numel();
    EMBER_SWITCH_FLOAT(dtype_, T, {
      using C = compute_t<T>;
      const C scale = C(1) / (C(1) - static_cast<C>(ratio));
      const T* xd = x.data_as<T>();
      T* yd = ctx.output(0).data_as<T>();
      for (int64_t i = 0; i < n; ++i) {
        const bool keep = source.next_double() >= ratio;
        yd[i] = static_cast<T>(keep ? static_cast<C>(xd[i]) * scale : C(0));
        if (mask) mask[i] = keep;
      }
    }, return internal_error("Dropout: unexpected dtype {}", dtype_name(dtype_)));
    return Status::ok();
  }

  int inplace_input() const override { return 0; }

 private:
  void fill_mask_ones(Tensor& mask) const {
    EMBER_SWITCH_ALL(mask_dtype_, T, {
      T* m = mask.data_as<T>();
      for (int64_t i = 0; i < mask.numel(); ++i) m[i] = static_cast<T>(static_cast<compute_t<T>>(1));
    }, break);
  }

  DType dtype_;
  DType mask_dtype_;
  std::optional<uint32_t> seed_;
};

}  // namespace

KernelResult create_dropout(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 1));
  const DType dtype = init.input_dtypes[0];
  if (!dtype_is_float(dtype)) {
    return not_implemented("data has dtype {}; Dropout supports float types", dtype_name(dtype));
  }
  const int opset = init.node.opset;
  ir::AttrReader attrs(init.node);
  // Attributes of the older forms: ratio (opsets 1-10, inference only from 7),
  // is_test and consumed_inputs (opsets 1 and 6).
  const float ratio = attrs.get_float("ratio", 0.5f);
  const int64_t is_test = attrs.get_int("is_test", 0);
  attrs.get_ints("consumed_inputs");
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (opset < 7 && is_test == 0) {
    return not_implemented("training-mode Dropout of opset {} (is_test=0) is not supported", opset);
  }
  if (!(ratio >= 0.0f && ratio < 1.0f)) return invalid_argument("ratio must be in [0, 1), got {}", ratio);
  if (opset >= 12) {
    const DType ratio_t = input_dtype(init, 1);
    if (ratio_t != DType::kUndefined && !dtype_is_float(ratio_t)) {
      return invalid_argument("ratio must be a float scalar, got {}", dtype_name(ratio_t));
    }
    const DType mode_t = input_dtype(init, 2);
    if (mode_t != DType::kUndefined && mode_t != DType::kBool) {
      return invalid_argument("training_mode must be a bool scalar, got {}", dtype_name(mode_t));
    }
  } else if (init.input_dtypes.size() > 1) {
    return invalid_model("Dropout of opset {} takes one input, got {}", opset, init.input_dtypes.size());
  }
  EMBER_ASSIGN_OR_RETURN(const std::optional<uint32_t> seed, read_seed(init.node, false));
  // The mask is bool from opset 10; before, it has the data's type.
  const DType mask_dtype = opset >= 10 ? DType::kBool : dtype;
  return std::unique_ptr<OpKernel>(std::make_unique<DropoutKernel>(dtype, mask_dtype, seed));
}

}  // namespace ember::kernels::random_ops
