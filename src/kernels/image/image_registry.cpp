#include "kernels/image/image_ops.h"
#include "kernels/registry.h"

namespace ember::kernels {

// Each factory reads node.opset for the forms that changed between versions.
void register_image_ops(OpRegistry& r) {
  using namespace image;
  r.add(up_to_newest("", "Resize", 10, create_resize));
  r.add({"", "Upsample", 7, 9, create_upsample});
  r.add(up_to_newest("", "GridSample", 16, create_grid_sample, kFloatTypes));
  r.add(up_to_newest("", "AffineGrid", 20, create_affine_grid, kFloatTypes | DTypeSet{DType::kI64}));
  r.add(up_to_newest("", "CenterCropPad", 18, create_center_crop_pad));
  r.add(up_to_newest("", "Col2Im", 18, create_col2im));
  r.add(up_to_newest("", "ImageDecoder", 20, create_image_decoder, {DType::kU8}));
}

}  // namespace ember::kernels
