#pragma once
// The reference of every UnaryKind over any arithmetic type, from the rows of
// unary_math.inc: UnaryReference<kind>::apply(v, params). The scalar ISA level
// runs it at float, ops on the other element types at their compute type, and
// the accuracy tests at double as their oracle.
#include <cmath>
#include <type_traits>

#include "kernels/elementwise/unary_ukernels.h"

namespace ember::kernels {
namespace unary_reference_detail {

template <class C> C ref_clamp01(C v) { return v < C(0) ? C(0) : (v > C(1) ? C(1) : v); }
// The bound first, then x: a NaN x passes through.
template <class C> C ref_max(C bound, C x) { return x < bound ? bound : x; }
template <class C> C ref_min(C bound, C x) { return x > bound ? bound : x; }
// Split at 0 so neither branch overflows exp().
template <class C> C ref_sigmoid(C x) {
  return x >= C(0) ? C(1) / (C(1) + std::exp(-x)) : std::exp(x) / (C(1) + std::exp(x));
}
// log(1 + e^x) without overflow for large x.
template <class C> C ref_softplus(C x) { return x > C(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }
// Negation that wraps for the most negative integer instead of overflowing.
template <class C> C ref_negate(C x) {
  if constexpr (std::is_floating_point_v<C>) {
    return -x;
  } else {
    return static_cast<C>(0u - static_cast<std::make_unsigned_t<C>>(x));
  }
}
template <class C> C ref_abs(C x) {
  if constexpr (std::is_floating_point_v<C>) {
    return std::fabs(x);
  } else if constexpr (std::is_unsigned_v<C>) {
    return x;
  } else {
    return x < 0 ? ref_negate(x) : x;
  }
}

}  // namespace unary_reference_detail

template <UnaryKind K>
struct UnaryReference;

#define EMBER_UNARY_MATH(Kind, reference, vector)                        \
  template <>                                                           \
  struct UnaryReference<UnaryKind::k##Kind> {                           \
    template <class C>                                                  \
    static C apply(C v, const UnaryParams& p) {                         \
      using namespace unary_reference_detail;                           \
      static_cast<void>(p);                                             \
      return static_cast<C>(reference);                                 \
    }                                                                   \
  };
#include "kernels/elementwise/unary_math.inc"
#undef EMBER_UNARY_MATH

// The reference of a kind chosen at run time, for floating-point C.
template <class C>
C unary_reference(UnaryKind kind, C v, const UnaryParams& p) {
  switch (kind) {
#define EMBER_UNARY_MATH(Kind, reference, vector) \
  case UnaryKind::k##Kind:                        \
    return UnaryReference<UnaryKind::k##Kind>::apply(v, p);
#include "kernels/elementwise/unary_math.inc"
#undef EMBER_UNARY_MATH
    case UnaryKind::kCount:
      break;
  }
  return v;
}

}  // namespace ember::kernels
