#pragma once
// The generator behind Ember's random ops: MT19937 with doubles built from two
// 32-bit draws (53 random bits), the generator numpy's RandomState uses and the
// one the ONNX reference implementation draws from. A seeded op restarts from
// its seed on every run, as that reference does (RandomState(seed) per call),
// so a given seed reproduces the reference's values; without a seed each run
// draws a fresh seed from std::random_device.
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>

#include "base/status.h"
#include "ir/graph.h"

namespace ember::kernels::random_ops {

class RandomSource {
 public:
  explicit RandomSource(uint32_t seed) : engine_(seed) {}
  // Seeded from `seed` when it has a value, else from std::random_device.
  static RandomSource from(std::optional<uint32_t> seed) {
    return RandomSource(seed ? *seed : std::random_device{}());
  }

  // Uniform in [0, 1) with 53 random bits: numpy's random_sample().
  double next_double() {
    const uint32_t a = static_cast<uint32_t>(engine_()) >> 5;
    const uint32_t b = static_cast<uint32_t>(engine_()) >> 6;
    return (a * 67108864.0 + b) / 9007199254740992.0;
  }

  // Standard normal: numpy's legacy gauss() (polar Box-Muller over
  // next_double(), each accepted pair giving two values, the second cached).
  double next_gauss() {
    if (has_gauss_) {
      has_gauss_ = false;
      return gauss_;
    }
    double x1 = 0.0, x2 = 0.0, r2 = 0.0;
    do {
      x1 = 2.0 * next_double() - 1.0;
      x2 = 2.0 * next_double() - 1.0;
      r2 = x1 * x1 + x2 * x2;
    } while (r2 >= 1.0 || r2 == 0.0);
    const double f = std::sqrt(-2.0 * std::log(r2) / r2);
    gauss_ = f * x1;
    has_gauss_ = true;
    return f * x2;
  }

 private:
  std::mt19937 engine_;
  double gauss_ = 0.0;
  bool has_gauss_ = false;
};

// The optional `seed` attribute (a float for the generator ops, an int for
// Dropout) as the 32-bit MT19937 seed; out-of-range values are refused.
Result<std::optional<uint32_t>> read_seed(const ir::Node& node, bool is_float);

}  // namespace ember::kernels::random_ops
