#include <climits>

#include "kernels/image/image_ops.h"
#include "kernels/registry.h"

namespace ember::kernels {

// Each factory reads node.opset for the forms that changed between versions.
void register_image_ops(OpRegistry& r) {
  using namespace image;
  r.add({"", "Resize", 10, INT_MAX, create_resize});
  r.add({"", "Upsample", 7, 9, create_upsample});
  r.add({"", "GridSample", 16, INT_MAX, create_grid_sample});
  r.add({"", "AffineGrid", 20, INT_MAX, create_affine_grid});
  r.add({"", "CenterCropPad", 18, INT_MAX, create_center_crop_pad});
  r.add({"", "Col2Im", 18, INT_MAX, create_col2im});
  r.add({"", "ImageDecoder", 20, INT_MAX, create_image_decoder});
}

}  // namespace ember::kernels
