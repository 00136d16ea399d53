#include "kernels/elementwise/cast_narrow.h"

#include <type_traits>

#include "kernels/elementwise/elementwise_common.h"

namespace ember::kernels::elementwise {
namespace {

// An element between two types: integer sources keep every bit (wraparound
// casts need them), and every source has its value as a double (exact for all
// but 64-bit integers beyond 2^53, which every narrow float type saturates).
struct Value {
  bool is_int;
  int64_t i;
  double d;
};

Value narrow_value(DType t, uint8_t code) {
  const double d = narrow_to_double(t, code);
  if (narrow_is_float(t)) return {false, 0, d};
  return {true, static_cast<int64_t>(d), d};
}

template <typename T>
Value value_of(T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return {true, v ? 1 : 0, v ? 1.0 : 0.0};
  } else if constexpr (std::is_integral_v<T>) {
    return {true, static_cast<int64_t>(v), static_cast<double>(v)};
  } else {
    return {false, 0, static_cast<double>(static_cast<compute_t<T>>(v))};
  }
}

// Only narrow sources reach here, so a float value is exact in float32 and the
// conversion to f16/bf16 rounds once.
template <typename T>
T value_to(const Value& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v.is_int ? v.i != 0 : v.d != 0.0;
  } else if constexpr (std::is_integral_v<T>) {
    return v.is_int ? static_cast<T>(v.i) : float_to_int<T>(v.d);
  } else if constexpr (std::is_same_v<T, double>) {
    return v.d;
  } else {
    return static_cast<T>(static_cast<float>(v.d));
  }
}

uint8_t to_narrow(DType t, const Value& v, const NarrowCastOptions& options) {
  if (v.is_int && !narrow_is_float(t)) return narrow_from_int(t, v.i, options);
  return narrow_from_double(t, v.d, options);
}

template <typename Read>
void write_range(Tensor& y, int64_t begin, int64_t end, const NarrowCastOptions& options, Read read) {
  const DType to = y.dtype();
  if (dtype_is_narrow(to)) {
    for (int64_t i = begin; i < end; ++i) set_narrow_code(y.data(), to, i, to_narrow(to, read(i), options));
    return;
  }
  visit<TypeSet::kNumericOrBool>(to, [&](auto to_tag) {
    using To = typename decltype(to_tag)::type;
    To* py = y.data_as<To>();
    for (int64_t i = begin; i < end; ++i) py[i] = value_to<To>(read(i));
  });
}

}  // namespace

void cast_narrow_range(const Tensor& x, Tensor& y, int64_t begin, int64_t end, const NarrowCastOptions& options) {
  const DType from = x.dtype();
  if (dtype_is_narrow(from)) {
    write_range(y, begin, end, options, [&](int64_t i) { return narrow_value(from, narrow_code_at(x.data(), from, i)); });
    return;
  }
  visit<TypeSet::kNumericOrBool>(from, [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    const From* px = x.data_as<From>();
    write_range(y, begin, end, options, [&](int64_t i) { return value_of(px[i]); });
  });
}

}  // namespace ember::kernels::elementwise
