// Comparisons (bool output) and the logical ops on bool tensors.
#include "kernels/elementwise/binary_kernel.h"
#include "kernels/string/string_ops.h"

namespace ember::kernels {
namespace elementwise {
namespace {

#define EMBER_PREDICATE_OP(Name, types, expr)                          \
  struct Name {                                                        \
    static constexpr TypeSet kTypes = types;                           \
    static constexpr bool kBoolOutput = true;                          \
    template <typename C> bool operator()(C a, C b) const { return expr; } \
  };

EMBER_PREDICATE_OP(AndOp, TypeSet::kBool, a && b)
EMBER_PREDICATE_OP(OrOp, TypeSet::kBool, a || b)
EMBER_PREDICATE_OP(XorOp, TypeSet::kBool, a != b)
EMBER_PREDICATE_OP(EqualOp, TypeSet::kNumericOrBool, a == b)
EMBER_PREDICATE_OP(LessOp, TypeSet::kNumeric, a < b)
EMBER_PREDICATE_OP(GreaterOp, TypeSet::kNumeric, a > b)
EMBER_PREDICATE_OP(LessOrEqualOp, TypeSet::kNumeric, a <= b)
EMBER_PREDICATE_OP(GreaterOrEqualOp, TypeSet::kNumeric, a >= b)
#undef EMBER_PREDICATE_OP

// Equal on strings belongs to the string family (kernels/string/string_ops.cpp).
Result<std::unique_ptr<OpKernel>> create_equal(const KernelInit& init) {
  return string_ops::create_equal_with_strings(init, create_binary<EqualOp>);
}

}  // namespace
}  // namespace elementwise

void register_compare_logical_ops(OpRegistry& r) {
  using namespace elementwise;
  add_op(r, "And", 1, create_binary<AndOp>, dtype_set(AndOp::kTypes));
  add_op(r, "Or", 1, create_binary<OrOp>, dtype_set(OrOp::kTypes));
  add_op(r, "Xor", 1, create_binary<XorOp>, dtype_set(XorOp::kTypes));
  add_op(r, "Equal", 1, create_equal, dtype_set(EqualOp::kTypes) | kStringType);
  add_op(r, "Less", 1, create_binary<LessOp>, dtype_set(LessOp::kTypes));
  add_op(r, "Greater", 1, create_binary<GreaterOp>, dtype_set(GreaterOp::kTypes));
  add_op(r, "LessOrEqual", 12, create_binary<LessOrEqualOp>, dtype_set(LessOrEqualOp::kTypes));
  add_op(r, "GreaterOrEqual", 12, create_binary<GreaterOrEqualOp>, dtype_set(GreaterOrEqualOp::kTypes));
}

}  // namespace ember::kernels
