#pragma once
// Element types. Values are ONNX TensorProto.DataType numbers so the loader maps
// them directly.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace ember {

enum class DType : int32_t {
  kUndefined = 0,
  kF32 = 1,
  kU8 = 2,
  kI8 = 3,
  kU16 = 4,
  kI16 = 5,
  kI32 = 6,
  kI64 = 7,
  kString = 8,
  kBool = 9,
  kF16 = 10,
  kF64 = 11,
  kU32 = 12,
  kU64 = 13,
  kBF16 = 16,
  // The narrow formats (ONNX 1.15+): only conversion ops (Cast, CastLike,
  // QuantizeLinear, DequantizeLinear, BitCast) and data movement read them.
  kF8E4M3FN = 17,
  kF8E4M3FNUZ = 18,
  kF8E5M2 = 19,
  kF8E5M2FNUZ = 20,
  kU4 = 21,  // 4-bit and 2-bit types are packed, the first element in the low bits
  kI4 = 22,
  kF4E2M1 = 23,
  kF8E8M0 = 24,
  kU2 = 25,
  kI2 = 26,
  // Not element types: a sequence of tensors, or an optional (of a tensor or a
  // sequence). A Tensor of these is a 0-D handle whose data is a ValueList
  // (base/value_list.h); numbers past ONNX's TensorProto range.
  kSequence = 1000,
  kOptional = 1001,
};

// IEEE 754 binary16, stored as bits.
struct Float16 {
  uint16_t bits = 0;
  Float16() = default;
  explicit Float16(float f) : bits(from_float(f)) {}
  operator float() const { return to_float(bits); }
  static uint16_t from_float(float f);
  static float to_float(uint16_t h);
};

// bfloat16: the top half of an f32; conversion rounds to nearest even.
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float f) : bits(from_float(f)) {}
  operator float() const { return to_float(bits); }
  static uint16_t from_float(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
  }
  static float to_float(uint16_t b) {
    uint32_t u = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

size_t dtype_size(DType t);  // 0 for kUndefined, kString and the packed sub-byte types
int dtype_bits(DType t);     // bits per element: 8 * dtype_size, 4 or 2 for packed types
// Bytes that `numel` elements occupy; packed types round up to a whole byte.
size_t dtype_nbytes(DType t, int64_t numel);
inline bool dtype_is_packed(DType t) { return dtype_bits(t) > 0 && dtype_bits(t) < 8; }
// One of the float8/float4/int4/int2 types (ONNX types 17-26).
inline bool dtype_is_narrow(DType t) { return t >= DType::kF8E4M3FN && t <= DType::kI2; }
std::string_view dtype_name(DType t);  // "float32", "int64", ...
bool dtype_is_float(DType t);  // f32, f64, f16, bf16 (not the narrow types)
bool dtype_is_signed_int(DType t);
bool dtype_is_unsigned_int(DType t);
inline bool dtype_is_int(DType t) { return dtype_is_signed_int(t) || dtype_is_unsigned_int(t); }
bool dtype_is_known(int32_t onnx_type);  // a type Ember can hold in a Tensor

// A set of element types (and the sequence/optional value kinds): what an op
// accepts on its inputs. A bitmask, so sets combine at compile time.
class DTypeSet {
 public:
  constexpr DTypeSet() = default;
  constexpr DTypeSet(std::initializer_list<DType> types) {
    for (DType t : types) bits_ |= bit(t);
  }
  constexpr bool contains(DType t) const { return bit(t) != 0 && (bits_ & bit(t)) != 0; }
  constexpr bool contains(DTypeSet other) const { return (bits_ & other.bits_) == other.bits_; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr DTypeSet operator|(DTypeSet o) const { return DTypeSet(bits_ | o.bits_); }
  constexpr DTypeSet operator-(DTypeSet o) const { return DTypeSet(bits_ & ~o.bits_); }
  constexpr bool operator==(const DTypeSet&) const = default;

 private:
  constexpr explicit DTypeSet(uint64_t bits) : bits_(bits) {}
  // ONNX's element types are below 48; the two value kinds take the next bits.
  static constexpr uint64_t bit(DType t) {
    const auto v = static_cast<int32_t>(t);
    if (v > 0 && v < 48) return uint64_t{1} << v;
    if (t == DType::kSequence) return uint64_t{1} << 48;
    if (t == DType::kOptional) return uint64_t{1} << 49;
    return 0;
  }
  uint64_t bits_ = 0;
};

inline constexpr DTypeSet kFloatTypes{DType::kF32, DType::kF16, DType::kBF16, DType::kF64};
inline constexpr DTypeSet kSignedIntTypes{DType::kI8, DType::kI16, DType::kI32, DType::kI64};
inline constexpr DTypeSet kUnsignedIntTypes{DType::kU8, DType::kU16, DType::kU32, DType::kU64};
inline constexpr DTypeSet kIntTypes = kSignedIntTypes | kUnsignedIntTypes;
inline constexpr DTypeSet kNumericTypes = kFloatTypes | kIntTypes;
inline constexpr DTypeSet kBoolType{DType::kBool};
inline constexpr DTypeSet kStringType{DType::kString};
inline constexpr DTypeSet kNarrowTypes{DType::kF8E4M3FN, DType::kF8E4M3FNUZ, DType::kF8E5M2, DType::kF8E5M2FNUZ,
                                       DType::kU4,       DType::kI4,         DType::kF4E2M1, DType::kF8E8M0,
                                       DType::kU2,       DType::kI2};
inline constexpr DTypeSet kContainerTypes{DType::kSequence, DType::kOptional};
// What an op accepts unless its entry says otherwise: every numeric type and
// bool; no strings, no narrow types, no sequences or optionals.
inline constexpr DTypeSet kStandardTypes = kNumericTypes | kBoolType;

std::vector<DType> dtype_set_members(DTypeSet s);  // in ONNX's numbering
// The named sets a set contains ("standard", "floats", "ints", "narrow", ...),
// then its other members by dtype_name: "floats int32".
std::string dtype_set_text(DTypeSet s);

template <typename T> struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::kF32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::kF64; };
template <> struct DTypeOf<Float16> { static constexpr DType value = DType::kF16; };
template <> struct DTypeOf<BFloat16> { static constexpr DType value = DType::kBF16; };
template <> struct DTypeOf<int8_t> { static constexpr DType value = DType::kI8; };
template <> struct DTypeOf<int16_t> { static constexpr DType value = DType::kI16; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::kI32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::kI64; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::kU8; };
template <> struct DTypeOf<uint16_t> { static constexpr DType value = DType::kU16; };
template <> struct DTypeOf<uint32_t> { static constexpr DType value = DType::kU32; };
template <> struct DTypeOf<uint64_t> { static constexpr DType value = DType::kU64; };
template <> struct DTypeOf<bool> { static constexpr DType value = DType::kBool; };
template <typename T> inline constexpr DType dtype_of = DTypeOf<T>::value;

// The type arithmetic is done in: f16/bf16 compute in f32, everything else in itself.
template <typename T> struct ComputeType { using type = T; };
template <> struct ComputeType<Float16> { using type = float; };
template <> struct ComputeType<BFloat16> { using type = float; };
template <typename T> using compute_t = typename ComputeType<T>::type;

}  // namespace ember

