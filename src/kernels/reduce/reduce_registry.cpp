#include "kernels/reduce/reduce_ops.h"
#include "kernels/registry.h"

namespace ember::kernels {

// One entry per op covering every opset: the factories read version-dependent
// forms (axes attribute or input, Softmax's 2-D coercion) from node.opset.
void register_reduce_ops(OpRegistry& r) {
  for (std::string_view op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                              "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}) {
    r.add(up_to_newest("", op, 1, create_reduce));
  }
  for (std::string_view op : {"Softmax", "LogSoftmax", "Hardmax"}) r.add(up_to_newest("", op, 1, create_softmax));
  r.add(up_to_newest("", "MeanVarianceNormalization", 9, create_mean_variance_normalization));
  r.add(up_to_newest("", "NegativeLogLikelihoodLoss", 12, create_loss));
  r.add(up_to_newest("", "SoftmaxCrossEntropyLoss", 12, create_loss));
}

}  // namespace ember::kernels
