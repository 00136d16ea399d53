#pragma once
// Factories of the reduction family, registered in reduce_registry.cpp. Each reads
// the op (ReduceSum, Softmax, ...) from the node's op_type.
#include "kernels/kernel.h"

namespace ember::kernels {

using KernelResult = Result<std::unique_ptr<OpKernel>>;

// reduce.cpp: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1,
// ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare.
KernelResult create_reduce(const KernelInit& init);
// softmax.cpp: Softmax, LogSoftmax, Hardmax.
KernelResult create_softmax(const KernelInit& init);
// mean_variance_normalization.cpp
KernelResult create_mean_variance_normalization(const KernelInit& init);
// loss.cpp: NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss.
KernelResult create_loss(const KernelInit& init);

}  // namespace ember::kernels
