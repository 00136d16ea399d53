#pragma once
// The generator behind Ember's random ops: MT19937 with doubles built from two
// 32-bit draws (53 random bits), the generator numpy's RandomState uses and the
// one the ONNX reference implementation draws from. A seeded op restarts from
// its seed on every run, as that reference does (RandomState(seed) per call),
// so a given seed reproduces the reference's values; without a seed each run
// draws a fresh seed from std::random_device.
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

 private:
  std::mt19937 engine_;
};

// The optional `seed` attribute (a float for the generator ops, an int for
// Dropout) as the 32-bit MT19937 seed; out-of-range values are refused.
Result<std::optional<uint32_t>> read_seed(const ir::Node& node, bool is_float);

}  // namespace ember::kernels::random_ops
