#include "kernels/registry.h"

namespace ember::kernels {

void register_image_ops(OpRegistry& r) { (void)r; }

}  // namespace ember::kernels
