// Max, Min, Sum, Mean over any number of inputs with numpy broadcasting, as
// repeated binary ops into the output: out = in0 op in1, then out = out op in_i
// (the reference's left-to-right order, so sums round identically). f32 runs
// the binary table's microkernels. f16/bf16 accumulate all inputs in f32 and
// round once, per element. Every output element reads input 0 at its position
// before it is written, so the output may share input 0's buffer.
#include <cstring>
#include <type_traits>

#include "kernels/elementwise/binary_kernel.h"

namespace ember::kernels {
namespace elementwise {
namespace {

// NaN in either operand propagates, as numpy's maximum/minimum do.
struct MaxOp {
  static constexpr BinaryKind kKind = BinaryKind::kMax;
  template <typename C> C combine(C acc, C x) const { return (acc != acc || acc > x) ? acc : x; }
  template <typename C> C finish(C acc, int64_t) const { return acc; }
};
struct MinOp {
  static constexpr BinaryKind kKind = BinaryKind::kMin;
  template <typename C> C combine(C acc, C x) const { return (acc != acc || acc < x) ? acc : x; }
  template <typename C> C finish(C acc, int64_t) const { return acc; }
};
struct SumOp {
  static constexpr BinaryKind kKind = BinaryKind::kAdd;
  template <typename C> C combine(C acc, C x) const {
    if constexpr (std::is_integral_v<C>) {
      return static_cast<C>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(x));
    } else {
      return acc + x;
    }
  }
  template <typename C> C finish(C acc, int64_t) const { return acc; }
};
struct MeanOp {
  static constexpr BinaryKind kKind = BinaryKind::kAdd;
  static constexpr bool kDivides = true;
  template <typename C> C combine(C acc, C x) const { return SumOp().combine(acc, x); }
  template <typename C> C finish(C acc, int64_t n) const { return static_cast<C>(acc / static_cast<C>(n)); }
};

template <class Op>
class VariadicKernel final : public OpKernel {
 public:
  explicit VariadicKernel(DType dtype)
      : dtype_(dtype),
        combine_(TableRows::of(binary_table(), Op::kKind)),
        divide_(TableRows::of(binary_table(), BinaryKind::kDiv)) {}

  Status infer(KernelContext& ctx) const override {
    Shape out = ctx.input(0).shape();
    for (size_t i = 1; i < ctx.num_inputs(); ++i) {
      auto s = broadcast_shapes(out, ctx.input(i).shape());
      if (!s.is_ok()) return s.status().with_context(fmt::format("input {}: ", i));
      out = std::move(s.value());
    }
    ctx.set_output(0, dtype_, std::move(out));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    visit<TypeSet::kNumeric>(dtype_, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (kIsHalf<T>) {
        run_typed<T>(ctx);
      } else if constexpr (std::is_same_v<T, float>) {
        run_repeated<T>(ctx, combine_, divide_);
      } else {
        auto combine = [](T acc, T x) { return Op().combine(acc, x); };
        auto divide = [](T acc, T count) { return static_cast<T>(acc / count); };
        run_repeated<T>(ctx, FunctorRows<T, T, T, decltype(combine)>{combine},
                        FunctorRows<T, T, T, decltype(divide)>{divide});
      }
    });
    return Status::ok();
  }

  int inplace_input() const override { return 0; }

 private:
  template <typename T, class Combine, class Divide>
  void run_repeated(KernelContext& ctx, const Combine& combine, const Divide& divide) const {
    Tensor& out = ctx.output(0);
    T* po = out.data_as<T>();
    const Tensor& in0 = ctx.input(0);
    const size_t k = ctx.num_inputs();
    if (out.numel() == 0) return;
    if (k == 1) {
      if (in0.data() != out.data()) std::memcpy(po, in0.data(), out.nbytes());
      return;
    }
    binary_broadcast(combine, in0.data_as<T>(), in0.shape(), ctx.input(1).data_as<T>(), ctx.input(1).shape(), po,
                     out.shape());
    for (size_t i = 2; i < k; ++i) {
      binary_broadcast(combine, po, out.shape(), ctx.input(i).data_as<T>(), ctx.input(i).shape(), po, out.shape());
    }
    if constexpr (requires { Op::kDivides; }) {
      const T count = static_cast<T>(k);
      binary_broadcast(divide, po, out.shape(), &count, Shape{}, po, out.shape());
    }
  }

  // f16/bf16: one f32 accumulator per element over all inputs, rounded once.
  template <typename T>
  void run_typed(KernelContext& ctx) const {
    using C = compute_t<T>;
    Tensor& out = ctx.output(0);
    T* po = out.data_as<T>();
    const int64_t n = out.numel();
    const size_t k = ctx.num_inputs();
    const auto count = static_cast<int64_t>(k);
    if (n == 0) return;
    SmallVector<const T*, 8> in(k);
    bool same_shape = true;
    for (size_t i = 0; i < k; ++i) {
      in[i] = ctx.input(i).template data_as<T>();
      same_shape = same_shape && ctx.input(i).numel() == n;
    }
    const Op op;
    if (same_shape) {
      for (int64_t j = 0; j < n; ++j) {
        C acc = static_cast<C>(in[0][j]);
        for (size_t i = 1; i < k; ++i) acc = op.combine(acc, static_cast<C>(in[i][j]));
        po[j] = static_cast<T>(op.finish(acc, count));
      }
      return;
    }
    BroadcastRows rows(out.shape());
    for (size_t i = 0; i < k; ++i) rows.add_input(ctx.input(i).shape());
    const int64_t len = rows.row_length();
    for (int64_t r = 0; r < rows.num_rows(); ++r, rows.next_row()) {
      T* ro = po + r * len;
      for (int64_t j = 0; j < len; ++j) {
        C acc = static_cast<C>(in[0][rows.offset(0) + j * rows.row_stride(0)]);
        for (size_t i = 1; i < k; ++i) {
          acc = op.combine(acc, static_cast<C>(in[i][rows.offset(i) + j * rows.row_stride(i)]));
        }
        ro[j] = static_cast<T>(op.finish(acc, count));
      }
    }
  }

  DType dtype_;
  TableRows combine_;
  TableRows divide_;
};

template <class Op>
Result<std::unique_ptr<OpKernel>> create_variadic(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(check_input_count(init, 1, SIZE_MAX));
  const DType dtype = init.input_dtypes[0];
  EMBER_RETURN_IF_ERROR(check_dtype<TypeSet::kNumeric>(dtype, 0, init.node.op_type));
  for (size_t i = 1; i < init.input_dtypes.size(); ++i) {
    if (init.input_dtypes[i] != dtype) {
      return invalid_argument("input {} has dtype {}, expected {} like input 0", i, dtype_name(init.input_dtypes[i]),
                              dtype_name(dtype));
    }
  }
  return std::unique_ptr<OpKernel>(std::make_unique<VariadicKernel<Op>>(dtype));
}

}  // namespace
}  // namespace elementwise

void register_variadic_ops(OpRegistry& r) {
  using namespace elementwise;
  add_op(r, "Max", 1, create_variadic<MaxOp>, kNumericTypes, Fusion::kElementwise);
  add_op(r, "Min", 1, create_variadic<MinOp>, kNumericTypes, Fusion::kElementwise);
  add_op(r, "Sum", 1, create_variadic<SumOp>, kNumericTypes);
  add_op(r, "Mean", 1, create_variadic<MeanOp>, kNumericTypes);
}

}  // namespace ember::kernels
