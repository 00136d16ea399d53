// Every UnaryKind of kernels/elementwise/unary_ukernels.h, out of place.
#include <iterator>
#include <memory>

#include "kernels/elementwise/unary_ukernels.h"
#include "micro_util.h"

namespace ember::bench {
namespace {

using kernels::UnaryKind;
using kernels::UnaryParams;

// f32 in, f32 out.
constexpr int64_t kUnaryBytes = 8;

struct UnaryCase {
  UnaryKind kind;
  const char* name;
  UnaryParams params;  // the ONNX defaults where the op has attributes
  float lo, hi;        // input range: [-4, 4) unless the op needs x > 0
};
constexpr UnaryCase kUnaryCases[] = {
    {UnaryKind::kRelu, "relu", {}, -4, 4},
    {UnaryKind::kLeakyRelu, "leaky_relu", {0.01f}, -4, 4},
    {UnaryKind::kElu, "elu", {1.0f}, -4, 4},
    {UnaryKind::kSelu, "selu", {1.67326319f, 0.0f, 1.05070102f}, -4, 4},
    {UnaryKind::kCelu, "celu", {1.0f}, -4, 4},
    {UnaryKind::kHardSigmoid, "hard_sigmoid", {0.2f, 0.5f}, -4, 4},
    {UnaryKind::kHardSwish, "hard_swish", {}, -4, 4},
    {UnaryKind::kThresholdedRelu, "thresholded_relu", {1.0f}, -4, 4},
    {UnaryKind::kSigmoid, "sigmoid", {}, -4, 4},
    {UnaryKind::kTanh, "tanh", {}, -4, 4},
    {UnaryKind::kErf, "erf", {}, -4, 4},
    {UnaryKind::kGelu, "gelu", {}, -4, 4},
    {UnaryKind::kGeluTanh, "gelu_tanh", {}, -4, 4},
    {UnaryKind::kQuickGelu, "quick_gelu", {1.702f}, -4, 4},
    {UnaryKind::kSilu, "silu", {}, -4, 4},
    {UnaryKind::kMish, "mish", {}, -4, 4},
    {UnaryKind::kSoftplus, "softplus", {}, -4, 4},
    {UnaryKind::kSoftsign, "softsign", {}, -4, 4},
    {UnaryKind::kExp, "exp", {}, -4, 4},
    {UnaryKind::kLog, "log", {}, 0.01f, 4},
    {UnaryKind::kSqrt, "sqrt", {}, 0.01f, 4},
    {UnaryKind::kReciprocal, "reciprocal", {}, 0.01f, 4},
    {UnaryKind::kNeg, "neg", {}, -4, 4},
    {UnaryKind::kAbs, "abs", {}, -4, 4},
    {UnaryKind::kClip, "clip", {-1.0f, 1.0f}, -4, 4},
    {UnaryKind::kFloor, "floor", {}, -4, 4},
    {UnaryKind::kCeil, "ceil", {}, -4, 4},
    {UnaryKind::kRound, "round", {}, -4, 4},
    {UnaryKind::kSin, "sin", {}, -4, 4},
    {UnaryKind::kCos, "cos", {}, -4, 4},
};
static_assert(std::size(kUnaryCases) == static_cast<size_t>(UnaryKind::kCount), "a UnaryKind has no benchmark");

MicroSetup unary_setup(Isa isa, const UnaryCase& c, int64_t n) {
  return [isa, c, n] {
    const kernels::UnaryF32Fn fn = kernels::unary_table(isa).get(c.kind);
    auto x = std::make_shared<MicroBuffer<float>>(n, c.lo, c.hi);
    auto y = std::make_shared<MicroBuffer<float>>(n, 0.0f, 0.0f);
    return std::function<void()>([=, p = c.params] { fn(x->data(), y->data(), n, p); });
  };
}

}  // namespace

void register_unary_benchmarks() {
  for (Isa isa : available_isas()) {
    for (const UnaryCase& c : kUnaryCases) {
      for (int64_t n : kMicroSizes) register_micro("unary", c.name, isa, n, kUnaryBytes, unary_setup(isa, c, n));
    }
  }
}

}  // namespace ember::bench
