// Cast and CastLike between every pair of numeric dtypes, bool and the narrow
// types (float8, float4, int4, int2: see cast_narrow.cpp).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>

#include "kernels/common/convert.h"
#include "kernels/elementwise/cast_narrow.h"
#include "kernels/elementwise/elementwise_common.h"
#include "kernels/string/string_ops.h"
#include "threading/thread_pool.h"

namespace ember::kernels {
namespace elementwise {
namespace {

// double -> float rounding to odd: converting the result on to f16/bf16 then
// rounds as if straight from double (no double-rounding error), since float
// keeps at least two more mantissa bits than either.
float to_float_round_to_odd(double d) {
  float f = static_cast<float>(d);
  if (!std::isfinite(f) || static_cast<double>(f) == d) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits |= 1u;
  std::memcpy(&f, &bits, 4);
  return f;
}

template <typename From, typename To>
To cast_value(From v) {
  using CF = compute_t<From>;
  if constexpr (std::is_same_v<From, To>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    return static_cast<CF>(v) != CF(0);
  } else if constexpr (std::is_integral_v<To>) {
    if constexpr (std::is_floating_point_v<CF>) {
      return float_to_int<To>(static_cast<double>(static_cast<CF>(v)));
    } else {
      return static_cast<To>(v);
    }
  } else if constexpr (std::is_same_v<From, double> && !std::is_same_v<compute_t<To>, To>) {
    return static_cast<To>(to_float_round_to_odd(v));
  } else {
    return static_cast<To>(static_cast<compute_t<To>>(static_cast<CF>(v)));
  }
}

// Casts between f32 and the 16-bit floats run through the SIMD conversion table;
// f16 <-> bf16 goes through f32 blocks on the stack (exact: f32 holds every
// value of both, so only the final rounding happens).
enum class CastPath { kGeneric, kNarrow, kSame, kF32ToF16, kF16ToF32, kF32ToBf16, kBf16ToF32, kF16ToBf16, kBf16ToF16 };

CastPath pick_cast_path(DType from, DType to) {
  if (from == to) return CastPath::kSame;
  if (dtype_is_narrow(from) || dtype_is_narrow(to)) return CastPath::kNarrow;
  if (from == DType::kF32 && to == DType::kF16) return CastPath::kF32ToF16;
  if (from == DType::kF16 && to == DType::kF32) return CastPath::kF16ToF32;
  if (from == DType::kF32 && to == DType::kBF16) return CastPath::kF32ToBf16;
  if (from == DType::kBF16 && to == DType::kF32) return CastPath::kBf16ToF32;
  if (from == DType::kF16 && to == DType::kBF16) return CastPath::kF16ToBf16;
  if (from == DType::kBF16 && to == DType::kF16) return CastPath::kBf16ToF16;
  return CastPath::kGeneric;
}

// Elements per range. Cast f32 -> f16, 1 vs 2 threads: 32 Ki elements 1.86 ->
// 1.42 us, 16 Ki 0.99 -> 0.97 us (method in docs/benchmarks/2026-11-30-thread-grains.md).
constexpr int64_t kCastGrain = 16 * 1024;
// f32 staging block for f16 <-> bf16 (2 KiB: stays in L1 between the two passes).
constexpr int64_t kCastBlock = 512;

void cast_16_via_f32(const uint16_t* x, uint16_t* y, int64_t n, void (*to_f32)(const uint16_t*, float*, int64_t),
                     void (*from_f32)(const float*, uint16_t*, int64_t)) {
  float block[kCastBlock];
  for (int64_t i = 0; i < n; i += kCastBlock) {
    const int64_t len = std::min(kCastBlock, n - i);
    to_f32(x + i, block, len);
    from_f32(block, y + i, len);
  }
}

class CastKernel final : public OpKernel {
 public:
  CastKernel(DType from, DType to, NarrowCastOptions narrow)
      : from_(from), to_(to), path_(pick_cast_path(from, to)), narrow_(narrow), convert_(convert_table()) {}

  Status infer(KernelContext& ctx) const override {
    ctx.set_output(0, to_, ctx.input(0).shape());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    if (path_ == CastPath::kSame && dtype_is_packed(from_)) {
      if (x.data() != y.data()) std::memcpy(y.data(), x.data(), x.nbytes());
      return Status::ok();
    }
    if (path_ == CastPath::kNarrow) {
      // Whole bytes per range: packed elements share them.
      const int64_t n = x.numel();
      threading::parallel_for((n + 7) / 8, kCastGrain / 8, [&](int64_t begin, int64_t end) {
        cast_narrow_range(x, y, begin * 8, std::min(end * 8, n), narrow_);
      });
      return Status::ok();
    }
    threading::parallel_for(x.numel(), kCastGrain, [&](int64_t begin, int64_t end) { cast_range(x, y, begin, end); });
    return Status::ok();
  }

