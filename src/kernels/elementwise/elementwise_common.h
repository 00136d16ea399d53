#pragma once
// Shared machinery of the elementwise family: dtype-set dispatch, broadcast
// walking and the binary/ternary loops. The loops detect the contiguous cases
// (same shape, scalar operand, suffix operand) so a SIMD microkernel can later
// replace exactly those inner loops without touching the op objects.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <type_traits>

#include "base/dtype.h"
#include "base/small_vector.h"
#include "base/tensor.h"
#include "kernels/common/shape_util.h"
#include "kernels/registry.h"
#include "threading/thread_pool.h"

namespace ember::kernels {

void register_unary_ops(OpRegistry& r);
void register_activation_ops(OpRegistry& r);
void register_binary_ops(OpRegistry& r);
void register_compare_logical_ops(OpRegistry& r);
void register_variadic_ops(OpRegistry& r);
void register_where_ops(OpRegistry& r);
void register_cast_ops(OpRegistry& r);

// Adds an ai.onnx entry covering opsets since..newest_opset("") that accepts `types`.
void add_op(OpRegistry& r, std::string_view op_type, int since, KernelFactory f, DTypeSet types = kStandardTypes,
            Fusion fusion = Fusion::kNone);

namespace elementwise {

enum class TypeSet { kFloat, kSignedOrFloat, kNumeric, kInt, kUnsigned, kBool, kNumericOrBool };

// The op table's form of a TypeSet: an op functor's kTypes gives its entry's types.
constexpr DTypeSet dtype_set(TypeSet s) {
  switch (s) {
    case TypeSet::kFloat: return kFloatTypes;
    case TypeSet::kSignedOrFloat: return kFloatTypes | kSignedIntTypes;
    case TypeSet::kNumeric: return kNumericTypes;
    case TypeSet::kInt: return kIntTypes;
    case TypeSet::kUnsigned: return kUnsignedIntTypes;
    case TypeSet::kBool: return kBoolType;
    case TypeSet::kNumericOrBool: return kStandardTypes;
  }
  return {};
}

template <typename T>
struct Tag {
  using type = T;
};

#define EMBER_EW_SIGNED_OR_FLOAT_CASES(T, ...) \
  EMBER_FLOAT_CASES(T, __VA_ARGS__) EMBER_SIGNED_INT_CASES(T, __VA_ARGS__)
#define EMBER_EW_BOOL_CASES(T, ...) EMBER_DTYPE_CASE(kBool, bool, T, __VA_ARGS__)

// Calls f(Tag<T>{}) for the C++ type of `t` when `t` is in set S; returns false otherwise.
// Only the types of S are instantiated, so op functors need only compile for those.
template <TypeSet S, typename F>
bool visit(DType t, F&& f) {
  if constexpr (S == TypeSet::kFloat) {
    EMBER_SWITCH(t, EMBER_FLOAT_CASES, T, { f(Tag<T>{}); return true; }, return false);
  } else if constexpr (S == TypeSet::kSignedOrFloat) {
    EMBER_SWITCH(t, EMBER_EW_SIGNED_OR_FLOAT_CASES, T, { f(Tag<T>{}); return true; }, return false);
  } else if constexpr (S == TypeSet::kNumeric) {
    EMBER_SWITCH(t, EMBER_NUMERIC_CASES, T, { f(Tag<T>{}); return true; }, return false);
  } else if constexpr (S == TypeSet::kInt) {
    EMBER_SWITCH(t, EMBER_INT_CASES, T, { f(Tag<T>{}); return true; }, return false);
  } else if constexpr (S == TypeSet::kUnsigned) {
    EMBER_SWITCH(t, EMBER_UNSIGNED_INT_CASES, T, { f(Tag<T>{}); return true; }, return false);
  } else if constexpr (S == TypeSet::kBool) {
    EMBER_SWITCH(t, EMBER_EW_BOOL_CASES, T, { f(Tag<T>{}); return true; }, return false);
  } else {
    EMBER_SWITCH(t, EMBER_ALL_CASES, T, { f(Tag<T>{}); return true; }, return false);
  }
  return false;
}

template <TypeSet S>
bool in_set(DType t) {
  return visit<S>(t, [](auto) {});
}

std::string_view type_set_name(TypeSet s);

// "input 0 has dtype X; <op> supports <set>" unless `t` is in S.
template <TypeSet S>
Status check_dtype(DType t, size_t input, std::string_view op_type) {
  if (t == DType::kString) return not_implemented("string tensors are not supported (input {})", input);
  if (in_set<S>(t)) return Status::ok();
  return invalid_argument("input {} has dtype {}; {} supports {}", input, dtype_name(t), op_type, type_set_name(S));
}

// Checks the node has between min_inputs and max_inputs inputs and that the first
// min_inputs of them are present.
Status check_input_count(const KernelInit& init, size_t min_inputs, size_t max_inputs);

// The shape input `b` takes under the pre-opset-7 `broadcast`/`axis` attributes:
// B's dims line up with A's starting at `axis` (negative counts from A's rank);
// trailing ones are appended.
Shape legacy_broadcast_shape(std::span<const int64_t> a, std::span<const int64_t> b, int64_t axis);

// Pre-opset-7 broadcasting of binary ops: `broadcast=0` requires equal shapes,
// `broadcast=1` broadcasts B to A (aligned at `axis` when given).
struct LegacyBroadcast {
  static constexpr int64_t kNoAxis = INT64_MIN;  // right-aligned, as numpy
  bool enabled = false;  // opset < 7
  bool broadcast = false;
  int64_t axis = kNoAxis;

