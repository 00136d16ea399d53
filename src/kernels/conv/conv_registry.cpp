#include <climits>

#include "kernels/conv/conv_ops.h"
#include "kernels/registry.h"

namespace ember::kernels {

// One entry per op: each factory reads node.opset for the version-dependent forms.
void register_conv_ops(OpRegistry& r) {
  r.add({"", "ConvTranspose", 1, INT_MAX, create_conv_transpose});
  r.add({"", "DeformConv", 19, INT_MAX, create_deform_conv});
  r.add({"", "LpPool", 1, INT_MAX, create_lp_pool});
  r.add({"", "GlobalLpPool", 1, INT_MAX, create_global_lp_pool});
  r.add({"", "MaxUnpool", 9, INT_MAX, create_max_unpool});
  r.add({"", "LRN", 1, INT_MAX, create_lrn});
  r.add({"", "ConvInteger", 10, INT_MAX, create_conv_integer});
  r.add({"", "QLinearConv", 10, INT_MAX, create_qlinear_conv});
  r.add({"", "RoiAlign", 10, INT_MAX, create_roi_align});
}

}  // namespace ember::kernels
