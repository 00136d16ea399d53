#pragma once
// Kernel factories of the recurrent family, registered in recurrent_registry.cpp.
#include "kernels/kernel.h"

namespace ember::kernels {

Result<std::unique_ptr<OpKernel>> create_rnn(const KernelInit& init);
Result<std::unique_ptr<OpKernel>> create_gru(const KernelInit& init);
Result<std::unique_ptr<OpKernel>> create_lstm(const KernelInit& init);

}  // namespace ember::kernels
