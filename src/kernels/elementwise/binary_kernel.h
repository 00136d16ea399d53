#pragma once
// The op object shared by two-input elementwise ops with numpy broadcasting.
// run() reduces every broadcast to rows of three forms (vv, vs, sv; see
// binary_broadcast). f32 Add/Sub/Mul/Div take the rows from the ISA table picked
// at creation; f16/bf16 convert blocks to f32 around the same rows; every other
// dtype runs the op functor in plain loops.
#include <algorithm>
#include <memory>
#include <type_traits>

#include "kernels/common/convert.h"
#include "kernels/elementwise/binary_ukernels.h"
#include "kernels/elementwise/elementwise_common.h"

namespace ember::kernels::elementwise {

// Op functors declare `static constexpr TypeSet kTypes`, optionally
// `static constexpr bool kBoolOutput = true` (comparisons) or
// `static constexpr BinaryKind kKind` (ops with f32 table microkernels), may take
// an ir::AttrReader& in their constructor, and may define `Status check(DType) const`
// to validate attributes against the input dtype.
template <class Op>
constexpr bool kBinaryBoolOutput = requires { requires Op::kBoolOutput; };
template <class Op>
constexpr bool kHasBinaryKind = requires { Op::kKind; };

template <typename T>
constexpr bool kIsHalf = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

// The f32 rows of one table op.
struct TableRows {
  BinaryF32Fn vv_fn;
  BinaryF32Fn vs_fn;
  BinaryF32Fn sv_fn;
  static TableRows of(const BinaryTable& t, BinaryKind kind) {
    const int k = static_cast<int>(kind);
    return {t.vv[k], t.vs[k], t.sv[k]};
  }
  void vv(const float* a, const float* b, float* y, int64_t n) const { vv_fn(a, b, y, n); }
  void vs(const float* a, const float* b, float* y, int64_t n) const { vs_fn(a, b, y, n); }
  void sv(const float* a, const float* b, float* y, int64_t n) const { sv_fn(a, b, y, n); }
};

// f16/bf16 rows: blocks of both operands are converted to f32 on the stack,
// `inner` (f32 rows) computes, and the result is rounded back to T once, which
// is what computing each element in f32 gives. When O is not T (bool), inner
// writes the output directly.
template <typename T, typename O, class F32Rows>
struct ConvertRows {
  // 3 x 2 KiB of stack; blocks this size run the conversions at full speed.
  static constexpr int64_t kBlock = 512;
  using InnerOut = std::conditional_t<std::is_same_v<O, T>, float, O>;

  F32Rows inner;
  void (*to_f32)(const uint16_t*, float*, int64_t);
  void (*from_f32)(const float*, uint16_t*, int64_t);

  static ConvertRows make(F32Rows inner, const ConvertTable& t) {
    if constexpr (std::is_same_v<T, Float16>) return {inner, t.f16_to_f32, t.f32_to_f16};
    else return {inner, t.bf16_to_f32, t.f32_to_bf16};
  }

  void vv(const T* a, const T* b, O* y, int64_t n) const { rows<true, true>(a, b, y, n); }
  void vs(const T* a, const T* b, O* y, int64_t n) const { rows<true, false>(a, b, y, n); }
  void sv(const T* a, const T* b, O* y, int64_t n) const { rows<false, true>(a, b, y, n); }

 private:
  static const uint16_t* bits(const T* p) { return reinterpret_cast<const uint16_t*>(p); }

  template <bool AFull, bool BFull>
  void rows(const T* a, const T* b, O* y, int64_t n) const {
    float fa[kBlock], fb[kBlock], fy[kBlock];
    if (!AFull) to_f32(bits(a), fa, 1);
    if (!BFull) to_f32(bits(b), fb, 1);
    for (int64_t i = 0; i < n; i += kBlock) {
      const int64_t m = std::min(kBlock, n - i);
      if (AFull) to_f32(bits(a + i), fa, m);
      if (BFull) to_f32(bits(b + i), fb, m);
      InnerOut* out;
      if constexpr (std::is_same_v<O, T>) {
        out = fy;
      } else {
        out = y + i;
      }
      if (AFull && BFull) inner.vv(fa, fb, out, m);
      else if (AFull) inner.vs(fa, fb, out, m);
      else inner.sv(fa, fb, out, m);
      if constexpr (std::is_same_v<O, T>) from_f32(fy, reinterpret_cast<uint16_t*>(y + i), m);
    }
  }
};

template <class Op>
class BinaryKernel final : public OpKernel {
 public:
  BinaryKernel(Op op, DType dtype, LegacyBroadcast legacy) : op_(op), dtype_(dtype), legacy_(legacy) {
    if constexpr (kHasBinaryKind<Op>) table_ = TableRows::of(binary_table(), Op::kKind);
  }

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
      using O = std::conditional_t<kBinaryBoolOutput<Op>, bool, T>;
      const T* pa = a.data_as<T>();
      const T* pb = b.data_as<T>();
      O* po = out.data_as<O>();
      binary_broadcast(rows_for<T, O>(), pa, a.shape(), pb, b_shape, po, out.shape());
    });
    return Status::ok();
  }

  int inplace_input() const override { return out_dtype() == dtype_ ? 0 : -1; }

 private:
  DType out_dtype() const { return kBinaryBoolOutput<Op> ? DType::kBool : dtype_; }

  template <typename T, typename O>
  auto rows_for() const {
    const Op& op = op_;
    if constexpr (kHasBinaryKind<Op> && std::is_same_v<T, float>) {
      return table_;
    } else if constexpr (kIsHalf<T>) {
      using InnerOut = typename ConvertRows<T, O, TableRows>::InnerOut;
      if constexpr (kHasBinaryKind<Op>) {
        return ConvertRows<T, O, TableRows>::make(table_, convert_table());
      } else {
        auto f = [&op](float x, float y) { return static_cast<InnerOut>(op(x, y)); };
        using Inner = FunctorRows<float, float, InnerOut, decltype(f)>;
        return ConvertRows<T, O, Inner>::make(Inner{f}, convert_table());
      }
    } else {
      using C = compute_t<T>;
      auto f = [&op](T x, T y) { return static_cast<O>(op(static_cast<C>(x), static_cast<C>(y))); };
      return FunctorRows<T, T, O, decltype(f)>{f};
    }
  }

  Op op_;
  DType dtype_;
  LegacyBroadcast legacy_;
  TableRows table_{};
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
