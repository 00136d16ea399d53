// ONNX CausalConvWithState (opset 27): a depthwise causal conv1d over
// [B, C, L] with weight [C, 1, k], left-padded by past_state [B, C, k - 1]
// (zeros when omitted); present_state is the last k - 1 columns of that padded
// input. activation "silu"/"swish" applies x * sigmoid(x) to the conv output,
// which is rounded to the input dtype first (as the spec's reference does).
// Sums in f32 (f64 is not an allowed dtype).
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/attention/attention_ops.h"
#include "threading/thread_pool.h"

namespace ember::kernels::attention {
namespace {

enum Input : size_t { kX, kWeight, kBias, kPastState };
enum Output : size_t { kY, kPresentState };

template <typename T> float round_to(float x) { return static_cast<float>(T(x)); }

struct ConvGeometry {
  int64_t batch = 0, channels = 0, length = 0, kernel = 0;
};

template <typename T>
void causal_conv(const ConvGeometry& g, const T* x, const T* w, const T* bias, const T* past, bool silu, T* y,
                 T* present) {
  const int64_t pad = g.kernel - 1, padded_len = g.length + pad;
  threading::parallel_for(g.batch * g.channels, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> padded(static_cast<size_t>(padded_len));
    for (int64_t i = begin; i < end; ++i) {
      const int64_t c = i % g.channels;
      for (int64_t t = 0; t < pad; ++t) padded[static_cast<size_t>(t)] = past ? static_cast<float>(past[i * pad + t]) : 0.0f;
      for (int64_t t = 0; t < g.length; ++t) padded[static_cast<size_t>(pad + t)] = static_cast<float>(x[i * g.length + t]);
      const T* wc = w + c * g.kernel;
      const float b = bias ? static_cast<float>(bias[c]) : 0.0f;
      for (int64_t t = 0; t < g.length; ++t) {
        float acc = 0.0f;
        for (int64_t j = 0; j < g.kernel; ++j) acc += padded[static_cast<size_t>(t + j)] * static_cast<float>(wc[j]);
        float v = round_to<T>(acc + b);
        if (silu) v = v / (1.0f + std::exp(-v));
        y[i * g.length + t] = T(v);
      }
      for (int64_t t = 0; t < pad; ++t) present[i * pad + t] = T(padded[static_cast<size_t>(g.length + t)]);
    }
  });
}

class CausalConvWithStateKernel final : public OpKernel {
 public:
  explicit CausalConvWithStateKernel(bool silu) : silu_(silu) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(const ConvGeometry g, geometry(ctx));
    const DType t = ctx.input(kX).dtype();
    ctx.set_output(kY, t, {g.batch, g.channels, g.length});
    ctx.set_output(kPresentState, t, {g.batch, g.channels, g.kernel - 1});
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(const ConvGeometry g, geometry(ctx));
    const DType dtype = ctx.input(kX).dtype();
    // present_state is computed even when the node omits it: the conv reads the same padded rows.
    Tensor scratch;
    Tensor* present = ctx.has_output(kPresentState) ? &ctx.output(kPresentState) : nullptr;
    if (!present) {
      scratch = Tensor::allocate(dtype, {g.batch, g.channels, g.kernel - 1});
      present = &scratch;
    }
    auto arg = [&](size_t i) { return ctx.has_input(i) ? ctx.input(i).data() : nullptr; };
    switch (dtype) {
      EMBER_DTYPE_CASE(kF32, float, T,
                       causal_conv<T>(g, ctx.input(kX).data_as<T>(), ctx.input(kWeight).data_as<T>(),
                                      static_cast<const T*>(arg(kBias)), static_cast<const T*>(arg(kPastState)),
                                      silu_, ctx.output(kY).data_as<T>(), present->data_as<T>()))
      EMBER_DTYPE_CASE(kF16, Float16, T,
                       causal_conv<T>(g, ctx.input(kX).data_as<T>(), ctx.input(kWeight).data_as<T>(),
                                      static_cast<const T*>(arg(kBias)), static_cast<const T*>(arg(kPastState)),
                                      silu_, ctx.output(kY).data_as<T>(), present->data_as<T>()))
      EMBER_DTYPE_CASE(kBF16, BFloat16, T,
                       causal_conv<T>(g, ctx.input(kX).data_as<T>(), ctx.input(kWeight).data_as<T>(),
                                      static_cast<const T*>(arg(kBias)), static_cast<const T*>(arg(kPastState)),
                                      silu_, ctx.output(kY).data_as<T>(), present->data_as<T>()))
      default:
        return not_implemented("CausalConvWithState on {}", ctx.input(kX).describe());
    }
    return Status::ok();
  }

 private:
  static Result<ConvGeometry> geometry(const KernelContext& ctx) {
    const Tensor& x = ctx.input(kX);
    const Tensor& w = ctx.input(kWeight);
    if (x.rank() != 3) return invalid_argument("input 'input' {} must be [batch, channels, length]", x.describe());
    ConvGeometry g{x.dim(0), x.dim(1), x.dim(2), w.rank() == 3 ? w.dim(2) : 0};
    if (w.rank() != 3 || w.dim(0) != g.channels || w.dim(1) != 1 || g.kernel < 1) {
      return invalid_argument("input 'weight' {} must be [channels={}, 1, kernel_size >= 1]", w.describe(),
                              g.channels);
    }
    if (ctx.has_input(kBias)) {
      const Tensor& b = ctx.input(kBias);
      if (b.rank() != 1 || b.dim(0) != g.channels) {
        return invalid_argument("input 'bias' {} must be [channels={}]", b.describe(), g.channels);
      }
    }
    if (ctx.has_input(kPastState)) {
      const Tensor& p = ctx.input(kPastState);
      if (p.rank() != 3 || p.dim(0) != g.batch || p.dim(1) != g.channels || p.dim(2) != g.kernel - 1) {
        return invalid_argument("input 'past_state' {} must be [batch={}, channels={}, kernel_size - 1={}]",
                                p.describe(), g.batch, g.channels, g.kernel - 1);
      }
    }
    return g;
  }

  bool silu_;
};

}  // namespace

Result<std::unique_ptr<OpKernel>> create_causal_conv_with_state(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 2));
  ir::AttrReader r(init.node);
  const std::string activation = r.get_string("activation", "none");
  EMBER_RETURN_IF_ERROR(r.status());
  if (activation != "none" && activation != "silu" && activation != "swish") {
    return invalid_argument("node '{}': activation='{}' must be 'none', 'silu' or 'swish'", init.node.name,
                            activation);
  }
  const DType t = input_dtype(init, kX);
  if (t != DType::kF32 && t != DType::kF16 && t != DType::kBF16) {
    return invalid_argument("node '{}': input 'input' is {}; CausalConvWithState takes float32, float16 or bfloat16",
                            init.node.name, dtype_name(t));
  }
  for (auto [i, name] : {std::pair<size_t, const char*>{kWeight, "weight"}, {kBias, "bias"}, {kPastState, "past_state"}}) {
    const DType d = input_dtype(init, i);
    if (d != DType::kUndefined && d != t) {
      return invalid_argument("node '{}': input '{}' is {}, it must be {} like 'input'", init.node.name, name,
                              dtype_name(d), dtype_name(t));
    }
  }
  return std::unique_ptr<OpKernel>(std::make_unique<CausalConvWithStateKernel>(activation != "none"));
}

}  // namespace ember::kernels::attention
