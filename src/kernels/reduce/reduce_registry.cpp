#include <climits>

#include "kernels/reduce/reduce_ops.h"
#include "kernels/registry.h"

namespace ember::kernels {

// One entry per op covering every opset: the factories read version-dependent
// forms (axes attribute or input, Softmax's 2-D coercion) from node.opset.
void register_reduce_ops(OpRegistry& r) {
  for (std::string_view op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                              "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}) {
    r.add({"", op, 1, INT_MAX, create_reduce});
  }
  for (std::string_view op : {"Softmax", "LogSoftmax", "Hardmax"}) r.add({"", op, 1, INT_MAX, create_softmax});
  r.add({"", "MeanVarianceNormalization", 9, INT_MAX, create_mean_variance_normalization});
  r.add({"", "NegativeLogLikelihoodLoss", 12, INT_MAX, create_loss});
  r.add({"", "SoftmaxCrossEntropyLoss", 12, INT_MAX, create_loss});
}

}  // namespace ember::kernels
