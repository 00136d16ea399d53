#include "kernels/elementwise/fused_elementwise.h"
#include "kernels/matmul/fused_matmul.h"
#include "kernels/matmul/matmul_ops.h"
#include "kernels/registry.h"

namespace ember::kernels {

Result<std::unique_ptr<OpKernel>> create_det(const KernelInit& init);  // det.cpp
Result<std::unique_ptr<OpKernel>> create_einsum(const KernelInit& init);  // einsum.cpp

// One entry per op: each factory reads node.opset for the version-dependent forms.
void register_matmul_ops(OpRegistry& r) {
  r.add({"", "MatMul", 1, INT_MAX, create_matmul});
  r.add({"", "Gemm", 1, INT_MAX, create_gemm});
  r.add({kEmberDomain, kFusedMatMulOp, 1, INT_MAX, create_fused_matmul});
  r.add({"", "Conv", 1, INT_MAX, create_conv});
  r.add({"", "MaxPool", 1, INT_MAX, create_max_pool});
  r.add({"", "AveragePool", 1, INT_MAX, create_average_pool});
  r.add({"", "GlobalMaxPool", 1, INT_MAX, create_global_max_pool});
  r.add({"", "GlobalAveragePool", 1, INT_MAX, create_global_average_pool});
  r.add({"", "Det", 11, INT_MAX, create_det});
  r.add({"", "Einsum", 12, INT_MAX, create_einsum});
}

}  // namespace ember::kernels
