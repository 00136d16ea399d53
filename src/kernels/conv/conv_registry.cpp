#include "kernels/conv/conv_ops.h"
#include "kernels/registry.h"

namespace ember::kernels {

// One entry per op: each factory reads node.opset for the version-dependent forms.
void register_conv_ops(OpRegistry& r) {
  constexpr DTypeSet kI64{DType::kI64};
  constexpr DTypeSet kInt8{DType::kU8, DType::kI8};
  r.add(up_to_newest("", "ConvTranspose", 1, create_conv_transpose, kFloatTypes));
  r.add(up_to_newest("", "DeformConv", 19, create_deform_conv, DTypeSet{DType::kF32, DType::kF64}));
  r.add(up_to_newest("", "LpPool", 1, create_lp_pool, kFloatTypes));
  r.add(up_to_newest("", "GlobalLpPool", 1, create_global_lp_pool, kFloatTypes));
  r.add(up_to_newest("", "MaxUnpool", 9, create_max_unpool, kFloatTypes | kI64));
  r.add(up_to_newest("", "LRN", 1, create_lrn, kFloatTypes));
  r.add(up_to_newest("", "ConvInteger", 10, create_conv_integer, kInt8));
  r.add(up_to_newest("", "QLinearConv", 10, create_qlinear_conv, kInt8 | DTypeSet{DType::kF32, DType::kI32}));
  r.add(up_to_newest("", "RoiAlign", 10, create_roi_align, kFloatTypes | kI64));
}

}  // namespace ember::kernels
