// The indexing ops (gather/scatter family, selections, OneHot, CumSum, CumProd, Unique)
// and the helpers their factories share.
#include "kernels/registry.h"
#include "kernels/tensor/gather_scatter_common.h"

namespace ember::kernels {

namespace gather_scatter {

Status check_index_dtype(DType t, std::string_view what) {
  if (t == DType::kI32 || t == DType::kI64) return Status::ok();
  return invalid_argument("{} must be int32 or int64, got {}", what, dtype_name(t));
}

Status check_movable_dtype(DType t, std::string_view what) {
  if (t == DType::kString) return not_implemented("{}: string tensors are not supported", what);
  if (dtype_size(t) == 0) return invalid_argument("{} has unsupported dtype {}", what, dtype_name(t));
  return Status::ok();
}

Status check_numeric_dtype(DType t, std::string_view what) {
  if (t == DType::kString) return not_implemented("{}: string tensors are not supported", what);
  if (dtype_is_float(t) || dtype_is_int(t)) return Status::ok();
  return invalid_argument("{} must be numeric, got {}", what, dtype_name(t));
}

Status index_out_of_range(std::string_view op, int64_t index, int64_t axis, int64_t dim) {
  return invalid_argument("{}: index {} is out of range for axis {} of size {}", op, index, axis, dim);
}

}  // namespace gather_scatter

void register_gather_scatter_ops(OpRegistry& r) {
  using namespace gather_scatter;
  // Gather copies the narrow types' whole bytes (refusing the packed 4-bit and 2-bit types itself).
  r.add(up_to_newest("", "Gather", 1, create_gather, kStandardTypes | kNarrowTypes));
  r.add(up_to_newest("", "GatherElements", 11, create_gather_elements));
  r.add(up_to_newest("", "GatherND", 11, create_gather_nd));
  r.add(up_to_newest("", "ScatterND", 11, create_scatter_nd));
  r.add(up_to_newest("", "ScatterElements", 11, create_scatter_elements));
  // Scatter was deprecated in opset 11 in favour of ScatterElements; models that
  // still import it at a later opset get the same semantics.
  r.add(up_to_newest("", "Scatter", 9, create_scatter_elements));
  r.add(up_to_newest("", "OneHot", 9, create_one_hot));
  r.add(up_to_newest("", "NonZero", 9, create_non_zero));
  r.add(up_to_newest("", "Compress", 9, create_compress));
  r.add(up_to_newest("", "CumSum", 11, create_cum_sum));
  r.add(up_to_newest("", "CumProd", 26, create_cum_prod));
  r.add(up_to_newest("", "TopK", 1, create_top_k));
  r.add(up_to_newest("", "ArgMax", 1, create_arg_max));
  r.add(up_to_newest("", "ArgMin", 1, create_arg_min));
  r.add(up_to_newest("", "Unique", 11, create_unique));
  r.add(up_to_newest("", "NonMaxSuppression", 10, create_non_max_suppression));
}

}  // namespace ember::kernels
