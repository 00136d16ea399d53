#pragma once
// The op object shared by every one-input elementwise op: one loop over numel
// with a per-op functor evaluated in compute_t<T> (f16/bf16 in f32).
#include <memory>
#include <type_traits>

#include "kernels/common/convert.h"
#include "kernels/elementwise/elementwise_common.h"
#include "kernels/elementwise/unary_reference.h"
#include "kernels/elementwise/unary_spec.h"
#include "threading/thread_pool.h"

namespace ember::kernels::elementwise {

// Op functors declare `static constexpr TypeSet kTypes`, optionally
// `static constexpr bool kBoolOutput = true` (predicates), and may take an
// ir::AttrReader& in their constructor to read attributes.
template <class Op>
constexpr bool kBoolOutput = requires { requires Op::kBoolOutput; };

template <typename T, typename O, class Op>
void unary_loop(const T* x, O* y, int64_t n, const Op& op) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<O>(op(static_cast<compute_t<T>>(x[i])));
}

template <class Op>
class UnaryKernel final : public OpKernel {
 public:
  UnaryKernel(Op op, DType dtype) : op_(op), dtype_(dtype) {}

  Status infer(KernelContext& ctx) const override {
    ctx.set_output(0, kBoolOutput<Op> ? DType::kBool : dtype_, ctx.input(0).shape());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    visit<Op::kTypes>(dtype_, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using O = std::conditional_t<kBoolOutput<Op>, bool, T>;
      unary_loop(x.data_as<T>(), y.data_as<O>(), x.numel(), op_);
    });
    return Status::ok();
  }

  int inplace_input() const override { return kBoolOutput<Op> ? -1 : 0; }

 private:
  Op op_;
  DType dtype_;
};

template <class Op>
Result<std::unique_ptr<OpKernel>> create_unary(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(check_input_count(init, 1, 1));
  const DType dtype = init.input_dtypes[0];
  EMBER_RETURN_IF_ERROR(check_dtype<Op::kTypes>(dtype, 0, init.node.op_type));
  ir::AttrReader attrs(init.node);
  auto make_op = [&] {
    if constexpr (std::is_constructible_v<Op, ir::AttrReader&>) {
      return Op(attrs);
    } else {
      return Op{};
    }
  };
  Op op = make_op();
  EMBER_RETURN_IF_ERROR(attrs.status());
  return std::unique_ptr<OpKernel>(std::make_unique<UnaryKernel<Op>>(op, dtype));
}

// Elements per parallel_for chunk. Measured with a timing loop over the AVX-512
// microkernels at 1 and 2 threads on the dev machine (2 vCPUs, Zen 5): below
// ~32 Ki elements a memory-bound op (Relu, Neg, ...: ~0.1 ns/element) loses
// more to the hand-off (~2-4 us) than it gains; transcendental ops (0.3-0.8
// ns/element) already gain at ~8 Ki.
int64_t unary_grain(UnaryKind kind);

// f32/f16/bf16 elementwise through a unary_table() entry chosen at creation;
// f16/bf16 convert blocks of kBlock elements on the stack.
class UnaryTableKernel final : public OpKernel {
 public:
  static constexpr int64_t kBlock = 512;

  UnaryTableKernel(UnarySpec spec, DType dtype)
      : fn_(unary_table().get(spec.kind)), params_(spec.params), dtype_(dtype), grain_(unary_grain(spec.kind)) {}

  Status infer(KernelContext& ctx) const override {
    ctx.set_output(0, dtype_, ctx.input(0).shape());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override;

  int inplace_input() const override { return 0; }

 private:
  UnaryF32Fn fn_;
  UnaryParams params_;
  DType dtype_;
  int64_t grain_;
};

// The op of an EMBER_UNARY_OP row on the element types its microkernel does
// not take: the kind's reference (unary_reference.h) in the type's compute
// type. A row's attributes can choose another kind (Gelu's approximate), so
// floating types follow the node's kind; integer types only exist for kinds
// that no attribute changes.
template <UnaryKind K, TypeSet S>
struct TableReferenceOp {
  static constexpr TypeSet kTypes = S;
  UnarySpec spec;
  template <typename C> C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>) {
      return unary_reference(spec.kind, x, spec.params);
    } else {
      return UnaryReference<K>::apply(x, spec.params);
    }
  }
};

// The factory of an EMBER_UNARY_OP row: f32, f16 and bf16 through the
// unary_table() entry, the other types of S through the reference.
template <UnaryKind K, TypeSet S>
Result<std::unique_ptr<OpKernel>> create_table_op(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(check_input_count(init, 1, 1));
  const DType dtype = init.input_dtypes[0];
  EMBER_ASSIGN_OR_RETURN(std::optional<UnarySpec> spec, unary_spec(init.node));
  if (!spec) return internal_error("{}: not a row of the unary op table", init.node.op_type);
  if (dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16) {
    return std::unique_ptr<OpKernel>(std::make_unique<UnaryTableKernel>(*spec, dtype));
  }
  EMBER_RETURN_IF_ERROR(check_dtype<S>(dtype, 0, init.node.op_type));
  return std::unique_ptr<OpKernel>(std::make_unique<UnaryKernel<TableReferenceOp<K, S>>>(TableReferenceOp<K, S>{*spec}, dtype));
}

}  // namespace ember::kernels::elementwise
