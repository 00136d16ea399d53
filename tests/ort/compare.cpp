#include "compare.h"

namespace ember::ortref {

Tolerance default_tolerance(DType dtype) {
  switch (dtype) {
    // f32 whole models: kernels may sum in another order, use FMA or not, and
    // evaluate exp/tanh/erf with different polynomials; each costs a few ulp
    // (~1e-7 relative) per op and they compound over a model's depth. 1e-4 relative
    // leaves two to three orders of magnitude of headroom while still catching a
    // wrong index or a wrong constant; atol 1e-5 covers results that cancel to
    // near zero, where relative error means nothing.
    case DType::kF32: return {1e-4, 1e-5};
    // f64: the same effects at double precision (ulp ~1e-16).
    case DType::kF64: return {1e-9, 1e-12};
    // f16 has an 11-bit significand (ulp 2^-10 ~ 1e-3 relative): ORT rounds some
    // intermediates to f16 where Ember computes in f32, so results may differ by
    // a few f16 ulp.
    case DType::kF16: return {1e-2, 1e-3};
    // bf16 has an 8-bit significand (ulp 2^-7 ~ 8e-3 relative): one rounding
    // difference is already ~1e-2.
    case DType::kBF16: return {2e-2, 1e-2};
    // Integers and bool: exact.
    default: return {0, 0};
  }
}

}  // namespace ember::ortref