// Dispatch on a runtime DType to a body templated on the C++ type `T`:
//   EMBER_SWITCH_ALL(dtype, T, { run<T>(...); }, return not_implemented(...));
#define EMBER_DTYPE_CASE(enum_value, ctype, T, ...) \
  case ::ember::DType::enum_value: {                \
    using T = ctype;                                \
    __VA_ARGS__;                                    \
    break;                                          \
  }
#define EMBER_FLOAT_CASES(T, ...)                       \
  EMBER_DTYPE_CASE(kF32, float, T, __VA_ARGS__)         \
  EMBER_DTYPE_CASE(kF64, double, T, __VA_ARGS__)        \
  EMBER_DTYPE_CASE(kF16, ::ember::Float16, T, __VA_ARGS__) \
  EMBER_DTYPE_CASE(kBF16, ::ember::BFloat16, T, __VA_ARGS__)
#define EMBER_SIGNED_INT_CASES(T, ...)            \
  EMBER_DTYPE_CASE(kI8, int8_t, T, __VA_ARGS__)   \
  EMBER_DTYPE_CASE(kI16, int16_t, T, __VA_ARGS__) \
  EMBER_DTYPE_CASE(kI32, int32_t, T, __VA_ARGS__) \
  EMBER_DTYPE_CASE(kI64, int64_t, T, __VA_ARGS__)
#define EMBER_UNSIGNED_INT_CASES(T, ...)           \
  EMBER_DTYPE_CASE(kU8, uint8_t, T, __VA_ARGS__)   \
  EMBER_DTYPE_CASE(kU16, uint16_t, T, __VA_ARGS__) \
  EMBER_DTYPE_CASE(kU32, uint32_t, T, __VA_ARGS__) \
  EMBER_DTYPE_CASE(kU64, uint64_t, T, __VA_ARGS__)
#define EMBER_INT_CASES(T, ...) EMBER_SIGNED_INT_CASES(T, __VA_ARGS__) EMBER_UNSIGNED_INT_CASES(T, __VA_ARGS__)
#define EMBER_NUMERIC_CASES(T, ...) EMBER_FLOAT_CASES(T, __VA_ARGS__) EMBER_INT_CASES(T, __VA_ARGS__)
#define EMBER_ALL_CASES(T, ...) EMBER_NUMERIC_CASES(T, __VA_ARGS__) EMBER_DTYPE_CASE(kBool, bool, T, __VA_ARGS__)

#define EMBER_SWITCH(dtype, CASES, T, body, fallback) \
  switch (dtype) {                                    \
    CASES(T, body)                                    \
    default: fallback;                                \
  }
#define EMBER_SWITCH_FLOAT(dtype, T, body, fallback) EMBER_SWITCH(dtype, EMBER_FLOAT_CASES, T, body, fallback)
#define EMBER_SWITCH_INT(dtype, T, body, fallback) EMBER_SWITCH(dtype, EMBER_INT_CASES, T, body, fallback)
#define EMBER_SWITCH_NUMERIC(dtype, T, body, fallback) EMBER_SWITCH(dtype, EMBER_NUMERIC_CASES, T, body, fallback)
#define EMBER_SWITCH_ALL(dtype, T, body, fallback) EMBER_SWITCH(dtype, EMBER_ALL_CASES, T, body, fallback)
