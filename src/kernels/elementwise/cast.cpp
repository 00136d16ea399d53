// Cast and CastLike between every pair of numeric dtypes and bool.
#include <array>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>

#include "kernels/elementwise/elementwise_common.h"

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

class CastKernel final : public OpKernel {
 public:
  CastKernel(DType from, DType to) : from_(from), to_(to) {}

  Status infer(KernelContext& ctx) const override {
    ctx.set_output(0, to_, ctx.input(0).shape());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const int64_t n = x.numel();
    visit<TypeSet::kNumericOrBool>(from_, [&](auto from_tag) {
      using From = typename decltype(from_tag)::type;
      visit<TypeSet::kNumericOrBool>(to_, [&](auto to_tag) {
        using To = typename decltype(to_tag)::type;
        const From* px = x.data_as<From>();
        To* py = y.data_as<To>();
        for (int64_t i = 0; i < n; ++i) py[i] = cast_value<From, To>(px[i]);
      });
    });
    return Status::ok();
  }

  // Element i is read before it is written, so equal element sizes can share a buffer.
  int inplace_input() const override { return dtype_size(from_) == dtype_size(to_) ? 0 : -1; }

 private:
  DType from_;
  DType to_;
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
  if (!in_set<TypeSet::kNumericOrBool>(t)) {
    return not_implemented("casts {} ONNX type {} are not supported", what, static_cast<int>(t));
  }
  return Status::ok();
}

Result<std::unique_ptr<OpKernel>> make_cast(DType from, DType to) {
  EMBER_RETURN_IF_ERROR(check_cast_dtype(from, "from"));
  EMBER_RETURN_IF_ERROR(check_cast_dtype(to, "to"));
  return std::unique_ptr<OpKernel>(std::make_unique<CastKernel>(from, to));
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
  return make_cast(init.input_dtypes[0], to);
}

Result<std::unique_ptr<OpKernel>> create_cast_like(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(check_input_count(init, 2, 2));
  return make_cast(init.input_dtypes[0], init.input_dtypes[1]);
}

}  // namespace
}  // namespace elementwise

void register_cast_ops(OpRegistry& r) {
  add_op(r, "Cast", 1, elementwise::create_cast);
  add_op(r, "CastLike", 15, elementwise::create_cast_like);
}

}  // namespace ember::kernels
