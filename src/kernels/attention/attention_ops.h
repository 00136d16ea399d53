#pragma once
// Attention ops over the shared core (attention_core.h): com.microsoft
// MultiHeadAttention and Attention, and ONNX Attention (opset 23), with ONNX
// Runtime's CPU kernels' semantics (masks, caches, what they reject); and the
// newer ONNX ops around attention blocks, reference-quality: SwiGLU,
// TensorScatter, CausalConvWithState, LinearAttention, and ai.onnx.preview
// FlexAttention.
#include <memory>

#include "kernels/kernel.h"

namespace ember::kernels::attention {

Result<std::unique_ptr<OpKernel>> create_multi_head_attention(const KernelInit& init);
Result<std::unique_ptr<OpKernel>> create_attention_contrib(const KernelInit& init);
Result<std::unique_ptr<OpKernel>> create_attention_onnx(const KernelInit& init);
Result<std::unique_ptr<OpKernel>> create_swiglu(const KernelInit& init);
Result<std::unique_ptr<OpKernel>> create_tensor_scatter(const KernelInit& init);
Result<std::unique_ptr<OpKernel>> create_causal_conv_with_state(const KernelInit& init);
Result<std::unique_ptr<OpKernel>> create_linear_attention(const KernelInit& init);
Result<std::unique_ptr<OpKernel>> create_flex_attention(const KernelInit& init);

}  // namespace ember::kernels::attention
