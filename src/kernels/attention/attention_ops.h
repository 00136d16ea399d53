#pragma once
// Attention ops over the shared core (attention_core.h): com.microsoft
// MultiHeadAttention and Attention, and ONNX Attention (opset 23), with ONNX
// Runtime's CPU kernels' semantics (masks, caches, what they reject).
#include <memory>

#include "kernels/kernel.h"

namespace ember::kernels::attention {

Result<std::unique_ptr<OpKernel>> create_multi_head_attention(const KernelInit& init);
Result<std::unique_ptr<OpKernel>> create_attention_contrib(const KernelInit& init);
Result<std::unique_ptr<OpKernel>> create_attention_onnx(const KernelInit& init);

}  // namespace ember::kernels::attention
