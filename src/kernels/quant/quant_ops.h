#pragma once
// Kernel factories of the quantized-weight family, registered in quant_registry.cpp.
#include "kernels/kernel.h"

namespace ember::kernels {

// MatMulInteger (matmul_integer.cpp).
Result<std::unique_ptr<OpKernel>> create_matmul_integer(const KernelInit& init);
// QLinearMatMul (qlinear_matmul.cpp).
Result<std::unique_ptr<OpKernel>> create_qlinear_matmul(const KernelInit& init);
// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear (quantize_linear.cpp).
Result<std::unique_ptr<OpKernel>> create_quantize_linear(const KernelInit& init);
Result<std::unique_ptr<OpKernel>> create_dequantize_linear(const KernelInit& init);
Result<std::unique_ptr<OpKernel>> create_dynamic_quantize_linear(const KernelInit& init);
// com.microsoft MatMulNBits (matmul_nbits.cpp).
Result<std::unique_ptr<OpKernel>> create_matmul_nbits(const KernelInit& init);

// com.microsoft GatherBlockQuantized (gather_block_quantized.cpp).
Result<std::unique_ptr<OpKernel>> create_gather_block_quantized(const KernelInit& init);

}  // namespace ember::kernels
