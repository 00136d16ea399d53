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

double decoder_logits_tolerance(bool int8_activations) {
  // f32: summation order, FMA and exp/tanh polynomials differ by a few ulp per op
  // (~1e-7 relative) and compound over the layers and 33 steps of carried KV
  // cache; 1e-4 keeps two orders of magnitude of headroom and still catches a
  // wrong mask position or rotary angle (those move logits by ~1e-1 of their RMS).
  if (!int8_activations) return 1e-4;
  // int8 activations (MatMulNBits accuracy_level 4): both runtimes quantize each
  // activation block to int8 and sum exact int32 products, and on identical
  // inputs Ember's MatMulNBits matches ORT's to ~1e-6 x RMS. But quantization is
  // not continuous: an input a few ulp off (2.7e-6 x RMS, from the f32 ops before
  // it: attention and norms sum in another order) crosses a rounding boundary,
  // moves an int8 code by one step and the product by ~2e-3 x RMS per code
  // (measured: ORT alone, fed Ember's post-attention norm output instead of its
  // own, changes layer 1's gate_proj by 4.7e-3 x RMS in llama-int4-tiny). Over
  // the layers this reaches 9e-3 to 4.8e-2 x RMS at the logits of the 2-layer
  // parity fixtures; 0.1 keeps 2x headroom and still catches a window off by one
  // (3.6 x RMS in ORT alone) or a scale 6% off (0.16 x RMS). Subtler errors
  // (softcap 50 -> 55: 0.08 x RMS) are left to each family's fp32 twin.
  return 0.1;
}

}  // namespace ember::ortref
