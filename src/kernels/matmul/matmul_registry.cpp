#include "kernels/elementwise/fused_elementwise.h"
#include "kernels/matmul/fused_matmul.h"
#include "kernels/matmul/matmul_ops.h"
#include "kernels/registry.h"

namespace ember::kernels {

Result<std::unique_ptr<OpKernel>> create_det(const KernelInit& init);  // det.cpp
Result<std::unique_ptr<OpKernel>> create_einsum(const KernelInit& init);  // einsum.cpp

// One entry per op: each factory reads node.opset for the version-dependent forms.
void register_matmul_ops(OpRegistry& r) {
  r.add(up_to_newest("", "MatMul", 1, create_matmul));
  r.add(up_to_newest("", "Gemm", 1, create_gemm));
  r.add(up_to_newest(kEmberDomain, kFusedMatMulOp, 1, create_fused_matmul));
  r.add(up_to_newest("", "Conv", 1, create_conv));
  r.add(up_to_newest("", "MaxPool", 1, create_max_pool));
  r.add(up_to_newest("", "AveragePool", 1, create_average_pool));
  r.add(up_to_newest("", "GlobalMaxPool", 1, create_global_max_pool));
  r.add(up_to_newest("", "GlobalAveragePool", 1, create_global_average_pool));
  r.add(up_to_newest("", "Det", 11, create_det, kFloatTypes));
  r.add(up_to_newest("", "Einsum", 12, create_einsum));
}

}  // namespace ember::kernels
