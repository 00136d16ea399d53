#include <climits>

#include "kernels/attention/attention_ops.h"
#include "kernels/attention/group_query_attention.h"
#include "kernels/attention/paged_attention.h"
#include "kernels/attention/rotary.h"
#include "kernels/elementwise/fused_elementwise.h"
#include "kernels/registry.h"

namespace ember::kernels {

void register_attention_ops(OpRegistry& r) {
  r.add({"com.microsoft", "GroupQueryAttention", 1, INT_MAX, attention::create_group_query_attention});
  r.add({"com.microsoft", "RotaryEmbedding", 1, INT_MAX, attention::create_rotary_embedding_contrib});
  r.add({"", "RotaryEmbedding", 23, INT_MAX, attention::create_rotary_embedding_onnx});
  r.add({"com.microsoft", "MultiHeadAttention", 1, INT_MAX, attention::create_multi_head_attention});
  r.add({"com.microsoft", "Attention", 1, INT_MAX, attention::create_attention_contrib});
  r.add({"", "Attention", 23, INT_MAX, attention::create_attention_onnx});
  r.add({"", "SwiGLU", 28, INT_MAX, attention::create_swiglu});
  r.add({"", "TensorScatter", 24, INT_MAX, attention::create_tensor_scatter});
  r.add({"", "CausalConvWithState", 27, INT_MAX, attention::create_causal_conv_with_state});
  r.add({"", "LinearAttention", 27, INT_MAX, attention::create_linear_attention});
  r.add({"ai.onnx.preview", "FlexAttention", 1, INT_MAX, attention::create_flex_attention});
  r.add({kEmberDomain, attention::kPagedAttentionOp, 1, INT_MAX, attention::create_paged_attention});
}

}  // namespace ember::kernels
