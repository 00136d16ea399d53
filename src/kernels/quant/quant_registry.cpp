#include "kernels/quant/quant_ops.h"
#include "kernels/registry.h"

namespace ember::kernels {

void register_quant_ops(OpRegistry& r) {
  r.add(up_to_newest("", "MatMulInteger", 10, create_matmul_integer, {DType::kU8, DType::kI8}));
  r.add(up_to_newest("", "QLinearMatMul", 10, create_qlinear_matmul));
  r.add(up_to_newest("", "QuantizeLinear", 10, create_quantize_linear, kStandardTypes | kNarrowTypes));
  r.add(up_to_newest("", "DequantizeLinear", 10, create_dequantize_linear, kStandardTypes | kNarrowTypes));
  r.add(up_to_newest("", "DynamicQuantizeLinear", 11, create_dynamic_quantize_linear, {DType::kF32}));
  r.add(up_to_newest("com.microsoft", "MatMulNBits", 1, create_matmul_nbits));
  r.add(up_to_newest("com.microsoft", "GatherBlockQuantized", 1, create_gather_block_quantized));
}

}  // namespace ember::kernels
