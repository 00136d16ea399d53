#include "base/narrow_types.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace ember {
namespace {

// A sign-exponent-mantissa format of at most 8 bits. Codes of equal sign are
// ordered by magnitude, so rounding works on the magnitude code (sign cleared).
struct MiniFloat {
  int exp_bits;
  int mant_bits;
  int bias;
  uint8_t max_code;     // magnitude code of the largest finite value
  bool unsigned_zero;   // FNUZ: no -0; 0x80 is the only NaN
  bool has_inf;         // E5M2: 0x7c is Inf
  bool has_nan;
};

// Formats from the ONNX type documents (docs/Float8.md, docs/Float4.md).
MiniFloat mini_float(DType t) {
  switch (t) {
    case DType::kF8E4M3FN: return {4, 3, 7, 0x7e, false, false, true};
    case DType::kF8E4M3FNUZ: return {4, 3, 8, 0x7f, true, false, true};
    case DType::kF8E5M2: return {5, 2, 15, 0x7b, false, true, true};
    case DType::kF8E5M2FNUZ: return {5, 2, 16, 0x7f, true, false, true};
    default: return {2, 1, 1, 0x7, false, false, false};  // kF4E2M1
  }
}

uint8_t sign_bit(const MiniFloat& f) { return static_cast<uint8_t>(1u << (f.exp_bits + f.mant_bits)); }

uint8_t nan_code(const MiniFloat& f, DType t, bool negative) {
  if (f.unsigned_zero) return 0x80;
  if (t == DType::kF8E5M2) return negative ? 0xfe : 0x7e;
  // E4M3FN: S.1111.111. FLOAT4E2M1 has no NaN: ml_dtypes gives 0x8 (-0) for a
  // positive NaN and 0x0 for a negative one, and ONNX's expected outputs follow it.
  if (t == DType::kF4E2M1) return negative ? 0x0 : 0x8;
  return negative ? 0xff : 0x7f;
}

double mini_float_value(const MiniFloat& f, uint8_t code) {
  const uint8_t sign = sign_bit(f);
  const bool negative = (code & sign) != 0;
  const unsigned mag = code & (sign - 1u);
  if (f.unsigned_zero && code == 0x80) return std::numeric_limits<double>::quiet_NaN();
  if (!f.unsigned_zero && f.has_nan) {
    const unsigned exp_all = ((1u << f.exp_bits) - 1u) << f.mant_bits;
    if (f.has_inf && (mag & exp_all) == exp_all) {
      if ((mag & ((1u << f.mant_bits) - 1u)) == 0) return negative ? -INFINITY : INFINITY;
      return std::numeric_limits<double>::quiet_NaN();
    }
    if (!f.has_inf && mag == ((1u << (f.exp_bits + f.mant_bits)) - 1u)) return std::numeric_limits<double>::quiet_NaN();
  }
  const int exp = static_cast<int>(mag >> f.mant_bits);
  const int mant = static_cast<int>(mag & ((1u << f.mant_bits) - 1u));
  const double v = exp == 0 ? std::ldexp(mant, 1 - f.bias - f.mant_bits)
                            : std::ldexp(mant + (1 << f.mant_bits), exp - f.bias - f.mant_bits);
  return negative ? -v : v;
}

uint8_t mini_float_from_double(const MiniFloat& f, DType t, double v, bool saturate) {
  const bool negative = std::signbit(v);
  if (std::isnan(v)) return nan_code(f, t, negative);
  const uint8_t sign = negative ? sign_bit(f) : 0;
  const int emin = 1 - f.bias;  // exponent of the smallest normal value
  const int emax = static_cast<int>(f.max_code >> f.mant_bits) - f.bias;
  const double a = std::fabs(v);
  bool overflow = std::isinf(a);
  unsigned mag = 0;
  if (!overflow) {
    int e2 = 0;
    std::frexp(a, &e2);  // a = m * 2^e2, m in [0.5, 1)
    const int ex = a == 0.0 ? emin : std::max(e2 - 1, emin);
    if (ex > emax + 1) {
      overflow = true;
    } else {
      // Magnitude codes are contiguous across binades: code = (ex - emin) * 2^M
      // + round(a / ulp), with the ulp of binade ex (subnormals share emin's).
      const double steps = std::nearbyint(std::ldexp(a, f.mant_bits - ex));  // exact scaling; rounds half to even
      mag = (static_cast<unsigned>(ex - emin) << f.mant_bits) + static_cast<unsigned>(steps);
      overflow = mag > f.max_code;
    }
  }
  if (overflow) {
    if (saturate || !f.has_nan) return static_cast<uint8_t>(sign | f.max_code);
    if (f.has_inf) return static_cast<uint8_t>(sign | (f.max_code + 1));  // E5M2: Inf follows the largest finite code
    return nan_code(f, t, negative);
  }
  if (mag == 0 && f.unsigned_zero) return 0;
  return static_cast<uint8_t>(sign | mag);
}

// FLOAT8E8M0 is a bare float32 exponent (2^(code - 127), 0xff NaN); the bit
// rules below are those of ONNX's reference (onnx.numpy_helper.to_float8e8m0):
// the sign is ignored, NaN and Inf give 0xff.
uint8_t e8m0_from_float(float v, const NarrowCastOptions& o) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  uint32_t exponent = (bits >> 23) & 0xffu;
  if (exponent == 0xffu) return 0xff;
  bool round_up = false;
  switch (o.e8m0_rounding) {
    case E8M0Rounding::kUp: round_up = (bits & 0x7fffffu) != 0; break;
    case E8M0Rounding::kDown: break;
    case E8M0Rounding::kNearest: {
      const bool guard = (bits & 0x400000u) != 0;
      const bool round = (bits & 0x200000u) != 0;
      const bool sticky = (bits & 0x1fffffu) != 0;
      round_up = guard && (round || sticky || exponent > 0);
      break;
    }
  }
  if (round_up && !(o.saturate && exponent == 0xfeu)) ++exponent;
  return static_cast<uint8_t>(exponent);
}

}  // namespace

