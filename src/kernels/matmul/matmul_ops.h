#pragma once
// Kernel factories of the matmul family, registered in matmul_registry.cpp.
#include "kernels/kernel.h"

namespace ember::kernels {

Result<std::unique_ptr<OpKernel>> create_matmul(const KernelInit& init);
// f16 / bf16 MatMul (matmul_lowp.cpp); create_matmul routes those dtypes here.
Result<std::unique_ptr<OpKernel>> create_matmul_lowp(const KernelInit& init);
Result<std::unique_ptr<OpKernel>> create_gemm(const KernelInit& init);
Result<std::unique_ptr<OpKernel>> create_conv(const KernelInit& init);
Result<std::unique_ptr<OpKernel>> create_max_pool(const KernelInit& init);
Result<std::unique_ptr<OpKernel>> create_average_pool(const KernelInit& init);
Result<std::unique_ptr<OpKernel>> create_global_max_pool(const KernelInit& init);
Result<std::unique_ptr<OpKernel>> create_global_average_pool(const KernelInit& init);

}  // namespace ember::kernels
