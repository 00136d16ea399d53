#pragma once
// ember PagedAttention: com.microsoft GroupQueryAttention over a paged KV cache
// (vLLM's block tables), several sequences' new tokens flattened into one call,
// the cache updated in place. A serving engine rewrites each GroupQueryAttention
// of a decoder into it. Contract in paged_attention.cpp.
#include <memory>
#include <string_view>

#include "kernels/kernel.h"

namespace ember::kernels::attention {

inline constexpr std::string_view kPagedAttentionOp = "PagedAttention";

Result<std::unique_ptr<OpKernel>> create_paged_attention(const KernelInit& init);

}  // namespace ember::kernels::attention
