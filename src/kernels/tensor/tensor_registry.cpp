#include "kernels/registry.h"
#include "kernels/tensor/tensor_ops.h"

namespace ember::kernels {

// Each factory reads node.opset for the forms that changed between versions
// (attribute vs input), so one entry spans an op's whole history.
void register_tensor_ops(OpRegistry& r) {
  using namespace tensor_ops;
  // Data movement copies the narrow types' whole bytes (the kernels refuse the
  // packed 4-bit and 2-bit types themselves).
  constexpr DTypeSet kWholeBytes = kStandardTypes | kNarrowTypes;
  r.add(up_to_newest("", "Shape", 1, create_shape, kWholeBytes));
  r.add(up_to_newest("", "Size", 1, create_size, kWholeBytes));
  r.add(up_to_newest("", "Reshape", 1, create_reshape, kWholeBytes));
  r.add(up_to_newest("", "Flatten", 1, create_flatten, kWholeBytes));
  r.add(up_to_newest("", "Squeeze", 1, create_squeeze, kWholeBytes));
  r.add(up_to_newest("", "Unsqueeze", 1, create_unsqueeze, kWholeBytes));
  // Identity passes sequences and optionals (opsets 14 and 16) through as well.
  r.add(up_to_newest("", "Identity", 1, create_identity, kWholeBytes | kContainerTypes));
  r.add(up_to_newest("", "Transpose", 1, create_transpose, kWholeBytes));
  r.add(up_to_newest("", "Concat", 1, create_concat, kWholeBytes));
  r.add(up_to_newest("", "Split", 1, create_split, kWholeBytes));
  r.add(up_to_newest("", "Slice", 1, create_slice, kWholeBytes));
  r.add(up_to_newest("", "Expand", 8, create_expand, kWholeBytes));
  r.add(up_to_newest("", "Tile", 1, create_tile, kWholeBytes));
  r.add(up_to_newest("", "Pad", 1, create_pad));
  r.add(up_to_newest("", "Range", 11, create_range));
  r.add(up_to_newest("", "ConstantOfShape", 9, create_constant_of_shape));
  r.add(up_to_newest("", "EyeLike", 9, create_eye_like));
  r.add(up_to_newest("", "Trilu", 14, create_trilu));
  r.add(up_to_newest("", "DepthToSpace", 1, create_depth_to_space));
  r.add(up_to_newest("", "SpaceToDepth", 1, create_space_to_depth));
  r.add(up_to_newest("", "ReverseSequence", 10, create_reverse_sequence));
}

}  // namespace ember::kernels
