#pragma once
// Kernel factories of the signal family, registered in signal_registry.cpp.
#include "kernels/kernel.h"

namespace ember::kernels {

Result<std::unique_ptr<OpKernel>> create_dft(const KernelInit& init);   // dft.cpp
Result<std::unique_ptr<OpKernel>> create_stft(const KernelInit& init);  // dft.cpp
// HannWindow, HammingWindow, BlackmanWindow (window.cpp).
Result<std::unique_ptr<OpKernel>> create_window(const KernelInit& init);
Result<std::unique_ptr<OpKernel>> create_mel_weight_matrix(const KernelInit& init);  // window.cpp

}  // namespace ember::kernels
