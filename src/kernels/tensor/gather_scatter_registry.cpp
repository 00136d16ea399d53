// The indexing ops (gather/scatter family, selections, OneHot, CumSum, CumProd, Unique)
// and the helpers their factories share.
#include <climits>

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
  r.add({"", "Gather", 1, INT_MAX, create_gather});
  r.add({"", "GatherElements", 11, INT_MAX, create_gather_elements});
  r.add({"", "GatherND", 11, INT_MAX, create_gather_nd});
  r.add({"", "ScatterND", 11, INT_MAX, create_scatter_nd});
  r.add({"", "ScatterElements", 11, INT_MAX, create_scatter_elements});
  // Scatter was deprecated in opset 11 in favour of ScatterElements; models that
  // still import it at a later opset get the same semantics.
  r.add({"", "Scatter", 9, INT_MAX, create_scatter_elements});
  r.add({"", "OneHot", 9, INT_MAX, create_one_hot});
  r.add({"", "NonZero", 9, INT_MAX, create_non_zero});
  r.add({"", "Compress", 9, INT_MAX, create_compress});
  r.add({"", "CumSum", 11, INT_MAX, create_cum_sum});
  r.add({"", "CumProd", 26, INT_MAX, create_cum_prod});
  r.add({"", "TopK", 1, INT_MAX, create_top_k});
  r.add({"", "ArgMax", 1, INT_MAX, create_arg_max});
  r.add({"", "ArgMin", 1, INT_MAX, create_arg_min});
  r.add({"", "Unique", 11, INT_MAX, create_unique});
  r.add({"", "NonMaxSuppression", 10, INT_MAX, create_non_max_suppression});
}

}  // namespace ember::kernels
