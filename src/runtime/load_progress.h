#pragma once
// How far loading has got: the bytes of constant inputs (weights) whose kernels
// have been created, of all of them. Creating kernels prepacks the weights, which
// reads every page of the model file, so this is where a large model's load time goes.
#include <cstdint>
#include <functional>

namespace ember::runtime {

using LoadProgress = std::function<void(int64_t done_bytes, int64_t total_bytes)>;

}  // namespace ember::runtime
