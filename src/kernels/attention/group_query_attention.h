#pragma once
// com.microsoft GroupQueryAttention (ONNX Runtime's contrib op): the fused
// attention of onnxruntime-genai decoder exports, with its KV cache.
#include <memory>

#include "kernels/kernel.h"

namespace ember::kernels::attention {

Result<std::unique_ptr<OpKernel>> create_group_query_attention(const KernelInit& init);

}  // namespace ember::kernels::attention
