// Two-input arithmetic: Add, Sub, Mul, Div, Mod, Pow (mixed dtypes), BitShift
// and the bitwise ops.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "kernels/elementwise/binary_kernel.h"

namespace ember::kernels {
namespace elementwise {
namespace {

// Unsigned type integer arithmetic wraps in (at least 32 bits so that
// small types do not promote to a signed int that could overflow).
template <typename C>
using WrapT = std::conditional_t<(sizeof(C) < 4), uint32_t, std::make_unsigned_t<C>>;

template <typename C, typename F>
C wrapping(C a, C b, F f) {
  if constexpr (std::is_integral_v<C>) {
    return static_cast<C>(f(static_cast<WrapT<C>>(a), static_cast<WrapT<C>>(b)));
  } else {
    return f(a, b);
  }
}

struct AddOp {
  static constexpr TypeSet kTypes = TypeSet::kNumeric;
  static constexpr BinaryKind kKind = BinaryKind::kAdd;
  template <typename C> C operator()(C a, C b) const {
    return wrapping(a, b, [](auto x, auto y) { return x + y; });
  }
};
struct SubOp {
  static constexpr TypeSet kTypes = TypeSet::kNumeric;
  static constexpr BinaryKind kKind = BinaryKind::kSub;
  template <typename C> C operator()(C a, C b) const {
    return wrapping(a, b, [](auto x, auto y) { return x - y; });
  }
};
struct MulOp {
  static constexpr TypeSet kTypes = TypeSet::kNumeric;
  static constexpr BinaryKind kKind = BinaryKind::kMul;
  template <typename C> C operator()(C a, C b) const {
    return wrapping(a, b, [](auto x, auto y) { return x * y; });
  }
};
// Integer division truncates toward zero (C semantics, as ONNX specifies).
// Division by zero gives 0 and INT_MIN / -1 wraps, rather than trapping.
struct DivOp {
  static constexpr TypeSet kTypes = TypeSet::kNumeric;
  static constexpr BinaryKind kKind = BinaryKind::kDiv;
  template <typename C> C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if (b == 0) return 0;
      if constexpr (std::is_signed_v<C>) {
        if (b == -1) return wrapping(C(0), a, [](auto x, auto y) { return x - y; });
      }
    }
    return static_cast<C>(a / b);
  }
};

// fmod=0: the remainder takes the sign of the divisor (Python %, numpy.mod;
// floats allowed since opset 24's Mod); fmod=1: C fmod, the sign of the
// dividend. Remainder by zero gives 0 for integers, NaN for floats.
struct ModOp {
  static constexpr TypeSet kTypes = TypeSet::kNumeric;
  bool fmod;
  explicit ModOp(ir::AttrReader& a) : fmod(a.get_int("fmod", 0) != 0) {}
  Status check(DType) const { return Status::ok(); }
  template <typename C> C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      C r = std::fmod(a, b);
      // numpy.mod: a nonzero remainder moves to the divisor's side (a - b * floor(a / b)).
      if (!fmod && r != 0 && ((r < 0) != (b < 0))) r += b;
      return r;
    } else {
      if (b == 0) return 0;
      if constexpr (std::is_signed_v<C>) {
        if (b == -1) return 0;
        C r = static_cast<C>(a % b);
        if (!fmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<C>(r + b);
        return r;
      } else {
        return static_cast<C>(a % b);
      }
    }
  }
};

// BitShift-28 semantics (earlier opsets take unsigned types only, which shift
// the same): a right shift of a signed value is arithmetic, a left shift drops
// the bits past the sign bit, and a shift < 0 or >= the width leaves only the
// sign fill (-1 for a negative value shifted right, else 0).
struct BitShiftOp {
  static constexpr TypeSet kTypes = TypeSet::kInt;
  std::string direction;
  explicit BitShiftOp(ir::AttrReader& a) : direction(a.get_string("direction", "")) {}
  Status check(DType) const {
    if (direction != "LEFT" && direction != "RIGHT") {
      return invalid_argument("attribute direction must be LEFT or RIGHT, got '{}'", direction);
    }
    return Status::ok();
  }
  template <typename C> C operator()(C a, C b) const {
    const bool out_of_range = static_cast<std::make_unsigned_t<C>>(b) >= sizeof(C) * 8;  // a negative b too
    if (direction[0] == 'L') return out_of_range ? C(0) : static_cast<C>(static_cast<WrapT<C>>(a) << b);
    if (!out_of_range) return static_cast<C>(a >> b);
    if constexpr (std::is_signed_v<C>) return a < 0 ? C(-1) : C(0);
    return C(0);
  }
};

struct BitwiseAndOp {
  static constexpr TypeSet kTypes = TypeSet::kInt;
  template <typename C> C operator()(C a, C b) const { return static_cast<C>(a & b); }
};
struct BitwiseOrOp {
  static constexpr TypeSet kTypes = TypeSet::kInt;
  template <typename C> C operator()(C a, C b) const { return static_cast<C>(a | b); }
};
struct BitwiseXorOp {
  static constexpr TypeSet kTypes = TypeSet::kInt;
  template <typename C> C operator()(C a, C b) const { return static_cast<C>(a ^ b); }
};

// Integer power by squaring, wrapping on overflow; negative exponents give the
// truncated reciprocal (0 unless the base is 1 or -1).
template <typename B, typename E>
B int_pow(B base, E e) {
  if constexpr (std::is_signed_v<E>) {
    if (e < 0) {
      if (base == 1) return 1;
      if constexpr (std::is_signed_v<B>) {
        if (base == -1) return (e % 2 == 0) ? 1 : -1;
      }
      return 0;
    }
  }
  WrapT<B> result = 1;
  WrapT<B> b = static_cast<WrapT<B>>(base);
  for (auto n = static_cast<uint64_t>(e); n != 0; n >>= 1) {
    if (n & 1) result = static_cast<WrapT<B>>(result * b);
    b = static_cast<WrapT<B>>(b * b);
  }
  return static_cast<B>(result);
}

