// LpPool over 1-D to 3-D spatial dims: (sum of |x|^p over the window's taps
// inside the input)^(1/p); padding taps count as zeros, as in ONNX's reference.
// GlobalLpPool: the same over all spatial dims (any number) of each plane.
#include <cmath>
#include <memory>

#include "kernels/conv/conv_ops.h"
#include "kernels/matmul/window.h"

namespace ember::kernels {
namespace {

// |v|^p and sum^(1/p), with the common p = 1 and p = 2 exact.
template <typename Acc>
Acc lp_term(Acc v, int64_t p) {
  v = std::abs(v);
  return p == 1 ? v : p == 2 ? v * v : std::pow(v, static_cast<Acc>(p));
}
template <typename Acc>
Acc lp_root(Acc sum, int64_t p) {
  return p == 1 ? sum : p == 2 ? std::sqrt(sum) : std::pow(sum, Acc(1) / static_cast<Acc>(p));
}

template <typename T>
void lp_pool_ref(int64_t planes, const Window3d& w, int64_t p, const T* x, T* y) {
  using Acc = compute_t<T>;
  for (int64_t plane = 0; plane < planes; ++plane) {
    const T* xp = x + plane * w.in_size();
    T* yp = y + plane * w.out_size();
    for (int64_t od = 0; od < w.out[0]; ++od) {
      for (int64_t oh = 0; oh < w.out[1]; ++oh) {
        for (int64_t ow = 0; ow < w.out[2]; ++ow) {
          Acc sum = Acc(0);
          for_each_tap(w, od, oh, ow, [&](int64_t i, int64_t) { sum += lp_term(static_cast<Acc>(xp[i]), p); });
          yp[(od * w.out[1] + oh) * w.out[2] + ow] = static_cast<T>(lp_root(sum, p));
        }
      }
    }
  }
}

class LpPoolKernel final : public OpKernel {
 public:
  LpPoolKernel(DType dtype, WindowAttrs attrs, int64_t p) : dtype_(dtype), attrs_(std::move(attrs)), p_(p) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(Window3d w, geometry(ctx));
    const Shape& x = ctx.input(0).shape();
    ctx.set_output(0, dtype_, window_output_shape(x[0], x[1], w, x.size() - 2));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(Window3d w, geometry(ctx));
    const Tensor& x = ctx.input(0);
    EMBER_SWITCH_FLOAT(dtype_, T, lp_pool_ref<T>(x.dim(0) * x.dim(1), w, p_, x.data_as<T>(), ctx.output(0).data_as<T>()),
                       return internal_error("LpPool: unexpected dtype {}", dtype_name(dtype_)));
    return Status::ok();
  }

 private:
  Result<Window3d> geometry(const KernelContext& ctx) const {
    const Shape& x = ctx.input(0).shape();
    if (x.size() < 3) return invalid_argument("X {} must be N x C x spatial", shape_to_string(x));
    return resolve_window(attrs_, std::span<const int64_t>(x.begin() + 2, x.end()), attrs_.kernel_shape);
  }

  DType dtype_;
  WindowAttrs attrs_;
  int64_t p_;
};

class GlobalLpPoolKernel final : public OpKernel {
 public:
  GlobalLpPoolKernel(DType dtype, int64_t p) : dtype_(dtype), p_(p) {}

  Status infer(KernelContext& ctx) const override {
    const Shape& x = ctx.input(0).shape();
    if (x.size() < 3) return invalid_argument("X {} must be N x C x spatial", shape_to_string(x));
    Shape y(x.size(), 1);
    y[0] = x[0];
    y[1] = x[1];
    ctx.set_output(0, dtype_, std::move(y));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int64_t planes = x.dim(0) * x.dim(1);
    const int64_t size = planes == 0 ? 0 : x.numel() / planes;
    EMBER_SWITCH_FLOAT(dtype_, T, {
      using Acc = compute_t<T>;
      const T* xp = x.data_as<T>();
      T* y = ctx.output(0).data_as<T>();
      for (int64_t plane = 0; plane < planes; ++plane) {
        Acc sum = Acc(0);
        for (int64_t i = 0; i < size; ++i) sum += lp_term(static_cast<Acc>(xp[plane * size + i]), p_);
        y[plane] = static_cast<T>(lp_root(sum, p_));
      }
    }, return internal_error("GlobalLpPool: unexpected dtype {}", dtype_name(dtype_)));
    return Status::ok();
  }

 private:
  DType dtype_;
  int64_t p_;
};

// The p attribute: a float before opset 2 (whole numbers only here), an int since.
Result<int64_t> read_p(const ir::Node& node) {
  ir::AttrReader reader(node);
  const float p_attr = node.opset < 2 ? reader.get_float("p", 2.0f) : 2.0f;
  const int64_t p = node.opset < 2 ? static_cast<int64_t>(p_attr) : reader.get_int("p", 2);
  EMBER_RETURN_IF_ERROR(reader.status());
  if (static_cast<float>(p) != p_attr && node.opset < 2) {
    return not_implemented("p = {} is not supported (whole numbers only)", p_attr);
  }
  if (p < 1) return invalid_argument("p must be >= 1, got {}", p);
  return p;
}

}  // namespace

Result<std::unique_ptr<OpKernel>> create_global_lp_pool(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 1));
  const DType t = init.input_dtypes[0];
  if (!dtype_is_float(t)) return not_implemented("dtype {} is not supported (float types only)", dtype_name(t));
  EMBER_ASSIGN_OR_RETURN(const int64_t p, read_p(init.node));
  return std::unique_ptr<OpKernel>(std::make_unique<GlobalLpPoolKernel>(t, p));
}

Result<std::unique_ptr<OpKernel>> create_lp_pool(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 1));
  const DType t = init.input_dtypes[0];
  if (!dtype_is_float(t)) return not_implemented("dtype {} is not supported (float types only)", dtype_name(t));
  EMBER_ASSIGN_OR_RETURN(WindowAttrs attrs, read_window_attrs(init.node, true));
  EMBER_ASSIGN_OR_RETURN(const int64_t p, read_p(init.node));
  return std::unique_ptr<OpKernel>(std::make_unique<LpPoolKernel>(t, std::move(attrs), p));
}

}  // namespace ember::kernels
