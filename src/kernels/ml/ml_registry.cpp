#include <climits>

#include "kernels/registry.h"

namespace ember::kernels {

void register_ml_ops(OpRegistry& r) {}

}  // namespace ember::kernels
