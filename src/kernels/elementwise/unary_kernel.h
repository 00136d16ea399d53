#pragma once
// The op object shared by every one-input elementwise op: one loop over numel
// with a per-op functor evaluated in compute_t<T> (f16/bf16 in f32).
#include <memory>
#include <type_traits>

#include "kernels/elementwise/elementwise_common.h"

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

}  // namespace ember::kernels::elementwise
