#include "kernels/registry.h"

namespace ember::kernels {

void register_elementwise_ops(OpRegistry&) {}

}  // namespace ember::kernels
