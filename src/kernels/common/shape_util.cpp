#include "kernels/common/shape_util.h"

#include <algorithm>

namespace ember::kernels {

Result<Shape> broadcast_shapes(std::span<const int64_t> a, std::span<const int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db || db == 1) {
      out[i] = da;
    } else if (da == 1) {
      out[i] = db;
    } else {
      return invalid_argument("shapes {} and {} cannot be broadcast", shape_to_string(a), shape_to_string(b));
    }
  }
  return out;
}

Shape broadcast_strides(std::span<const int64_t> in_shape, std::span<const int64_t> out_shape) {
  Shape strides(out_shape.size(), 0);
  size_t offset = out_shape.size() - in_shape.size();
  int64_t s = 1;
  for (size_t i = in_shape.size(); i-- > 0;) {
    strides[i + offset] = in_shape[i] == 1 ? 0 : s;
    s *= in_shape[i];
  }
  return strides;
}

Result<int64_t> normalize_axis(int64_t axis, int64_t rank, std::string_view what) {
  if (axis < -rank || axis >= rank) {
    return invalid_argument("{} {} is out of range for rank {}", what, axis, rank);
  }
  return axis < 0 ? axis + rank : axis;
}

}  // namespace ember::kernels