  static Result<LegacyBroadcast> from_node(const ir::Node& node);
  Shape b_shape(std::span<const int64_t> a, std::span<const int64_t> b) const;
  Result<Shape> output_shape(std::span<const int64_t> a, std::span<const int64_t> b) const;
};

// Walks a broadcast output in rows of its innermost dimension and gives each
// input's element offset at the row start and its stride along the row.
// Holds no heap memory for rank <= 6 and up to 4 inputs.
class BroadcastRows {
 public:
  explicit BroadcastRows(std::span<const int64_t> out_shape);
  void add_input(std::span<const int64_t> in_shape);

  int64_t num_rows() const { return num_rows_; }
  int64_t row_length() const { return row_length_; }
  int64_t offset(size_t input) const { return offsets_[input]; }
  int64_t row_stride(size_t input) const { return strides_[input * rank_ + rank_ - 1]; }
  void next_row();
  // Positions the walk at the start of row `row` (after all inputs are added).
  void seek(int64_t row);

 private:
  size_t rank_;
  Shape out_;
  Shape index_;
  SmallVector<int64_t, 24> strides_;
  SmallVector<int64_t, 4> offsets_;
  int64_t num_rows_ = 1;
  int64_t row_length_ = 1;
};

// True when `in` (leading ones ignored) equals the trailing dims of `out`.
bool is_suffix_of(std::span<const int64_t> in, std::span<const int64_t> out);

// The smallest equivalent form of a broadcast: output dims of size 1 dropped and
// adjacent dims merged where every input is full on both or broadcast on both.
// Each input comes back padded to the output's rank, so dim d of an input is
// either out[d] or 1. Holds no heap memory for rank <= 6.
struct SimpleBroadcast {
  static constexpr size_t kMaxInputs = 3;
  Shape out;
  Shape in[kMaxInputs];
};
SimpleBroadcast simplify_broadcast(std::span<const int64_t> out_shape,
                                   std::span<const std::span<const int64_t>> inputs);

// Elements per parallel_for range of the elementwise loops. Same-shape f32 Add,
// 1 vs 2 threads: 16 Ki elements 1.86 -> 1.38 us, 8 Ki 1.00 -> 1.01 us (method
// in docs/benchmarks/2026-11-30-thread-grains.md).
inline constexpr int64_t kElementwiseGrain = 8192;

// The three row forms every binary loop reduces to. vs reads b[0]; sv reads a[0].
template <typename A, typename B, typename O, typename F>
struct FunctorRows {
  F f;
  void vv(const A* a, const B* b, O* y, int64_t n) const {
    for (int64_t i = 0; i < n; ++i) y[i] = f(a[i], b[i]);
  }
  void vs(const A* a, const B* b, O* y, int64_t n) const {
    const B c = b[0];
    for (int64_t i = 0; i < n; ++i) y[i] = f(a[i], c);
  }
  void sv(const A* a, const B* b, O* y, int64_t n) const {
    const A c = a[0];
    for (int64_t i = 0; i < n; ++i) y[i] = f(c, b[i]);
  }
};

// One row of a broadcast: each operand is read with stride 1 or 0.
template <typename A, typename B, typename O, class Rows>
void binary_row(const Rows& k, const A* a, bool a_full, const B* b, bool b_full, O* y, int64_t n) {
  if (a_full && b_full) {
    k.vv(a, b, y, n);
  } else if (a_full) {
    k.vs(a, b, y, n);
  } else if (b_full) {
    k.sv(a, b, y, n);
  } else if (n > 0) {
    k.vs(a, b, y, 1);
    for (int64_t i = 1; i < n; ++i) y[i] = y[0];
  }
}

// out = op(a, b) over the numpy broadcast of a_shape and b_shape to out_shape,
// with `k` providing the row forms (see FunctorRows). Flat, row-bias
// ([M, K] with [K]: vv per row), column ([M, K] with [M, 1]: vs per row) and
// general strided walks, split over the thread pool by output elements or rows.
// The output may alias an input of the output's size.
template <typename A, typename B, typename O, class Rows>
void binary_broadcast(const Rows& k, const A* pa, std::span<const int64_t> a_shape, const B* pb,
                      std::span<const int64_t> b_shape, O* po, std::span<const int64_t> out_shape) {
  const int64_t n = shape_numel(out_shape);
  if (n == 0) return;
  const std::span<const int64_t> inputs[] = {a_shape, b_shape};
  const SimpleBroadcast sb = simplify_broadcast(out_shape, inputs);
  const Shape& out = sb.out;
  const Shape& as = sb.in[0];
  const Shape& bs = sb.in[1];
  if (out.size() <= 1) {
    const bool a_full = shape_numel(as) == n, b_full = shape_numel(bs) == n;
    threading::parallel_for(n, kElementwiseGrain, [&](int64_t begin, int64_t end) {
      binary_row(k, pa + (a_full ? begin : 0), a_full, pb + (b_full ? begin : 0), b_full, po + begin, end - begin);
    });
    return;
  }
  const int64_t len = out.back();
  const int64_t rows = n / len;
  const int64_t row_grain = std::max<int64_t>(1, kElementwiseGrain / len);
  if (out.size() == 2) {
    // Each input is [M, K], [1, K] or [M, 1]: row bias, column and outer forms.
    const bool a_rows = as[0] != 1, a_cols = as[1] != 1;
    const bool b_rows = bs[0] != 1, b_cols = bs[1] != 1;
    const int64_t a_step = a_rows ? (a_cols ? len : 1) : 0;
    const int64_t b_step = b_rows ? (b_cols ? len : 1) : 0;
    threading::parallel_for(rows, row_grain, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) binary_row(k, pa + r * a_step, a_cols, pb + r * b_step, b_cols, po + r * len, len);
    });
    return;
  }
  threading::parallel_for(rows, row_grain, [&](int64_t begin, int64_t end) {
    BroadcastRows walk(out);
    walk.add_input(as);
    walk.add_input(bs);
    walk.seek(begin);
    const bool a_full = walk.row_stride(0) != 0, b_full = walk.row_stride(1) != 0;
    for (int64_t r = begin; r < end; ++r, walk.next_row()) {
      binary_row(k, pa + walk.offset(0), a_full, pb + walk.offset(1), b_full, po + r * len, len);
    }
  });
}

