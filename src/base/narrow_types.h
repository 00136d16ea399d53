#pragma once
// Element access and conversions for the narrow types (ONNX 17-26): the float8
// formats, FLOAT8E8M0, FLOAT4E2M1 and the 4-bit and 2-bit integers. Each element
// is handled as its bit code (0..255, or the low 4/2 bits for packed types).
#include <cstdint>

#include "base/dtype.h"

namespace ember {

// Rounding of a cast to FLOAT8E8M0 (Cast-24 attribute round_mode).
enum class E8M0Rounding { kUp, kDown, kNearest };

struct NarrowCastOptions {
  bool saturate = true;  // out-of-range values go to the largest finite value (float8 types)
  E8M0Rounding e8m0_rounding = E8M0Rounding::kUp;
};

// The code of element i. Packed types keep element 2k (4-bit) or 4k (2-bit) in
// the low bits of byte k.
inline uint8_t narrow_code_at(const void* data, DType t, int64_t i) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  const int bits = dtype_bits(t);
  if (bits == 8) return bytes[i];
  const int per_byte = 8 / bits;
  const int shift = static_cast<int>(i % per_byte) * bits;
  return static_cast<uint8_t>((bytes[i / per_byte] >> shift) & ((1u << bits) - 1u));
}

// Writes element i's code. For packed types this rewrites a byte shared with its
// neighbours: threads must own whole bytes.
inline void set_narrow_code(void* data, DType t, int64_t i, uint8_t code) {
  auto* bytes = static_cast<uint8_t*>(data);
  const int bits = dtype_bits(t);
  if (bits == 8) {
    bytes[i] = code;
    return;
  }
  const int per_byte = 8 / bits;
  const int shift = static_cast<int>(i % per_byte) * bits;
  const auto mask = static_cast<uint8_t>(((1u << bits) - 1u) << shift);
  uint8_t& b = bytes[i / per_byte];
  b = static_cast<uint8_t>((b & ~mask) | ((code << shift) & mask));
}

// The float8 formats, FLOAT8E8M0 and FLOAT4E2M1 (as opposed to the narrow integers).
bool narrow_is_float(DType t);

// The value of a code: exact for every type (a double holds each of them); NaN
// for NaN codes, +-Inf for FLOAT8E5M2's infinities, the integer for int types.
double narrow_to_double(DType t, uint8_t code);
bool narrow_is_nan(DType t, uint8_t code);

// The code nearest `v` under ONNX's Cast rules: float8 types round to nearest
// even, saturating or not as the tables of the Cast operator say; FLOAT8E8M0
// rounds the float32 value by `e8m0_rounding`; FLOAT4E2M1 always saturates; the
// integer types truncate toward zero and give 0 when out of range or NaN (as
// ml_dtypes, which generates ONNX's expected outputs, does).
uint8_t narrow_from_double(DType t, double v, const NarrowCastOptions& options);

// Integer sources: the narrow integers keep the low bits (two's complement
// wraparound, as between the wider integer types); float types convert the value.
uint8_t narrow_from_int(DType t, int64_t v, const NarrowCastOptions& options);

// The smallest and largest value of a narrow integer type.
int64_t narrow_int_min(DType t);
int64_t narrow_int_max(DType t);

}  // namespace ember
