#include <climits>

#include "kernels/quant/quant_ops.h"
#include "kernels/registry.h"

namespace ember::kernels {

void register_quant_ops(OpRegistry& r) {
  r.add({"", "MatMulInteger", 10, INT_MAX, create_matmul_integer});
  r.add({"", "QLinearMatMul", 10, INT_MAX, create_qlinear_matmul});
  r.add({"", "QuantizeLinear", 10, INT_MAX, create_quantize_linear});
  r.add({"", "DequantizeLinear", 10, INT_MAX, create_dequantize_linear});
  r.add({"", "DynamicQuantizeLinear", 11, INT_MAX, create_dynamic_quantize_linear});
  r.add({"com.microsoft", "MatMulNBits", 1, INT_MAX, create_matmul_nbits});
  r.add({"com.microsoft", "GatherBlockQuantized", 1, INT_MAX, create_gather_block_quantized});
}

}  // namespace ember::kernels
