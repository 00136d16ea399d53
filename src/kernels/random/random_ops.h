#pragma once
// Factories of the random family (kernels/random/), listed in random_registry.cpp.
#include <memory>

#include "kernels/kernel.h"
#include "kernels/random/random_source.h"

namespace ember::kernels::random_ops {

using KernelResult = Result<std::unique_ptr<OpKernel>>;

KernelResult create_random_uniform_like(const KernelInit& init);  // generators.cpp
KernelResult create_random_normal_like(const KernelInit& init);   // generators.cpp
KernelResult create_random_uniform(const KernelInit& init);       // generators.cpp
KernelResult create_random_normal(const KernelInit& init);        // generators.cpp
KernelResult create_bernoulli(const KernelInit& init);            // generators.cpp
KernelResult create_dropout(const KernelInit& init);              // dropout.cpp

}  // namespace ember::kernels::random_ops
