#pragma once
// attend()'s optimized path (attention_core.h): decode-shaped slices by key
// chunks with online softmax, prompt-shaped slices by row blocks as GEMMs.
#include <cstdint>

#include "kernels/attention/attention_core.h"

namespace ember::kernels::attention {

void attend_fast(const AttentionSpec& spec, int64_t count, threading::FunctionRef<AttentionSlice(int64_t)> slice);

}  // namespace ember::kernels::attention
