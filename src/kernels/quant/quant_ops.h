#pragma once
// Kernel factories of the quantized-weight family, registered in quant_registry.cpp.
#include "kernels/kernel.h"

namespace ember::kernels {

// com.microsoft MatMulNBits (matmul_nbits.cpp).
Result<std::unique_ptr<OpKernel>> create_matmul_nbits(const KernelInit& init);

}  // namespace ember::kernels
