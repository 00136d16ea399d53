#pragma once
// Element-wise comparison of an Ember result against a reference result.
//
// Integer and bool tensors must match exactly. Floating-point elements a (actual)
// and b (expected) match when |a - b| <= atol + rtol * |b|, or when both are NaN,
// or when both are the same infinity.
#include "base/status.h"
#include "base/tensor.h"
#include "base/tensor_compare.h"

namespace ember::ortref {

using ember::Tolerance;

// The whole-model tolerance for `dtype` (0/0, i.e. exact, for integers and bool);
// the table and the reason for each entry live in compare.cpp.
Tolerance default_tolerance(DType dtype);

// Whether ORT's MatMulNBits quantizes activations to int8 at accuracy_level 4 on
// this host: MLAS has int8 kernels from AVX2 up only and computes in f32 below
// that. Ember quantizes on every host, so its results do not depend on the CPU.
bool ort_quantizes_activations_here();

// Whole decoder models: the largest |Ember - ORT| over a step's logits, relative
// to the RMS of ORT's logits, may be at most this; int8_activations for models
// whose MatMulNBits quantize activations (accuracy_level 4), `layers` deep.
// Reasons and measurements in compare.cpp.
double decoder_logits_tolerance(bool int8_activations, int layers);

// One step's logits [..., vocab], Ember's against ORT's (f32, same shape).
struct LogitsAgreement {
  double error = 0;  // max |Ember - ORT| / RMS(ORT)
  double rms = 0;    // of ORT's logits
  // Over the rows whose argmax differs: the largest gap, in ORT's logits,
  // between ORT's token and Ember's (0 when every row agrees), and where.
  double worst_gap = 0;
  int64_t worst_row = -1, ember_token = -1, ort_token = -1;
};
LogitsAgreement compare_logits(const Tensor& ember, const Tensor& ort);
// OK when the error is within `tolerance` x RMS and every differing argmax is a
// near-tie of ORT's own logits (gap <= 2 x tolerance x RMS, which the allowed
// error may reorder); else what disagrees.
Status check_logits(const LogitsAgreement& a, double tolerance);

// OK when dtypes, shapes and every element match; otherwise an error naming the
// first mismatching element (flat and multi-dimensional index, both values), the
// number of mismatches and the largest absolute and relative errors.
inline Status compare(const Tensor& actual, const Tensor& expected, Tolerance tolerance) {
  return compare_tensors(actual, expected, tolerance);
}
inline Status compare(const Tensor& actual, const Tensor& expected) {
  return compare(actual, expected, default_tolerance(expected.dtype()));
}

}  // namespace ember::ortref