// Pow: the output has the base's dtype; the exponent may be any numeric dtype.
template <typename B, typename E>
B pow_value(B base, E exponent) {
  using CB = compute_t<B>;
  using CE = compute_t<E>;
  if constexpr (std::is_integral_v<CB> && std::is_integral_v<CE>) {
    return int_pow(base, exponent);
  } else if constexpr (std::is_floating_point_v<CB>) {
    return static_cast<B>(std::pow(static_cast<CB>(base), static_cast<CB>(static_cast<CE>(exponent))));
  } else {
    return float_to_int<B>(std::pow(static_cast<double>(base), static_cast<double>(static_cast<CE>(exponent))));
  }
}

// Exponents models use most, without std::pow: x*x and x*x*x as ONNX Runtime
// computes them (x*x*x rounds twice, within 1 ulp of pow), x itself, and
// sqrt(x) + 0 for 0.5: IEEE sqrt is correctly rounded and `+ 0` turns
// sqrt(-0) = -0 into pow's +0; pow(-inf, 0.5) is +inf where sqrt gives NaN.
template <typename C>
bool pow_special_exponent(C e) {
  return e == C(2) || e == C(3) || e == C(1) || e == C(0.5);
}

template <typename C>
void pow_scalar_exponent(const C* x, C e, C* y, int64_t n) {
  if (e == C(2)) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * x[i];
  } else if (e == C(3)) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * x[i] * x[i];
  } else if (e == C(1)) {
    if (x != y) std::copy(x, x + n, y);
  } else {
    constexpr C kInf = std::numeric_limits<C>::infinity();
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] == -kInf ? kInf : std::sqrt(x[i]) + C(0);
  }
}

class PowKernel final : public OpKernel {
 public:
  PowKernel(DType base, DType exponent, LegacyBroadcast legacy) : base_(base), exponent_(exponent), legacy_(legacy) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(Shape out, legacy_.output_shape(ctx.input(0).shape(), ctx.input(1).shape()));
    ctx.set_output(0, base_, std::move(out));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    Tensor& out = ctx.output(0);
    const Shape b_shape = legacy_.b_shape(a.shape(), b.shape());
    visit<TypeSet::kNumeric>(base_, [&](auto base_tag) {
      using B = typename decltype(base_tag)::type;
      visit<TypeSet::kNumeric>(exponent_, [&](auto exp_tag) {
        using E = typename decltype(exp_tag)::type;
        const B* pa = a.data_as<B>();
        const E* pb = b.data_as<E>();
        B* po = out.data_as<B>();
        if constexpr (std::is_floating_point_v<B>) {
          const int64_t n = out.numel();
          if (b.numel() == 1 && a.numel() == n) {
            const B e = static_cast<B>(static_cast<compute_t<E>>(pb[0]));
            if (pow_special_exponent(e)) {
              threading::parallel_for(n, kElementwiseGrain, [&](int64_t begin, int64_t end) {
                pow_scalar_exponent(pa + begin, e, po + begin, end - begin);
              });
              return;
            }
          }
        }
        binary_loop(pa, a.shape(), pb, b_shape, po, out.shape(), pow_value<B, E>);
      });
    });
    return Status::ok();
  }

  int inplace_input() const override { return 0; }

 private:
  DType base_;
  DType exponent_;
  LegacyBroadcast legacy_;
};

Result<std::unique_ptr<OpKernel>> create_pow(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(check_input_count(init, 2, 2));
  EMBER_RETURN_IF_ERROR(check_dtype<TypeSet::kNumeric>(init.input_dtypes[0], 0, "Pow"));
  EMBER_RETURN_IF_ERROR(check_dtype<TypeSet::kNumeric>(init.input_dtypes[1], 1, "Pow"));
  EMBER_ASSIGN_OR_RETURN(LegacyBroadcast legacy, LegacyBroadcast::from_node(init.node));
  return std::unique_ptr<OpKernel>(std::make_unique<PowKernel>(init.input_dtypes[0], init.input_dtypes[1], legacy));
}

}  // namespace
}  // namespace elementwise

void register_binary_ops(OpRegistry& r) {
  using namespace elementwise;
  add_op(r, "Add", 1, create_binary<AddOp>, dtype_set(AddOp::kTypes), Fusion::kElementwise);
  add_op(r, "Sub", 1, create_binary<SubOp>, dtype_set(SubOp::kTypes), Fusion::kElementwise);
  add_op(r, "Mul", 1, create_binary<MulOp>, dtype_set(MulOp::kTypes), Fusion::kElementwise);
  add_op(r, "Div", 1, create_binary<DivOp>, dtype_set(DivOp::kTypes), Fusion::kElementwise);
  add_op(r, "Mod", 10, create_binary<ModOp>, dtype_set(ModOp::kTypes));
  add_op(r, "Pow", 1, create_pow, kNumericTypes);
  add_op(r, "BitShift", 11, create_binary<BitShiftOp>, dtype_set(BitShiftOp::kTypes));
  add_op(r, "BitwiseAnd", 18, create_binary<BitwiseAndOp>, dtype_set(BitwiseAndOp::kTypes));
  add_op(r, "BitwiseOr", 18, create_binary<BitwiseOrOp>, dtype_set(BitwiseOrOp::kTypes));
  add_op(r, "BitwiseXor", 18, create_binary<BitwiseXorOp>, dtype_set(BitwiseXorOp::kTypes));
}

}  // namespace ember::kernels
