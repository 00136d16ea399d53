#pragma once
// The op object shared by two-input elementwise ops with numpy broadcasting.
// Nothing shape-dependent is precomputed: run() picks the contiguous fast path
// or the strided broadcast walk for the shapes it is given (binary_loop).
#include <memory>
#include <type_traits>

#include "kernels/elementwise/elementwise_common.h"

namespace ember::kernels::elementwise {

// Op functors declare `static constexpr TypeSet kTypes`, optionally
// `static constexpr bool kBoolOutput = true` (comparisons), may take an
// ir::AttrReader& in their constructor, and may define `Status check(DType) const`
// to validate attributes against the input dtype.
template <class Op>
constexpr bool kBinaryBoolOutput = requires { requires Op::kBoolOutput; };

template <class Op>
class BinaryKernel final : public OpKernel {
 public:
  BinaryKernel(Op op, DType dtype, LegacyBroadcast legacy) : op_(op), dtype_(dtype), legacy_(legacy) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(Shape out, legacy_.output_shape(ctx.input(0).shape(), ctx.input(1).shape()));
    ctx.set_output(0, out_dtype(), std::move(out));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    Tensor& out = ctx.output(0);
    const Shape b_shape = legacy_.b_shape(a.shape(), b.shape());
    visit<Op::kTypes>(dtype_, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      using O = std::conditional_t<kBinaryBoolOutput<Op>, bool, T>;
      const Op& op = op_;
      auto f = [&op](T x, T y) { return static_cast<O>(op(static_cast<C>(x), static_cast<C>(y))); };
      binary_loop(a.data_as<T>(), a.shape(), b.data_as<T>(), b_shape, out.data_as<O>(), out.shape(), f);
    });
    return Status::ok();
  }

  int inplace_input() const override { return out_dtype() == dtype_ ? 0 : -1; }

 private:
  DType out_dtype() const { return kBinaryBoolOutput<Op> ? DType::kBool : dtype_; }

  Op op_;
  DType dtype_;
  LegacyBroadcast legacy_;
};

// Checks two inputs of one dtype in Op::kTypes and builds the kernel.
template <class Op>
Result<std::unique_ptr<OpKernel>> create_binary(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(check_input_count(init, 2, 2));
  const DType dtype = init.input_dtypes[0];
  EMBER_RETURN_IF_ERROR(check_dtype<Op::kTypes>(dtype, 0, init.node.op_type));
  if (init.input_dtypes[1] != dtype) {
    return invalid_argument("inputs have different dtypes: {} and {}", dtype_name(dtype),
                            dtype_name(init.input_dtypes[1]));
  }
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
  if constexpr (requires { op.check(dtype); }) EMBER_RETURN_IF_ERROR(op.check(dtype));
  EMBER_ASSIGN_OR_RETURN(LegacyBroadcast legacy, LegacyBroadcast::from_node(init.node));
  return std::unique_ptr<OpKernel>(std::make_unique<BinaryKernel<Op>>(op, dtype, legacy));
}

}  // namespace ember::kernels::elementwise