  // Element i is read before it is written, so equal element sizes can share a buffer.
  int inplace_input() const override { return dtype_bits(from_) == dtype_bits(to_) && dtype_bits(from_) > 0 ? 0 : -1; }

 private:
  void cast_range(const Tensor& x, Tensor& y, int64_t begin, int64_t end) const {
    const int64_t n = end - begin;
    const auto* x16 = static_cast<const uint16_t*>(x.data()) + begin;
    auto* y16 = static_cast<uint16_t*>(y.data()) + begin;
    const float* x32 = static_cast<const float*>(x.data()) + begin;
    float* y32 = static_cast<float*>(y.data()) + begin;
    switch (path_) {
      case CastPath::kSame: {
        const size_t esize = dtype_size(from_);
        if (x.data() != y.data()) {
          std::memcpy(static_cast<std::byte*>(y.data()) + begin * static_cast<int64_t>(esize),
                      static_cast<const std::byte*>(x.data()) + begin * static_cast<int64_t>(esize),
                      static_cast<size_t>(n) * esize);
        }
        return;
      }
      case CastPath::kF32ToF16: return convert_.f32_to_f16(x32, y16, n);
      case CastPath::kF16ToF32: return convert_.f16_to_f32(x16, y32, n);
      case CastPath::kF32ToBf16: return convert_.f32_to_bf16(x32, y16, n);
      case CastPath::kBf16ToF32: return convert_.bf16_to_f32(x16, y32, n);
      case CastPath::kF16ToBf16: return cast_16_via_f32(x16, y16, n, convert_.f16_to_f32, convert_.f32_to_bf16);
      case CastPath::kBf16ToF16: return cast_16_via_f32(x16, y16, n, convert_.bf16_to_f32, convert_.f32_to_f16);
      case CastPath::kNarrow:
      case CastPath::kGeneric: break;
    }
    visit<TypeSet::kNumericOrBool>(from_, [&](auto from_tag) {
      using From = typename decltype(from_tag)::type;
      visit<TypeSet::kNumericOrBool>(to_, [&](auto to_tag) {
        using To = typename decltype(to_tag)::type;
        const From* px = x.data_as<From>();
        To* py = y.data_as<To>();
        for (int64_t i = begin; i < end; ++i) py[i] = cast_value<From, To>(px[i]);
      });
    });
  }

  DType from_;
  DType to_;
  CastPath path_;
  NarrowCastOptions narrow_;
  const ConvertTable& convert_;
};

// Cast-1 names its target type as a string.
Result<DType> dtype_from_name(const std::string& name) {
  static constexpr std::array<std::pair<std::string_view, DType>, 14> kNames = {{
      {"FLOAT", DType::kF32}, {"UINT8", DType::kU8}, {"INT8", DType::kI8}, {"UINT16", DType::kU16},
      {"INT16", DType::kI16}, {"INT32", DType::kI32}, {"INT64", DType::kI64}, {"STRING", DType::kString},
      {"BOOL", DType::kBool}, {"FLOAT16", DType::kF16}, {"DOUBLE", DType::kF64}, {"UINT32", DType::kU32},
      {"UINT64", DType::kU64}, {"BFLOAT16", DType::kBF16},
  }};
  for (const auto& [n, t] : kNames) {
    if (n == name) return t;
  }
  return invalid_argument("attribute to names an unknown type '{}'", name);
}

Status check_cast_dtype(DType t, std::string_view what) {
  if (t == DType::kString) return not_implemented("casts {} string are not supported", what);
  if (!in_set<TypeSet::kNumericOrBool>(t) && !dtype_is_narrow(t)) {
    return not_implemented("casts {} ONNX type {} are not supported", what, static_cast<int>(t));
  }
  return Status::ok();
}

// Attributes saturate (opset 19+, float8 targets) and round_mode (opset 24+,
// FLOAT8E8M0 targets) of Cast and CastLike.
Result<NarrowCastOptions> read_narrow_options(const ir::Node& node) {
  ir::AttrReader attrs(node);
  NarrowCastOptions options;
  options.saturate = attrs.get_int("saturate", 1) != 0;
  const std::string mode = attrs.get_string("round_mode", "up");
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (mode == "up") {
    options.e8m0_rounding = E8M0Rounding::kUp;
  } else if (mode == "down") {
    options.e8m0_rounding = E8M0Rounding::kDown;
  } else if (mode == "nearest") {
    options.e8m0_rounding = E8M0Rounding::kNearest;
  } else {
    return invalid_argument("attribute round_mode is '{}'; expected 'up', 'down' or 'nearest'", mode);
  }
  return options;
}

Result<std::unique_ptr<OpKernel>> make_cast(const ir::Node& node, DType from, DType to) {
  EMBER_RETURN_IF_ERROR(check_cast_dtype(from, "from"));
  EMBER_RETURN_IF_ERROR(check_cast_dtype(to, "to"));
  EMBER_ASSIGN_OR_RETURN(NarrowCastOptions narrow, read_narrow_options(node));
  return std::unique_ptr<OpKernel>(std::make_unique<CastKernel>(from, to, narrow));
}

Result<std::unique_ptr<OpKernel>> create_cast(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(check_input_count(init, 1, 1));
  const ir::Attribute* to_attr = init.node.find_attr("to");
  if (!to_attr) return invalid_model("attribute to is required");
  DType to;
  if (to_attr->type == ir::AttrType::kString) {
    EMBER_ASSIGN_OR_RETURN(to, dtype_from_name(to_attr->s));
  } else {
    ir::AttrReader attrs(init.node);
    const int64_t v = attrs.get_int("to", 0);
    EMBER_RETURN_IF_ERROR(attrs.status());
    to = static_cast<DType>(v);
  }
  return make_cast(init.node, init.input_dtypes[0], to);
}

Result<std::unique_ptr<OpKernel>> create_cast_like(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(check_input_count(init, 2, 2));
  return make_cast(init.node, init.input_dtypes[0], init.input_dtypes[1]);
}

// BitCast-26: the input's bytes as another type of the same bit width.
class BitCastKernel final : public OpKernel {
 public:
  explicit BitCastKernel(DType to) : to_(to) {}

