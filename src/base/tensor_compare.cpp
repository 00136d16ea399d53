#include "base/tensor_compare.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/narrow_types.h"

namespace ember {

namespace {

std::string index_string(int64_t flat, const Shape& shape) {
  Shape idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return shape_to_string(idx);
}

struct Mismatch {
  int64_t index = -1;
  std::string actual;
  std::string expected;
};

template <typename T>
std::string value_string(T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else if constexpr (std::is_integral_v<T>) {
    return std::to_string(v);
  } else {
    return fmt::format("{:.9g}", static_cast<double>(static_cast<compute_t<T>>(v)));
  }
}

bool float_match(double a, double b, const Tolerance& tol) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::fabs(a - b) <= tol.atol + tol.rtol * std::fabs(b);
}

template <typename T>
Status compare_typed(const Tensor& actual, const Tensor& expected, const Tolerance& tol) {
  const T* a = actual.data_as<T>();
  const T* b = expected.data_as<T>();
  const int64_t n = expected.numel();
  Mismatch first;
  int64_t mismatches = 0;
  double max_abs = 0, max_rel = 0;
  for (int64_t i = 0; i < n; ++i) {
    bool ok;
    if constexpr (std::is_integral_v<T>) {
      ok = a[i] == b[i];
      if (!ok) {
        double diff = std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
        max_abs = std::max(max_abs, diff);
        if (b[i] != 0) max_rel = std::max(max_rel, diff / std::fabs(static_cast<double>(b[i])));
      }
    } else {
      double av = static_cast<compute_t<T>>(a[i]);
      double bv = static_cast<compute_t<T>>(b[i]);
      ok = float_match(av, bv, tol);
      if (std::isfinite(av) && std::isfinite(bv)) {
        double diff = std::fabs(av - bv);
        max_abs = std::max(max_abs, diff);
        if (bv != 0) max_rel = std::max(max_rel, diff / std::fabs(bv));
      }
    }
    if (ok) continue;
    if (mismatches++ == 0) first = {i, value_string(a[i]), value_string(b[i])};
  }
  if (mismatches == 0) return Status::ok();
  return invalid_argument(
      "{} of {} elements differ; first at flat index {} {}: actual {} expected {}; max abs error {:.3g}, max rel "
      "error {:.3g} (rtol {:g}, atol {:g})",
      mismatches, n, first.index, index_string(first.index, expected.shape()), first.actual, first.expected, max_abs,
      max_rel, tol.rtol, tol.atol);
}

// The narrow types compare exactly, code by code (any NaN code matches any other).
Status compare_narrow(const Tensor& actual, const Tensor& expected) {
  const DType t = expected.dtype();
  int64_t mismatches = 0, first = -1;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    const uint8_t a = narrow_code_at(actual.data(), t, i), b = narrow_code_at(expected.data(), t, i);
    if (a == b || (narrow_is_nan(t, a) && narrow_is_nan(t, b))) continue;
    if (mismatches++ == 0) first = i;
  }
  if (mismatches == 0) return Status::ok();
  const uint8_t a = narrow_code_at(actual.data(), t, first), b = narrow_code_at(expected.data(), t, first);
  return invalid_argument("{} of {} elements differ; first at flat index {} {}: actual {:.9g} (code 0x{:02x}) expected "
                          "{:.9g} (code 0x{:02x})",
                          mismatches, expected.numel(), first, index_string(first, expected.shape()),
                          narrow_to_double(t, a), a, narrow_to_double(t, b), b);
}

Status compare_strings(const Tensor& actual, const Tensor& expected) {
  const std::string* a = actual.data_as<std::string>();
  const std::string* b = expected.data_as<std::string>();
  int64_t mismatches = 0, first = -1;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    if (a[i] == b[i]) continue;
    if (mismatches++ == 0) first = i;
  }
  if (mismatches == 0) return Status::ok();
  return invalid_argument("{} of {} strings differ; first at flat index {} {}: actual \"{}\" expected \"{}\"", mismatches,
                          expected.numel(), first, index_string(first, expected.shape()), a[first], b[first]);
}

}  // namespace

Status compare_tensors(const Tensor& actual, const Tensor& expected, Tolerance tolerance) {
  if (actual.dtype() != expected.dtype())
    return invalid_argument("dtype differs: actual {} expected {}", actual.describe(), expected.describe());
  if (actual.shape().size() != expected.shape().size() ||
      !std::equal(actual.shape().begin(), actual.shape().end(), expected.shape().begin()))
    return invalid_argument("shape differs: actual {} expected {}", actual.describe(), expected.describe());
  if (dtype_is_narrow(expected.dtype())) return compare_narrow(actual, expected);
  if (expected.dtype() == DType::kString) return compare_strings(actual, expected);
  EMBER_SWITCH_ALL(expected.dtype(), T, return compare_typed<T>(actual, expected, tolerance),
                   return not_implemented("compare: dtype {} is not supported", dtype_name(expected.dtype())));
  return Status::ok();
}

}  // namespace ember
