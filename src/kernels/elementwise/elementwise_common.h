#pragma once
// Shared machinery of the elementwise family: dtype-set dispatch, broadcast
// walking and the binary/ternary loops. The loops detect the contiguous cases
// (same shape, scalar operand, suffix operand) so a SIMD microkernel can later
// replace exactly those inner loops without touching the op objects.
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

namespace ember::kernels {

void register_unary_ops(OpRegistry& r);
void register_activation_ops(OpRegistry& r);
void register_binary_ops(OpRegistry& r);
void register_compare_logical_ops(OpRegistry& r);
void register_variadic_ops(OpRegistry& r);
void register_where_ops(OpRegistry& r);
void register_cast_ops(OpRegistry& r);

// Adds one entry per op covering opsets [since, INT_MAX).
void add_op(OpRegistry& r, std::string_view op_type, int since, KernelFactory f);

namespace elementwise {

enum class TypeSet { kFloat, kSignedOrFloat, kNumeric, kInt, kUnsigned, kBool, kNumericOrBool };

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

// out[i] = f(a[ia], b[ib]) over the broadcast of a_shape and b_shape to out.
// f takes the stored element types and returns O.
template <typename A, typename B, typename O, typename F>
void binary_loop(const A* pa, std::span<const int64_t> a_shape, const B* pb, std::span<const int64_t> b_shape, O* po,
                 std::span<const int64_t> out_shape, F f) {
  const int64_t n = shape_numel(out_shape);
  if (n == 0) return;
  const int64_t na = shape_numel(a_shape);
  const int64_t nb = shape_numel(b_shape);
  if (na == n && nb == n) {
    for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i]);
  } else if (na == n && nb == 1) {
    const B b = pb[0];
    for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], b);
  } else if (na == 1 && nb == n) {
    const A a = pa[0];
    for (int64_t i = 0; i < n; ++i) po[i] = f(a, pb[i]);
  } else if (na == n && is_suffix_of(b_shape, out_shape)) {
    for (int64_t o = 0; o < n; o += nb)
      for (int64_t j = 0; j < nb; ++j) po[o + j] = f(pa[o + j], pb[j]);
  } else if (nb == n && is_suffix_of(a_shape, out_shape)) {
    for (int64_t o = 0; o < n; o += na)
      for (int64_t j = 0; j < na; ++j) po[o + j] = f(pa[j], pb[o + j]);
  } else {
    BroadcastRows rows(out_shape);
    rows.add_input(a_shape);
    rows.add_input(b_shape);
    const int64_t len = rows.row_length();
    const int64_t sa = rows.row_stride(0), sb = rows.row_stride(1);
    for (int64_t r = 0; r < rows.num_rows(); ++r, rows.next_row()) {
      const A* ra = pa + rows.offset(0);
      const B* rb = pb + rows.offset(1);
      O* ro = po + r * len;
      for (int64_t j = 0; j < len; ++j) ro[j] = f(ra[j * sa], rb[j * sb]);
    }
  }
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
