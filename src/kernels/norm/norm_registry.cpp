#include "kernels/norm/norm_ops.h"
#include "kernels/registry.h"

namespace ember::kernels {

Status check_float_inputs(const KernelInit& init, size_t required, bool same_dtype) {
  for (size_t i = 0; i < init.input_dtypes.size() || i < required; ++i) {
    const DType t = input_dtype(init, i);
    if (t == DType::kUndefined) {
      if (i < required) return invalid_model("input {} is required", i);
      continue;
    }
    if (!dtype_is_float(t)) return not_implemented("input {} has dtype {}; only float types are supported", i, dtype_name(t));
    if (same_dtype && t != init.input_dtypes[0]) {
      return invalid_argument("input {} is {} but input 0 is {}", i, dtype_name(t), dtype_name(init.input_dtypes[0]));
    }
  }
  return Status::ok();
}

// One entry per op: each factory reads node.opset for the version-dependent forms.
void register_norm_ops(OpRegistry& r) {
  // check_float_inputs reads every input: the family takes float types only.
  // ORT registers its contrib LayerNormalization and SimplifiedLayerNormalization
  // in the ONNX domain from opset 1, so exports older than opset 17 run.
  r.add(up_to_newest("", "LayerNormalization", 1, create_row_normalization, kFloatTypes));
  r.add(up_to_newest("", "SimplifiedLayerNormalization", 1, create_row_normalization, kFloatTypes));
  r.add(up_to_newest("", "RMSNormalization", 23, create_row_normalization, kFloatTypes));
  r.add(up_to_newest("com.microsoft", "SkipLayerNormalization", 1, create_row_normalization, kFloatTypes));
  r.add(up_to_newest("com.microsoft", "SkipSimplifiedLayerNormalization", 1, create_row_normalization,
                     kFloatTypes));
  r.add(up_to_newest("", "BatchNormalization", 1, create_batch_normalization, kFloatTypes));
  r.add(up_to_newest("", "InstanceNormalization", 1, create_instance_normalization, kFloatTypes));
  r.add(up_to_newest("", "GroupNormalization", 18, create_group_normalization, kFloatTypes));
  r.add(up_to_newest("", "LpNormalization", 1, create_lp_normalization, kFloatTypes));
}

}  // namespace ember::kernels
