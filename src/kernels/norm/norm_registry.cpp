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
  // ORT registers its contrib LayerNormalization and SimplifiedLayerNormalization
  // in the ONNX domain from opset 1, so exports older than opset 17 run.
  r.add({"", "LayerNormalization", 1, INT_MAX, create_row_normalization});
  r.add({"", "SimplifiedLayerNormalization", 1, INT_MAX, create_row_normalization});
  r.add({"", "RMSNormalization", 23, INT_MAX, create_row_normalization});
  r.add({"com.microsoft", "SkipLayerNormalization", 1, INT_MAX, create_row_normalization});
  r.add({"com.microsoft", "SkipSimplifiedLayerNormalization", 1, INT_MAX, create_row_normalization});
  r.add({"", "BatchNormalization", 1, INT_MAX, create_batch_normalization});
  r.add({"", "InstanceNormalization", 1, INT_MAX, create_instance_normalization});
  r.add({"", "GroupNormalization", 18, INT_MAX, create_group_normalization});
  r.add({"", "LpNormalization", 1, INT_MAX, create_lp_normalization});
}

}  // namespace ember::kernels