// out[i] = f(a[ia], b[ib]) over the broadcast of a_shape and b_shape to out.
// f takes the stored element types and returns O.
template <typename A, typename B, typename O, typename F>
void binary_loop(const A* pa, std::span<const int64_t> a_shape, const B* pb, std::span<const int64_t> b_shape, O* po,
                 std::span<const int64_t> out_shape, F f) {
  binary_broadcast(FunctorRows<A, B, O, F>{f}, pa, a_shape, pb, b_shape, po, out_shape);
}

// Float to integer conversion without undefined behaviour: truncates toward zero;
// NaN gives 0; values beyond int64 saturate; narrower types wrap modulo 2^bits
// like a conversion through int64 (what numpy and x86 produce for in-range values).
template <typename I>
I float_to_int(double v) {
  constexpr double kTwo63 = 9223372036854775808.0;
  if (std::isnan(v)) return I(0);
  if constexpr (std::is_same_v<I, uint64_t>) {
    if (v >= 2.0 * kTwo63) return std::numeric_limits<uint64_t>::max();
    if (v >= kTwo63) return static_cast<uint64_t>(v);
  }
  int64_t i;
  if (v >= kTwo63) {
    i = std::numeric_limits<int64_t>::max();
  } else if (v < -kTwo63) {
    i = std::numeric_limits<int64_t>::min();
  } else {
    i = static_cast<int64_t>(v);
  }
  return static_cast<I>(i);
}

}  // namespace elementwise
}  // namespace ember::kernels
