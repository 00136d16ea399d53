// Scalar f32 unary microkernels (the reference every SIMD level is tested
// against) and unary_table(Isa).
#include <cmath>

#include "kernels/common/isa_tables.h"
#include "kernels/elementwise/unary_ukernels.h"

namespace ember::kernels {
namespace {

// Clamps to [0, 1], letting NaN through.
float clamp01(float v) { return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v); }

// Split at 0 so neither branch overflows exp().
float sigmoid(float x) { return x >= 0.0f ? 1.0f / (1.0f + std::exp(-x)) : std::exp(x) / (1.0f + std::exp(x)); }

// log(1 + e^x) without overflow for large x.
float softplus(float x) { return x > 0.0f ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

template <class F>
void apply(const float* x, float* y, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
}

#define EMBER_SCALAR_UNARY(name, expr)                                       \
  void name(const float* x, float* y, int64_t n, const UnaryParams& p) {      \
    apply(x, y, n, [&p](float v) { static_cast<void>(p); return expr; });     \
  }

EMBER_SCALAR_UNARY(relu_scalar, v < 0.0f ? 0.0f : v)
EMBER_SCALAR_UNARY(leaky_relu_scalar, v < 0.0f ? p.alpha * v : v)
EMBER_SCALAR_UNARY(elu_scalar, v < 0.0f ? p.alpha * std::expm1(v) : v)
EMBER_SCALAR_UNARY(selu_scalar, v > 0.0f ? p.gamma * v : p.gamma * p.alpha * std::expm1(v))
EMBER_SCALAR_UNARY(celu_scalar, v > 0.0f ? v : p.alpha * std::expm1(v / p.alpha))
EMBER_SCALAR_UNARY(hard_sigmoid_scalar, clamp01(p.alpha * v + p.beta))
EMBER_SCALAR_UNARY(hard_swish_scalar, v * clamp01(v / 6.0f + 0.5f))
EMBER_SCALAR_UNARY(thresholded_relu_scalar, v > p.alpha ? v : 0.0f)
EMBER_SCALAR_UNARY(sigmoid_scalar, sigmoid(v))
EMBER_SCALAR_UNARY(tanh_scalar, std::tanh(v))
EMBER_SCALAR_UNARY(erf_scalar, std::erf(v))
// For x < 0, 1 + erf(x/sqrt 2) = erfc(-x/sqrt 2), which keeps the relative accuracy
// that the sum loses to cancellation.
EMBER_SCALAR_UNARY(gelu_scalar, v < 0.0f ? 0.5f * v * std::erfc(-v * 0.70710678118654752f)
                                         : 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f)))
// x/2 (1 + tanh u) = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3): no cancellation for x < 0.
EMBER_SCALAR_UNARY(gelu_tanh_scalar, v * sigmoid(1.5957691216057308f * (v + 0.044715f * v * v * v)))
EMBER_SCALAR_UNARY(quick_gelu_scalar, v * sigmoid(p.alpha * v))
EMBER_SCALAR_UNARY(silu_scalar, v * sigmoid(v))
EMBER_SCALAR_UNARY(mish_scalar, v * std::tanh(softplus(v)))
EMBER_SCALAR_UNARY(softplus_scalar, softplus(v))
EMBER_SCALAR_UNARY(softsign_scalar, v / (1.0f + std::fabs(v)))
EMBER_SCALAR_UNARY(exp_scalar, std::exp(v))
EMBER_SCALAR_UNARY(log_scalar, std::log(v))
EMBER_SCALAR_UNARY(sqrt_scalar, std::sqrt(v))
EMBER_SCALAR_UNARY(reciprocal_scalar, 1.0f / v)
EMBER_SCALAR_UNARY(neg_scalar, -v)
EMBER_SCALAR_UNARY(abs_scalar, std::fabs(v))
// Lower bound first, so low > high yields high everywhere, as ONNX Clip says; NaN passes through.
EMBER_SCALAR_UNARY(clip_scalar, (v < p.alpha ? p.alpha : v) > p.beta ? p.beta : (v < p.alpha ? p.alpha : v))
EMBER_SCALAR_UNARY(floor_scalar, std::floor(v))
EMBER_SCALAR_UNARY(ceil_scalar, std::ceil(v))
// nearbyint under the default rounding mode rounds halves to even, as ONNX Round requires.
EMBER_SCALAR_UNARY(round_scalar, std::nearbyint(v))
EMBER_SCALAR_UNARY(sin_scalar, std::sin(v))
EMBER_SCALAR_UNARY(cos_scalar, std::cos(v))
#undef EMBER_SCALAR_UNARY

void fill_unary_scalar(UnaryTable& t) {
  auto set = [&t](UnaryKind k, UnaryF32Fn f) { t.f32[static_cast<int>(k)] = f; };
  set(UnaryKind::kRelu, relu_scalar);
  set(UnaryKind::kLeakyRelu, leaky_relu_scalar);
  set(UnaryKind::kElu, elu_scalar);
  set(UnaryKind::kSelu, selu_scalar);
  set(UnaryKind::kCelu, celu_scalar);
  set(UnaryKind::kHardSigmoid, hard_sigmoid_scalar);
  set(UnaryKind::kHardSwish, hard_swish_scalar);
  set(UnaryKind::kThresholdedRelu, thresholded_relu_scalar);
  set(UnaryKind::kSigmoid, sigmoid_scalar);
  set(UnaryKind::kTanh, tanh_scalar);
  set(UnaryKind::kErf, erf_scalar);
  set(UnaryKind::kGelu, gelu_scalar);
  set(UnaryKind::kGeluTanh, gelu_tanh_scalar);
  set(UnaryKind::kQuickGelu, quick_gelu_scalar);
  set(UnaryKind::kSilu, silu_scalar);
  set(UnaryKind::kMish, mish_scalar);
  set(UnaryKind::kSoftplus, softplus_scalar);
  set(UnaryKind::kSoftsign, softsign_scalar);
  set(UnaryKind::kExp, exp_scalar);
  set(UnaryKind::kLog, log_scalar);
  set(UnaryKind::kSqrt, sqrt_scalar);
  set(UnaryKind::kReciprocal, reciprocal_scalar);
  set(UnaryKind::kNeg, neg_scalar);
  set(UnaryKind::kAbs, abs_scalar);
  set(UnaryKind::kClip, clip_scalar);
  set(UnaryKind::kFloor, floor_scalar);
  set(UnaryKind::kCeil, ceil_scalar);
  set(UnaryKind::kRound, round_scalar);
  set(UnaryKind::kSin, sin_scalar);
  set(UnaryKind::kCos, cos_scalar);
}

}  // namespace

const UnaryTable& unary_table(Isa isa) {
  static const auto tables = build_isa_tables<UnaryTable>(fill_unary_scalar, fill_unary_avx2, fill_unary_avx512);
  return select_table(tables, isa);
}

}  // namespace ember::kernels
