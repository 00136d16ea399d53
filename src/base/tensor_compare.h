#pragma once
// Output comparison used by the conformance runner and the ORT reference tests.
#include "base/status.h"
#include "base/tensor.h"

namespace ember {

struct Tolerance {
  double rtol = 1e-3;  // ONNX backend-test defaults
  double atol = 1e-7;
};

// OK when dtype and shape match and every element satisfies
// |actual - expected| <= atol + rtol * |expected| (floats; NaN matches NaN,
// infinities must be equal) or is equal (integers and bool). Otherwise an error
// naming the first mismatching index, both values and the largest errors.
Status compare_tensors(const Tensor& actual, const Tensor& expected, Tolerance tol);

}  // namespace ember
