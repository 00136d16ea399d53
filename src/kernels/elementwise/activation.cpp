// Shrink, Clip and PRelu (the Relu family and the other one-input activations
// are rows of the unary op table, src/ops/unary_ops.def).
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/elementwise/unary_kernel.h"

namespace ember::kernels {
namespace elementwise {
namespace {

// Shrink on integer inputs shifts in double and then truncates, as the spec's
// reference does (x - bias, then astype): a bias of 0.5 must not become 0.
struct ShrinkOp {
  static constexpr TypeSet kTypes = TypeSet::kNumeric;
  float lambd;
  float bias;
  explicit ShrinkOp(ir::AttrReader& a) : lambd(a.get_float("lambd", 0.5f)), bias(a.get_float("bias", 0.0f)) {}
  template <typename C> C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>) {
      return x < -C(lambd) ? x + C(bias) : (x > C(lambd) ? x - C(bias) : C(0));
    } else {
      const double v = static_cast<double>(x);
      return v < -double(lambd) ? static_cast<C>(v + bias) : (v > double(lambd) ? static_cast<C>(v - bias) : C(0));
    }
  }
};
// Clip: bounds are attributes before opset 11 and optional scalar inputs from 11.
class ClipKernel final : public OpKernel {
 public:
  ClipKernel(DType dtype, bool bounds_are_inputs, float min_attr, float max_attr)
      : dtype_(dtype), bounds_are_inputs_(bounds_are_inputs), min_attr_(min_attr), max_attr_(max_attr) {}

  Status infer(KernelContext& ctx) const override {
    for (size_t i = 1; i < 3; ++i) {
      if (ctx.has_input(i) && ctx.input(i).numel() != 1) {
        return invalid_argument("input {} ({}) must hold one value, has shape {}", i, i == 1 ? "min" : "max",
                                shape_to_string(ctx.input(i).shape()));
      }
    }
    ctx.set_output(0, dtype_, ctx.input(0).shape());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    visit<TypeSet::kNumeric>(dtype_, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      C lo = std::numeric_limits<C>::lowest();
      C hi = std::numeric_limits<C>::max();
      if (!bounds_are_inputs_) {
        if constexpr (std::is_floating_point_v<C>) {
          lo = static_cast<C>(min_attr_);
          hi = static_cast<C>(max_attr_);
        }
      } else {
        if (ctx.has_input(1)) lo = static_cast<C>(ctx.input(1).data_as<T>()[0]);
        if (ctx.has_input(2)) hi = static_cast<C>(ctx.input(2).data_as<T>()[0]);
      }
      // Lower bound first, so min > max yields max everywhere, as the spec says; NaN passes through.
      auto clip = [lo, hi](C x) {
        if (x < lo) x = lo;
        if (x > hi) x = hi;
        return x;
      };
      unary_loop(ctx.input(0).data_as<T>(), ctx.output(0).data_as<T>(), ctx.input(0).numel(), clip);
    });
    return Status::ok();
  }

  int inplace_input() const override { return 0; }

 private:
  DType dtype_;
  bool bounds_are_inputs_;
  float min_attr_;
  float max_attr_;
};

Result<std::unique_ptr<OpKernel>> create_clip(const KernelInit& init) {
  const bool bounds_are_inputs = init.node.opset >= 11;
  EMBER_RETURN_IF_ERROR(check_input_count(init, 1, bounds_are_inputs ? 3 : 1));
  const DType dtype = init.input_dtypes[0];
  if (bounds_are_inputs) {
    EMBER_RETURN_IF_ERROR(check_dtype<TypeSet::kNumeric>(dtype, 0, "Clip"));
    for (size_t i = 1; i < init.input_dtypes.size(); ++i) {
      const DType t = init.input_dtypes[i];
      if (t != DType::kUndefined && t != dtype) {
        return invalid_argument("input {} has dtype {}, expected {} like input 0", i, dtype_name(t), dtype_name(dtype));
      }
    }
    return std::unique_ptr<OpKernel>(std::make_unique<ClipKernel>(dtype, true, 0.0f, 0.0f));
  }
  EMBER_RETURN_IF_ERROR(check_dtype<TypeSet::kFloat>(dtype, 0, "Clip"));
  ir::AttrReader attrs(init.node);
  const float lo = attrs.get_float("min", std::numeric_limits<float>::lowest());
  const float hi = attrs.get_float("max", std::numeric_limits<float>::max());
  EMBER_RETURN_IF_ERROR(attrs.status());
  return std::unique_ptr<OpKernel>(std::make_unique<ClipKernel>(dtype, false, lo, hi));
}

// PRelu: slope broadcasts to X (unidirectionally). Before opset 7 a 1-D slope
// of X's channel count applies per channel (axis 1).
class PReluKernel final : public OpKernel {
 public:
  PReluKernel(DType dtype, bool legacy) : dtype_(dtype), legacy_(legacy) {}

  Status infer(KernelContext& ctx) const override {
    const Shape& x = ctx.input(0).shape();
    const Shape slope = slope_shape(x, ctx.input(1).shape());
    auto out = broadcast_shapes(x, slope);
    if (!out.is_ok() || !(out.value() == x)) {
      return invalid_argument("slope {} cannot be broadcast to X {}", shape_to_string(ctx.input(1).shape()),
                              shape_to_string(x));
    }
    ctx.set_output(0, dtype_, x);
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Shape slope = slope_shape(x.shape(), ctx.input(1).shape());
    visit<TypeSet::kNumeric>(dtype_, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      auto prelu = [](T xv, T sv) {
        const C xc = static_cast<C>(xv);
        return static_cast<T>(xc < C(0) ? static_cast<C>(xc * static_cast<C>(sv)) : xc);
      };
      binary_loop(x.data_as<T>(), x.shape(), ctx.input(1).data_as<T>(), slope, ctx.output(0).data_as<T>(), x.shape(),
                  prelu);
    });
    return Status::ok();
  }

  int inplace_input() const override { return 0; }

 private:
  Shape slope_shape(const Shape& x, const Shape& slope) const {
    if (legacy_ && slope.size() == 1 && x.size() >= 2 && slope[0] == x[1]) return legacy_broadcast_shape(x, slope, 1);
    return slope;
  }

  DType dtype_;
  bool legacy_;
};

Result<std::unique_ptr<OpKernel>> create_prelu(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(check_input_count(init, 2, 2));
  const DType dtype = init.input_dtypes[0];
  EMBER_RETURN_IF_ERROR(check_dtype<TypeSet::kNumeric>(dtype, 0, "PRelu"));
  if (init.input_dtypes[1] != dtype) {
    return invalid_argument("slope has dtype {}, expected {} like X", dtype_name(init.input_dtypes[1]),
                            dtype_name(dtype));
  }
  return std::unique_ptr<OpKernel>(std::make_unique<PReluKernel>(dtype, init.node.opset < 7));
}

}  // namespace
}  // namespace elementwise

void register_gelu_ops(OpRegistry& r);  // gelu.cpp

void register_activation_ops(OpRegistry& r) {
  using namespace elementwise;
  register_gelu_ops(r);
  add_op(r, "Shrink", 9, create_unary<ShrinkOp>, dtype_set(ShrinkOp::kTypes));
  add_op(r, "Clip", 1, create_clip);
  add_op(r, "PRelu", 1, create_prelu);
}

}  // namespace ember::kernels