  Status infer(KernelContext& ctx) const override {
    ctx.set_output(0, to_, ctx.input(0).shape());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    if (to_ == DType::kBool) {  // a bool byte must hold 0 or 1: any other bit pattern reads as true
      const auto* in = static_cast<const uint8_t*>(x.data());
      auto* out = static_cast<uint8_t*>(y.data());
      for (int64_t i = 0; i < x.numel(); ++i) out[i] = in[i] != 0;
    } else if (x.data() != y.data() && x.nbytes() > 0) {
      std::memcpy(y.data(), x.data(), x.nbytes());
    }
    return Status::ok();
  }

  int inplace_input() const override { return 0; }

 private:
  DType to_;
};

Result<std::unique_ptr<OpKernel>> create_bit_cast(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(check_input_count(init, 1, 1));
  ir::AttrReader attrs(init.node);
  const int64_t to_attr = attrs.get_int("to", 0);
  EMBER_RETURN_IF_ERROR(attrs.status());
  const DType from = init.input_dtypes[0];
  if (to_attr <= 0 || to_attr > INT32_MAX || !dtype_is_known(static_cast<int32_t>(to_attr))) {
    return not_implemented("BitCast to ONNX type {} is not supported", to_attr);
  }
  const auto to = static_cast<DType>(to_attr);
  if (from == DType::kString || to == DType::kString) return not_implemented("BitCast of string tensors");
  if (dtype_bits(from) != dtype_bits(to) || dtype_bits(from) == 0) {
    return invalid_argument("BitCast from {} ({} bits) to {} ({} bits): the bit widths must be equal", dtype_name(from),
                            dtype_bits(from), dtype_name(to), dtype_bits(to));
  }
  return std::unique_ptr<OpKernel>(std::make_unique<BitCastKernel>(to));
}

}  // namespace
}  // namespace elementwise

namespace {

// Casts from or to string belong to the string family (kernels/string/string_cast.cpp).
Result<std::unique_ptr<OpKernel>> create_cast_or_string_cast(const KernelInit& init) {
  return string_ops::create_cast_with_strings(init, elementwise::create_cast);
}
Result<std::unique_ptr<OpKernel>> create_cast_like_or_string_cast(const KernelInit& init) {
  return string_ops::create_cast_with_strings(init, elementwise::create_cast_like);
}

}  // namespace

void register_cast_ops(OpRegistry& r) {
  constexpr DTypeSet kCastable = kStandardTypes | kNarrowTypes | kStringType;
  add_op(r, "Cast", 1, create_cast_or_string_cast, kCastable, Fusion::kElementwise);
  add_op(r, "CastLike", 15, create_cast_like_or_string_cast, kCastable);
  add_op(r, "BitCast", 26, elementwise::create_bit_cast, kStandardTypes | kNarrowTypes);
}

}  // namespace ember::kernels
