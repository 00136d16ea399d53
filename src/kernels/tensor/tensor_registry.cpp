#include <climits>

#include "kernels/registry.h"
#include "kernels/tensor/tensor_ops.h"

namespace ember::kernels {

// Each factory reads node.opset for the forms that changed between versions
// (attribute vs input), so one entry spans an op's whole history.
void register_tensor_ops(OpRegistry& r) {
  using namespace tensor_ops;
  r.add({"", "Shape", 1, INT_MAX, create_shape});
  r.add({"", "Size", 1, INT_MAX, create_size});
  r.add({"", "Reshape", 1, INT_MAX, create_reshape});
  r.add({"", "Flatten", 1, INT_MAX, create_flatten});
  r.add({"", "Squeeze", 1, INT_MAX, create_squeeze});
  r.add({"", "Unsqueeze", 1, INT_MAX, create_unsqueeze});
  r.add({"", "Identity", 1, INT_MAX, create_identity});
  r.add({"", "Transpose", 1, INT_MAX, create_transpose});
  r.add({"", "Concat", 1, INT_MAX, create_concat});
  r.add({"", "Split", 1, INT_MAX, create_split});
  r.add({"", "Slice", 1, INT_MAX, create_slice});
  r.add({"", "Expand", 8, INT_MAX, create_expand});
  r.add({"", "Tile", 1, INT_MAX, create_tile});
  r.add({"", "Pad", 1, INT_MAX, create_pad});
  r.add({"", "Range", 11, INT_MAX, create_range});
  r.add({"", "ConstantOfShape", 9, INT_MAX, create_constant_of_shape});
  r.add({"", "EyeLike", 9, INT_MAX, create_eye_like});
  r.add({"", "Trilu", 14, INT_MAX, create_trilu});
  r.add({"", "DepthToSpace", 1, INT_MAX, create_depth_to_space});
  r.add({"", "SpaceToDepth", 1, INT_MAX, create_space_to_depth});
  r.add({"", "ReverseSequence", 10, INT_MAX, create_reverse_sequence});
}

}  // namespace ember::kernels
