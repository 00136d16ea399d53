#include "base/tensor_compare.h"

#include <cmath>

namespace ember {

Status compare_tensors(const Tensor& actual, const Tensor& expected, Tolerance tol) {
  if (actual.dtype() != expected.dtype()) {
    return invalid_argument("dtype {} differs from the expected {}", dtype_name(actual.dtype()), dtype_name(expected.dtype()));
  }
  if (!(actual.shape() == expected.shape())) {
    return invalid_argument("shape {} differs from the expected {}", shape_to_string(actual.shape()),
                            shape_to_string(expected.shape()));
  }
  int64_t n = expected.numel();
  int64_t first_bad = -1, bad = 0;
  double max_abs = 0, max_rel = 0;
  bool is_float = dtype_is_float(expected.dtype());
  for (int64_t i = 0; i < n; ++i) {
    bool ok;
    if (is_float) {
      double a = read_double(actual, i), e = read_double(expected, i);
      if (std::isnan(e) || std::isnan(a)) {
        ok = std::isnan(e) && std::isnan(a);
      } else if (std::isinf(e) || std::isinf(a)) {
        ok = a == e;
      } else {
        double diff = std::fabs(a - e);
        max_abs = std::max(max_abs, diff);
        if (e != 0) max_rel = std::max(max_rel, diff / std::fabs(e));
        ok = diff <= tol.atol + tol.rtol * std::fabs(e);
      }
    } else if (dtype_is_unsigned_int(expected.dtype())) {
      ok = static_cast<uint64_t>(read_int(actual, i)) == static_cast<uint64_t>(read_int(expected, i));
    } else {
      ok = read_int(actual, i) == read_int(expected, i);
    }
    if (!ok) {
      if (first_bad < 0) first_bad = i;
      ++bad;
    }
  }
  if (bad == 0) return Status::ok();
  std::string got = is_float ? fmt::format("{}", read_double(actual, first_bad)) : fmt::format("{}", read_int(actual, first_bad));
  std::string want = is_float ? fmt::format("{}", read_double(expected, first_bad)) : fmt::format("{}", read_int(expected, first_bad));
  return invalid_argument("{} of {} elements differ; first at flat index {}: got {}, expected {} (max abs error {:.3g}, max rel error {:.3g}, rtol {}, atol {})",
                          bad, n, first_bad, got, want, max_abs, max_rel, tol.rtol, tol.atol);
}

}  // namespace ember
