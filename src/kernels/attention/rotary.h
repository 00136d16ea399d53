#pragma once
// Rotary position embedding ops: com.microsoft RotaryEmbedding (ONNX Runtime's
// contrib op) and ONNX RotaryEmbedding (opset 23). Both rotate the first
// rotary_embedding_dim elements of every head row by the angles of the row's
// position (cos/sin caches hold cos(p * theta_i), sin(p * theta_i) for
// i < rotary_embedding_dim / 2) and copy the rest of the row.
#include <memory>

#include "kernels/kernel.h"

namespace ember::kernels::attention {

Result<std::unique_ptr<OpKernel>> create_rotary_embedding_contrib(const KernelInit& init);
Result<std::unique_ptr<OpKernel>> create_rotary_embedding_onnx(const KernelInit& init);

}  // namespace ember::kernels::attention
