#include "base/dtype.h"

#include <utility>

namespace ember {

uint16_t Float16::from_float(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // Inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u | ((abs >> 13) & 0x3ffu) : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to Inf
  if (abs < 0x38800000u) {  // subnormal half (or zero): round to nearest even on the shifted mantissa
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);
    uint32_t exp = abs >> 23;
    uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - exp;  // 14 + (112 - exp) + ...: shift so that result is in units of 2^-24
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t h = ((abs - 0x38000000u) >> 13);
  uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

float Float16::to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      exp = 113;
      while (!(mant & 0x400u)) {
        mant <<= 1;
        --exp;
      }
      bits = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kF32: case DType::kI32: case DType::kU32: return 4;
    case DType::kF64: case DType::kI64: case DType::kU64: return 8;
    case DType::kF16: case DType::kBF16: case DType::kI16: case DType::kU16: return 2;
    case DType::kI8: case DType::kU8: case DType::kBool: return 1;
    case DType::kF8E4M3FN: case DType::kF8E4M3FNUZ: case DType::kF8E5M2: case DType::kF8E5M2FNUZ: case DType::kF8E8M0:
      return 1;
    case DType::kU4: case DType::kI4: case DType::kF4E2M1: case DType::kU2: case DType::kI2:
    case DType::kUndefined: case DType::kString: case DType::kSequence: case DType::kOptional: return 0;
  }
  return 0;
}

int dtype_bits(DType t) {
  switch (t) {
    case DType::kU4: case DType::kI4: case DType::kF4E2M1: return 4;
    case DType::kU2: case DType::kI2: return 2;
    default: return static_cast<int>(dtype_size(t)) * 8;
  }
}

size_t dtype_nbytes(DType t, int64_t numel) {
  return (static_cast<size_t>(numel) * static_cast<size_t>(dtype_bits(t)) + 7) / 8;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "float32";
    case DType::kF64: return "float64";
    case DType::kF16: return "float16";
    case DType::kBF16: return "bfloat16";
    case DType::kI8: return "int8";
    case DType::kI16: return "int16";
    case DType::kI32: return "int32";
    case DType::kI64: return "int64";
    case DType::kU8: return "uint8";
    case DType::kU16: return "uint16";
    case DType::kU32: return "uint32";
    case DType::kU64: return "uint64";
    case DType::kBool: return "bool";
    case DType::kString: return "string";
    case DType::kF8E4M3FN: return "float8e4m3fn";
    case DType::kF8E4M3FNUZ: return "float8e4m3fnuz";
    case DType::kF8E5M2: return "float8e5m2";
    case DType::kF8E5M2FNUZ: return "float8e5m2fnuz";
    case DType::kU4: return "uint4";
    case DType::kI4: return "int4";
    case DType::kF4E2M1: return "float4e2m1";
    case DType::kF8E8M0: return "float8e8m0";
    case DType::kU2: return "uint2";
    case DType::kI2: return "int2";
    case DType::kSequence: return "sequence";
    case DType::kOptional: return "optional";
    case DType::kUndefined: return "undefined";
  }
  return "unknown";
}

bool dtype_is_float(DType t) {
  return t == DType::kF32 || t == DType::kF64 || t == DType::kF16 || t == DType::kBF16;
}
bool dtype_is_signed_int(DType t) {
  return t == DType::kI8 || t == DType::kI16 || t == DType::kI32 || t == DType::kI64;
}
bool dtype_is_unsigned_int(DType t) {
  return t == DType::kU8 || t == DType::kU16 || t == DType::kU32 || t == DType::kU64;
}
bool dtype_is_known(int32_t onnx_type) {
  switch (onnx_type) {
    case 1: case 2: case 3: case 4: case 5: case 6: case 7: case 8: case 9: case 10: case 11: case 12: case 13: case 16:
      return true;
    case 17: case 18: case 19: case 20: case 21: case 22: case 23: case 24: case 25: case 26:
      return true;
    default:
      return false;
  }
}

std::vector<DType> dtype_set_members(DTypeSet s) {
  std::vector<DType> members;
  for (int32_t v = 1; v <= static_cast<int32_t>(DType::kI2); ++v) {
    if (s.contains(static_cast<DType>(v))) members.push_back(static_cast<DType>(v));
  }
  for (DType t : {DType::kSequence, DType::kOptional}) {
    if (s.contains(t)) members.push_back(t);
  }
  return members;
}

std::string dtype_set_text(DTypeSet s) {
  static constexpr std::pair<std::string_view, DTypeSet> kNamed[] = {
      {"standard", kStandardTypes}, {"numeric", kNumericTypes}, {"floats", kFloatTypes},
      {"ints", kIntTypes},          {"signed-ints", kSignedIntTypes}, {"unsigned-ints", kUnsignedIntTypes},
      {"narrow", kNarrowTypes},     {"containers", kContainerTypes},
  };
  std::string text;
  auto append = [&text](std::string_view word) {
    if (!text.empty()) text += ' ';
    text += word;
  };
  for (const auto& [name, set] : kNamed) {
    if (s.contains(set)) {
      append(name);
      s = s - set;
    }
  }
  for (DType t : dtype_set_members(s)) append(dtype_name(t));
  return text.empty() ? "none" : text;
}

}  // namespace ember
