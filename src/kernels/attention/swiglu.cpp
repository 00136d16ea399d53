// ONNX SwiGLU (opset 28): Y = A * Sigmoid(alpha * A) * B over equal shapes (no
// broadcasting). Every step is rounded to the input dtype where the spec's
// reference rounds it (numpy in that dtype: -alpha * a, exp, 1 + e, 1 / d, the
// two products), so float16 and bfloat16 give the reference's bits rather than
// a once-rounded f32 result that can sit an ulp away.
#include <climits>
#include <cmath>

#include "kernels/attention/attention_ops.h"
#include "threading/thread_pool.h"

namespace ember::kernels::attention {
namespace {

// Elements per parallel_for task: exp dominates, ~10 ns per element.
constexpr int64_t kGrain = 4096;

template <typename T> compute_t<T> round_to(compute_t<T> x) { return static_cast<compute_t<T>>(T(x)); }

template <typename T> void swiglu(const T* a, const T* b, T* y, int64_t n, float alpha) {
  using C = compute_t<T>;
  threading::parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const C x = static_cast<C>(a[i]);
      const C e = round_to<T>(std::exp(round_to<T>(static_cast<C>(-alpha) * x)));
      const C gate = round_to<T>(C(1) / round_to<T>(C(1) + e));
      y[i] = T(round_to<T>(x * gate) * static_cast<C>(b[i]));
    }
  });
}

class SwiGluKernel final : public OpKernel {
 public:
  explicit SwiGluKernel(float alpha) : alpha_(alpha) {}

  Status infer(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    if (a.shape() != b.shape()) {
      return invalid_argument("inputs 'A' {} and 'B' {} must have the same shape (SwiGLU does not broadcast)",
                              a.describe(), b.describe());
    }
    ctx.set_output(0, a.dtype(), a.shape());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    Tensor& y = ctx.output(0);
    EMBER_SWITCH_FLOAT(a.dtype(), T, swiglu<T>(a.data_as<T>(), b.data_as<T>(), y.data_as<T>(), a.numel(), alpha_),
                       return not_implemented("SwiGLU on {}", a.describe()));
    return Status::ok();
  }

  int inplace_input() const override { return 0; }

 private:
  float alpha_;
};

}  // namespace

Result<std::unique_ptr<OpKernel>> create_swiglu(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 2));
  ir::AttrReader r(init.node);
  const float alpha = r.get_float("alpha", 1.0f);
  EMBER_RETURN_IF_ERROR(r.status());
  const DType a = input_dtype(init, 0), b = input_dtype(init, 1);
  if (!dtype_is_float(a)) {
    return not_implemented("node '{}': input 'A' is {}; SwiGLU runs float32, float64, float16 and bfloat16",
                           init.node.name, dtype_name(a));
  }
  if (b != a) {
    return invalid_argument("node '{}': input 'B' is {}, it must be the dtype of 'A' ({})", init.node.name,
                            dtype_name(b), dtype_name(a));
  }
  return std::unique_ptr<OpKernel>(std::make_unique<SwiGluKernel>(alpha));
}

}  // namespace ember::kernels::attention
