#include "kernels/registry.h"

namespace ember::kernels {

void register_tensor_ops(OpRegistry&) {}

}  // namespace ember::kernels
