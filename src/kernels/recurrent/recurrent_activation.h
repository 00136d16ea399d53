#pragma once
// The activation functions RNN, GRU and LSTM accept in their `activations`
// attribute, with ONNX's (and ONNX Runtime's) default alpha and beta.
#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"

namespace ember::kernels {

enum class RecurrentActivationKind {
  kRelu, kTanh, kSigmoid, kAffine, kLeakyRelu, kThresholdedRelu, kScaledTanh, kHardSigmoid, kElu, kSoftsign, kSoftplus,
};

struct RecurrentActivation {
  RecurrentActivationKind kind = RecurrentActivationKind::kTanh;
  float alpha = 0.0f;
  float beta = 0.0f;

  template <typename T>
  T operator()(T x) const {
    const T a = static_cast<T>(alpha), b = static_cast<T>(beta);
    switch (kind) {
      case RecurrentActivationKind::kRelu: return x > T(0) ? x : (x == x ? T(0) : x);
      case RecurrentActivationKind::kTanh: return std::tanh(x);
      case RecurrentActivationKind::kSigmoid: return T(1) / (T(1) + std::exp(-x));
      case RecurrentActivationKind::kAffine: return a * x + b;
      case RecurrentActivationKind::kLeakyRelu: return x >= T(0) ? x : a * x;
      case RecurrentActivationKind::kThresholdedRelu: return x > a ? x : (x == x ? T(0) : x);
      case RecurrentActivationKind::kScaledTanh: return a * std::tanh(b * x);
      case RecurrentActivationKind::kHardSigmoid: return x != x ? x : std::fmin(std::fmax(a * x + b, T(0)), T(1));
      case RecurrentActivationKind::kElu: return x >= T(0) ? x : a * (std::exp(x) - T(1));
      case RecurrentActivationKind::kSoftsign: return x / (T(1) + std::fabs(x));
      case RecurrentActivationKind::kSoftplus: return x > T(20) ? x : std::log1p(std::exp(x));
    }
    return x;
  }

  // y[i] = f(x[i]) for i < n (x == y allowed). f32 Sigmoid and Tanh run the
  // vectorized unary microkernels (kernels/elementwise/unary_ukernels.h); other
  // functions and f64 go element by element.
  void apply(const float* x, float* y, int64_t n) const;
  void apply(const double* x, double* y, int64_t n) const;
};

// Reads `activations`, `activation_alpha` and `activation_beta`: `per_direction`
// functions for each of `num_directions` directions (the defaults when the
// attribute is absent; one direction's list is reused for both). Alphas and
// betas are consumed in order by the functions that take them, as in ONNX
// Runtime; a missing one takes the function's default.
Result<std::vector<RecurrentActivation>> read_recurrent_activations(const ir::Node& node,
                                                                    std::vector<std::string_view> defaults,
                                                                    size_t num_directions);

}  // namespace ember::kernels
