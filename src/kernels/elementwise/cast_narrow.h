#pragma once
// Cast elements to or from the narrow types (float8, float4, int4, int2, ...).
#include <cstdint>

#include "base/narrow_types.h"
#include "base/tensor.h"

namespace ember::kernels::elementwise {

// Casts elements [begin, end) of x into y (x.dtype() or y.dtype() narrow). For a
// packed y, begin must be a multiple of 8 and end a multiple of 8 or y's numel,
// so that ranges run on different threads never share a byte.
void cast_narrow_range(const Tensor& x, Tensor& y, int64_t begin, int64_t end, const NarrowCastOptions& options);

}  // namespace ember::kernels::elementwise
