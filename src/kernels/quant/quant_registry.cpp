#include <climits>

#include "kernels/quant/quant_ops.h"
#include "kernels/registry.h"

namespace ember::kernels {

void register_quant_ops(OpRegistry& r) {
  r.add({"", "MatMulInteger", 10, INT_MAX, create_matmul_integer});
  r.add({"com.microsoft", "MatMulNBits", 1, INT_MAX, create_matmul_nbits});
}

}  // namespace ember::kernels
