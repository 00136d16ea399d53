#pragma once
// Kernel factories of the quantized-weight family, registered in quant_registry.cpp.
#include "kernels/kernel.h"

namespace ember::kernels {

// MatMulInteger (matmul_integer.cpp).
Result<std::unique_ptr<OpKernel>> create_matmul_integer(const KernelInit& init);
// com.microsoft MatMulNBits (matmul_nbits.cpp).
Result<std::unique_ptr<OpKernel>> create_matmul_nbits(const KernelInit& init);
// Bytes of a MatMulNBits kernel's repacked weights: 0 when it runs the reference
// path (B not constant, 8-bit codes or f16 A), -1 when `kernel` is another op.
int64_t matmul_nbits_packed_bytes(const OpKernel& kernel);

}  // namespace ember::kernels
