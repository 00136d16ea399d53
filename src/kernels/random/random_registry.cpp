// Ops that draw random numbers: RandomUniform(Like), RandomNormal(Like),
// Bernoulli and Dropout (which draws its mask in training mode), and the seed
// reading they share.
#include <cmath>

#include "kernels/random/random_ops.h"
#include "kernels/registry.h"

namespace ember::kernels {

namespace random_ops {

Result<std::optional<uint32_t>> read_seed(const ir::Node& node, bool is_float) {
  ir::AttrReader attrs(node);
  if (!attrs.has("seed")) return std::optional<uint32_t>{};
  const double seed = is_float ? static_cast<double>(attrs.get_float("seed", 0.0f))
                               : static_cast<double>(attrs.get_int("seed", 0));
  EMBER_RETURN_IF_ERROR(attrs.status());
  // numpy's RandomState takes seeds in [0, 2^32); the float seed is truncated as int(seed) does.
  if (!(seed >= 0.0 && seed < 4294967296.0)) return invalid_argument("seed must be in [0, 2^32), got {}", seed);
  return std::optional<uint32_t>(static_cast<uint32_t>(std::trunc(seed)));
}

}  // namespace random_ops

void register_random_ops(OpRegistry& r) {
  using namespace random_ops;
  r.add(up_to_newest("", "RandomUniformLike", 1, create_random_uniform_like));
  r.add(up_to_newest("", "RandomNormalLike", 1, create_random_normal_like));
  r.add(up_to_newest("", "RandomUniform", 1, create_random_uniform));
  r.add(up_to_newest("", "RandomNormal", 1, create_random_normal));
  r.add(up_to_newest("", "Bernoulli", 15, create_bernoulli, kFloatTypes));
  r.add(up_to_newest("", "Dropout", 1, create_dropout, kFloatTypes | kBoolType));
}

}  // namespace ember::kernels
