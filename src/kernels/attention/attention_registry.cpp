#include <climits>

#include "kernels/attention/group_query_attention.h"
#include "kernels/attention/rotary.h"
#include "kernels/registry.h"

namespace ember::kernels {

void register_attention_ops(OpRegistry& r) {
  r.add({"com.microsoft", "GroupQueryAttention", 1, INT_MAX, attention::create_group_query_attention});
  r.add({"com.microsoft", "RotaryEmbedding", 1, INT_MAX, attention::create_rotary_embedding_contrib});
  r.add({"", "RotaryEmbedding", 23, INT_MAX, attention::create_rotary_embedding_onnx});
}

}  // namespace ember::kernels
