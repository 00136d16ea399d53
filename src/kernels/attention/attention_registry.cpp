#include "kernels/attention/attention_ops.h"
#include "kernels/attention/group_query_attention.h"
#include "kernels/attention/paged_attention.h"
#include "kernels/attention/rotary.h"
#include "kernels/elementwise/fused_elementwise.h"
#include "kernels/registry.h"

namespace ember::kernels {

void register_attention_ops(OpRegistry& r) {
  r.add(up_to_newest("com.microsoft", "GroupQueryAttention", 1, attention::create_group_query_attention));
  r.add(up_to_newest("com.microsoft", "RotaryEmbedding", 1, attention::create_rotary_embedding_contrib));
  r.add(up_to_newest("", "RotaryEmbedding", 23, attention::create_rotary_embedding_onnx));
  r.add(up_to_newest("com.microsoft", "MultiHeadAttention", 1, attention::create_multi_head_attention));
  r.add(up_to_newest("com.microsoft", "Attention", 1, attention::create_attention_contrib));
  r.add(up_to_newest("", "Attention", 23, attention::create_attention_onnx));
  r.add(up_to_newest("", "SwiGLU", 28, attention::create_swiglu));
  r.add(up_to_newest("", "TensorScatter", 24, attention::create_tensor_scatter));
  r.add(up_to_newest("", "CausalConvWithState", 27, attention::create_causal_conv_with_state));
  r.add(up_to_newest("", "LinearAttention", 27, attention::create_linear_attention));
  r.add(up_to_newest("ai.onnx.preview", "FlexAttention", 1, attention::create_flex_attention));
  r.add(up_to_newest(kEmberDomain, attention::kPagedAttentionOp, 1, attention::create_paged_attention));
}

}  // namespace ember::kernels
