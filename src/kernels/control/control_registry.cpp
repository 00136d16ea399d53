#include "kernels/registry.h"

namespace ember::kernels {

void register_control_ops(OpRegistry&) {}

}  // namespace ember::kernels
