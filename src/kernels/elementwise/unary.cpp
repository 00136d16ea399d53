// One-input math ops: rounding, roots, exponentials, trigonometry, predicates.
#include <cmath>
#include <type_traits>

#include "kernels/elementwise/unary_kernel.h"

namespace ember::kernels {
namespace elementwise {

// Elements per parallel_for range, 1 vs 2 threads (method in
// docs/benchmarks/2026-11-30-thread-grains.md): Relu 16 Ki elements 1.25 -> 1.04 us, 8 Ki 0.68 ->
// 0.74 us; Sigmoid 8 Ki 2.46 -> 1.77 us, 4 Ki 1.29 -> 1.33 us. Cheap ops
// stay on one thread up to 8 Ki elements, transcendental ones up to 4 Ki.
int64_t unary_grain(UnaryKind kind) {
  enum Cost { kCheap, kTranscendental };
  switch (kind) {
#define EMBER_UNARY_KIND(Kind, cost, ...) \
  case UnaryKind::k##Kind:                \
    return cost == kCheap ? 8192 : 4096;
#include "ops/unary_ops.def"
    case UnaryKind::kCount:
      break;
  }
  return 4096;
}

Status UnaryTableKernel::run(KernelContext& ctx) const {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const int64_t n = x.numel();
  if (dtype_ == DType::kF32) {
    const float* xp = x.data_as<float>();
    float* yp = y.data_as<float>();
    threading::parallel_for(n, grain_, [&](int64_t begin, int64_t end) { fn_(xp + begin, yp + begin, end - begin, params_); });
    return Status::ok();
  }
  const ConvertTable& cvt = convert_table();
  const bool f16 = dtype_ == DType::kF16;
  const auto* xp = reinterpret_cast<const uint16_t*>(x.data());
  auto* yp = reinterpret_cast<uint16_t*>(y.data());
  threading::parallel_for(n, grain_, [&](int64_t begin, int64_t end) {
    float buf[kBlock];
    for (int64_t i = begin; i < end; i += kBlock) {
      const int64_t m = end - i < kBlock ? end - i : kBlock;
      (f16 ? cvt.f16_to_f32 : cvt.bf16_to_f32)(xp + i, buf, m);
      fn_(buf, buf, m, params_);
      (f16 ? cvt.f32_to_f16 : cvt.f32_to_bf16)(buf, yp + i, m);
    }
  });
  return Status::ok();
}


namespace {

struct SignOp {
  static constexpr TypeSet kTypes = TypeSet::kNumeric;
  template <typename C> C operator()(C x) const {
    if (x > C(0)) return C(1);
    if constexpr (std::is_signed_v<C>) {
      if (x < C(0)) return C(-1);
    }
    return x;  // 0, or NaN propagated
  }
};

#define EMBER_FLOAT_UNARY_OP(Name, expr)                      \
  struct Name {                                               \
    static constexpr TypeSet kTypes = TypeSet::kFloat;        \
    template <typename C> C operator()(C x) const { return expr; } \
  };

EMBER_FLOAT_UNARY_OP(TanOp, std::tan(x))
EMBER_FLOAT_UNARY_OP(AsinOp, std::asin(x))
EMBER_FLOAT_UNARY_OP(AcosOp, std::acos(x))
EMBER_FLOAT_UNARY_OP(AtanOp, std::atan(x))
EMBER_FLOAT_UNARY_OP(SinhOp, std::sinh(x))
EMBER_FLOAT_UNARY_OP(CoshOp, std::cosh(x))
EMBER_FLOAT_UNARY_OP(AsinhOp, std::asinh(x))
EMBER_FLOAT_UNARY_OP(AcoshOp, std::acosh(x))
EMBER_FLOAT_UNARY_OP(AtanhOp, std::atanh(x))
#undef EMBER_FLOAT_UNARY_OP

struct IsNaNOp {
  static constexpr TypeSet kTypes = TypeSet::kFloat;
  static constexpr bool kBoolOutput = true;
  template <typename C> bool operator()(C x) const { return std::isnan(x); }
};
struct IsInfOp {
  static constexpr TypeSet kTypes = TypeSet::kFloat;
  static constexpr bool kBoolOutput = true;
  bool detect_positive;
  bool detect_negative;
  explicit IsInfOp(ir::AttrReader& a)
      : detect_positive(a.get_int("detect_positive", 1) != 0), detect_negative(a.get_int("detect_negative", 1) != 0) {}
  template <typename C> bool operator()(C x) const {
    return std::isinf(x) && (x > 0 ? detect_positive : detect_negative);
  }
};

struct NotOp {
  static constexpr TypeSet kTypes = TypeSet::kBool;
  bool operator()(bool x) const { return !x; }
};
struct BitwiseNotOp {
  static constexpr TypeSet kTypes = TypeSet::kInt;
  template <typename C> C operator()(C x) const { return static_cast<C>(~x); }
};

}  // namespace
}  // namespace elementwise

void register_unary_ops(OpRegistry& r) {
  using namespace elementwise;
  constexpr int kNewest = 0;
#define EMBER_UNARY_OP(domain, op_type, since, until, Kind, types, ...)                                      \
  r.add(OpEntry{domain, op_type, since, until == kNewest ? newest_opset(domain) : until,                   \
                create_table_op<UnaryKind::k##Kind, TypeSet::types>, dtype_set(TypeSet::types), Fusion::kElementwise});
#include "ops/unary_ops.def"
  add_op(r, "Sign", 9, create_unary<SignOp>);
  add_op(r, "Tan", 7, create_unary<TanOp>);
  add_op(r, "Asin", 7, create_unary<AsinOp>);
  add_op(r, "Acos", 7, create_unary<AcosOp>);
  add_op(r, "Atan", 7, create_unary<AtanOp>);
  add_op(r, "Sinh", 9, create_unary<SinhOp>);
  add_op(r, "Cosh", 9, create_unary<CoshOp>);
  add_op(r, "Asinh", 9, create_unary<AsinhOp>);
  add_op(r, "Acosh", 9, create_unary<AcoshOp>);
  add_op(r, "Atanh", 9, create_unary<AtanhOp>);
  add_op(r, "IsNaN", 9, create_unary<IsNaNOp>);
  add_op(r, "IsInf", 10, create_unary<IsInfOp>);
  add_op(r, "Not", 1, create_unary<NotOp>);
  add_op(r, "BitwiseNot", 18, create_unary<BitwiseNotOp>);
}

}  // namespace ember::kernels
