#include "kernels/registry.h"

namespace ember::kernels {

void register_gather_scatter_ops(OpRegistry&) {}

}  // namespace ember::kernels
