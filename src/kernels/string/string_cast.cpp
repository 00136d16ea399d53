// Cast between string and numeric tensors, as the Cast spec describes: numbers
// are written in their shortest round-trip decimal form (numpy's str() of the
// value), infinities as "INF"/"-INF" and NaN as "NaN"; strings are read in plain
// or scientific notation, with "INF", "+INF", "-INF" and "NaN" in any case.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>

#include "kernels/string/string_ops.h"

namespace ember::kernels::string_ops {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return std::tolower(x) == std::tolower(y); });
}

template <typename T>
std::string format_number(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "INF" : "-INF";
  }
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, end);
}

template <typename F>
Result<F> parse_float(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (iequals(s, "INF")) return std::numeric_limits<F>::infinity();
  if (iequals(s, "-INF")) return -std::numeric_limits<F>::infinity();
  if (iequals(s, "NaN")) return std::numeric_limits<F>::quiet_NaN();
  F v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || end != s.data() + s.size() || (ec != std::errc() && ec != std::errc::result_out_of_range)) {
    return invalid_argument("'{}' is not a number", s);
  }
  return v;
}

// Integers read as integers when they are plain digits, else as a number truncated toward zero ("100.5" -> 100).
// (Decimal digits by hand: std::from_chars for integers instantiates a TZCNT path
// that the baseline-ISA object check refuses.)
template <typename I>
Result<I> parse_int(std::string_view s) {
  const bool negative = !s.empty() && s.front() == '-';
  std::string_view digits = !s.empty() && (s.front() == '+' || negative) ? s.substr(1) : s;
  bool plain = !digits.empty() && (!negative || std::is_signed_v<I>);
  I v = 0;
  for (char ch : digits) {
    if (!plain) break;
    const I d = static_cast<I>(ch - '0');
    plain = ch >= '0' && ch <= '9' && !__builtin_mul_overflow(v, I(10), &v) &&
            !(negative ? __builtin_sub_overflow(v, d, &v) : __builtin_add_overflow(v, d, &v));
  }
  if (plain) return v;
  EMBER_ASSIGN_OR_RETURN(double d, parse_float<double>(s));
  const double t = std::trunc(d);
  // [min, 2^digits) is exact in double for every integer type.
  if (!(t >= static_cast<double>(std::numeric_limits<I>::min()) && t < std::ldexp(1.0, std::numeric_limits<I>::digits))) {
    return invalid_argument("'{}' is out of range for {}", s, dtype_name(dtype_of<I>));
  }
  return static_cast<I>(t);
}

template <typename T>
Result<T> parse_as(std::string_view s) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    return parse_float<T>(s);
  } else if constexpr (std::is_integral_v<T>) {
    return parse_int<T>(s);
  } else {
    EMBER_ASSIGN_OR_RETURN(float f, parse_float<float>(s));
    return T(f);
  }
}

class StringCastKernel final : public OpKernel {
 public:
  StringCastKernel(DType from, DType to) : from_(from), to_(to) {}

  Status infer(KernelContext& ctx) const override {
    ctx.set_output(0, to_, ctx.input(0).shape());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const int64_t n = x.numel();
    if (from_ == DType::kString && to_ == DType::kString) {
      std::copy_n(x.data_as<std::string>(), n, y.data_as<std::string>());
      return Status::ok();
    }
    Status st;
    if (to_ == DType::kString) {
      auto* out = y.data_as<std::string>();
      EMBER_SWITCH_NUMERIC(from_, T, {
        for (int64_t i = 0; i < n; ++i) out[i] = format_number(static_cast<compute_t<T>>(x.data_as<T>()[i]));
      }, return internal_error("cast from {} to string", dtype_name(from_)));
      return Status::ok();
    }
    const auto* in = x.data_as<std::string>();
    EMBER_SWITCH_NUMERIC(to_, T, {
      T* out = y.data_as<T>();
      for (int64_t i = 0; i < n; ++i) {
        auto v = parse_as<T>(in[i]);
        if (!v.is_ok()) return v.status().with_context(fmt::format("element {}: ", i));
        out[i] = *v;
      }
    }, return internal_error("cast from string to {}", dtype_name(to_)));
    return Status::ok();
  }

 private:
  DType from_, to_;
};

bool castable(DType t) { return t == DType::kString || dtype_is_float(t) || dtype_is_int(t); }

}  // namespace

KernelResult create_cast_with_strings(const KernelInit& init, KernelFactory numeric) {
  const DType from = input_dtype(init, 0);
  DType to = DType::kUndefined;
  if (init.node.op_type == "CastLike") {
    to = input_dtype(init, 1);
  } else if (const ir::Attribute* a = init.node.find_attr("to"); a && a->type == ir::AttrType::kInt) {
    to = static_cast<DType>(a->i);
  }
  if (from != DType::kString && to != DType::kString) return numeric(init);
  if (!castable(from)) return not_implemented("casts from {} to {} are not supported", dtype_name(from), dtype_name(to));
  if (!castable(to)) return not_implemented("casts from {} to {} are not supported", dtype_name(from), dtype_name(to));
  return std::unique_ptr<OpKernel>(std::make_unique<StringCastKernel>(from, to));
}

}  // namespace ember::kernels::string_ops
