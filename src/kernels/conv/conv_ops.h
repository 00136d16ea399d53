#pragma once
// Kernel factories of the convolution family, registered in conv_registry.cpp.
#include "kernels/kernel.h"

namespace ember::kernels {

Result<std::unique_ptr<OpKernel>> create_conv_transpose(const KernelInit& init);
Result<std::unique_ptr<OpKernel>> create_deform_conv(const KernelInit& init);
Result<std::unique_ptr<OpKernel>> create_lp_pool(const KernelInit& init);
Result<std::unique_ptr<OpKernel>> create_global_lp_pool(const KernelInit& init);
Result<std::unique_ptr<OpKernel>> create_max_unpool(const KernelInit& init);
Result<std::unique_ptr<OpKernel>> create_lrn(const KernelInit& init);
// ConvInteger and QLinearConv (conv_integer.cpp).
Result<std::unique_ptr<OpKernel>> create_conv_integer(const KernelInit& init);
Result<std::unique_ptr<OpKernel>> create_qlinear_conv(const KernelInit& init);
Result<std::unique_ptr<OpKernel>> create_roi_align(const KernelInit& init);

}  // namespace ember::kernels