bool narrow_is_float(DType t) {
  switch (t) {
    case DType::kF8E4M3FN: case DType::kF8E4M3FNUZ: case DType::kF8E5M2: case DType::kF8E5M2FNUZ:
    case DType::kF8E8M0: case DType::kF4E2M1:
      return true;
    default:
      return false;
  }
}

int64_t narrow_int_min(DType t) {
  switch (t) {
    case DType::kI4: return -8;
    case DType::kI2: return -2;
    default: return 0;
  }
}

int64_t narrow_int_max(DType t) {
  switch (t) {
    case DType::kI4: return 7;
    case DType::kU4: return 15;
    case DType::kI2: return 1;
    case DType::kU2: return 3;
    default: return 0;
  }
}

double narrow_to_double(DType t, uint8_t code) {
  switch (t) {
    case DType::kF8E8M0:
      return code == 0xff ? std::numeric_limits<double>::quiet_NaN() : std::ldexp(1.0, static_cast<int>(code) - 127);
    case DType::kI4: return static_cast<double>((code & 0x8) ? static_cast<int>(code) - 16 : code);
    case DType::kI2: return static_cast<double>((code & 0x2) ? static_cast<int>(code) - 4 : code);
    case DType::kU4: case DType::kU2: return code;
    default: return mini_float_value(mini_float(t), code);
  }
}

bool narrow_is_nan(DType t, uint8_t code) { return narrow_is_float(t) && std::isnan(narrow_to_double(t, code)); }

uint8_t narrow_from_double(DType t, double v, const NarrowCastOptions& options) {
  if (t == DType::kF8E8M0) return e8m0_from_float(static_cast<float>(v), options);
  if (narrow_is_float(t)) return mini_float_from_double(mini_float(t), t, v, options.saturate);
  const double whole = std::trunc(v);
  if (!(whole >= static_cast<double>(narrow_int_min(t)) && whole <= static_cast<double>(narrow_int_max(t)))) return 0;
  return static_cast<uint8_t>(static_cast<int64_t>(whole) & ((1 << dtype_bits(t)) - 1));
}

uint8_t narrow_from_int(DType t, int64_t v, const NarrowCastOptions& options) {
  if (narrow_is_float(t)) return narrow_from_double(t, static_cast<double>(v), options);
  return static_cast<uint8_t>(static_cast<uint64_t>(v) & ((1u << dtype_bits(t)) - 1u));
}

}  // namespace ember
