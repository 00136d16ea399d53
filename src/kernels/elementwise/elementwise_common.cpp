#include "kernels/elementwise/elementwise_common.h"

#include <algorithm>
#include <cassert>

namespace ember::kernels {

void add_op(OpRegistry& r, std::string_view op_type, int since, KernelFactory f, DTypeSet types, Fusion fusion) {
  r.add(up_to_newest("", op_type, since, f, types, fusion));
}

namespace elementwise {

std::string_view type_set_name(TypeSet s) {
  switch (s) {
    case TypeSet::kFloat: return "float16/bfloat16/float32/float64";
    case TypeSet::kSignedOrFloat: return "float and signed integer dtypes";
    case TypeSet::kNumeric: return "float and integer dtypes";
    case TypeSet::kInt: return "integer dtypes";
    case TypeSet::kUnsigned: return "unsigned integer dtypes";
    case TypeSet::kBool: return "bool";
    case TypeSet::kNumericOrBool: return "numeric dtypes and bool";
  }
  return "?";
}

Status check_input_count(const KernelInit& init, size_t min_inputs, size_t max_inputs) {
  const size_t n = init.input_dtypes.size();
  if (n < min_inputs || n > max_inputs) {
    if (min_inputs == max_inputs) return invalid_model("expects {} inputs, got {}", min_inputs, n);
    if (max_inputs == SIZE_MAX) return invalid_model("expects at least {} inputs, got {}", min_inputs, n);
    return invalid_model("expects {} to {} inputs, got {}", min_inputs, max_inputs, n);
  }
  for (size_t i = 0; i < min_inputs; ++i) {
    if (init.input_dtypes[i] == DType::kUndefined) return invalid_model("input {} is required", i);
  }
  return Status::ok();
}

Result<LegacyBroadcast> LegacyBroadcast::from_node(const ir::Node& node) {
  LegacyBroadcast lb;
  if (node.opset >= 7) return lb;
  ir::AttrReader attrs(node);
  lb.enabled = true;
  lb.broadcast = attrs.get_int("broadcast", 0) != 0;
  lb.axis = attrs.has("axis") ? attrs.get_int("axis", 0) : kNoAxis;
  EMBER_RETURN_IF_ERROR(attrs.status());
  return lb;
}

Shape legacy_broadcast_shape(std::span<const int64_t> a, std::span<const int64_t> b, int64_t axis) {
  Shape s(b);
  const int64_t rank = static_cast<int64_t>(a.size());
  const int64_t start = axis < 0 ? axis + rank : axis;
  while (start + static_cast<int64_t>(s.size()) < rank) s.push_back(1);
  return s;
}

Shape LegacyBroadcast::b_shape(std::span<const int64_t> a, std::span<const int64_t> b) const {
  if (!enabled || !broadcast || axis == kNoAxis) return Shape(b);
  return legacy_broadcast_shape(a, b, axis);
}

Result<Shape> LegacyBroadcast::output_shape(std::span<const int64_t> a, std::span<const int64_t> b) const {
  if (!enabled) return broadcast_shapes(a, b);
  if (!broadcast) {
    if (!std::equal(a.begin(), a.end(), b.begin(), b.end())) {
      return invalid_argument("shapes {} and {} differ and attribute broadcast is 0", shape_to_string(a),
                              shape_to_string(b));
    }
    return Shape(a);
  }
  if (axis != kNoAxis) {
    const int64_t rank = static_cast<int64_t>(a.size());
    const int64_t start = axis < 0 ? axis + rank : axis;
    if (start < 0 || start + static_cast<int64_t>(b.size()) > rank) {
      return invalid_argument("axis {} does not place B {} inside A {}", axis, shape_to_string(b), shape_to_string(a));
    }
  }
  const Shape bs = b_shape(a, b);
  auto out = broadcast_shapes(a, bs);
  if (!out.is_ok() || !(out.value() == Shape(a))) {
    return invalid_argument("B {} cannot be broadcast to A {}", shape_to_string(b), shape_to_string(a));
  }
  return out;
}

BroadcastRows::BroadcastRows(std::span<const int64_t> out_shape) : out_(out_shape) {
  if (out_.empty()) out_.push_back(1);
  rank_ = out_.size();
  index_.resize(rank_, 0);
  row_length_ = out_.back();
  for (size_t d = 0; d + 1 < rank_; ++d) num_rows_ *= out_[d];
}

void BroadcastRows::add_input(std::span<const int64_t> in_shape) {
  const Shape s = broadcast_strides(in_shape, out_);
  for (int64_t v : s) strides_.push_back(v);
  offsets_.push_back(0);
}

void BroadcastRows::next_row() {
  const size_t inputs = offsets_.size();
  for (size_t d = rank_ - 1; d-- > 0;) {
    ++index_[d];
    for (size_t k = 0; k < inputs; ++k) offsets_[k] += strides_[k * rank_ + d];
    if (index_[d] < out_[d]) return;
    for (size_t k = 0; k < inputs; ++k) offsets_[k] -= strides_[k * rank_ + d] * out_[d];
    index_[d] = 0;
  }
}

void BroadcastRows::seek(int64_t row) {
  const size_t inputs = offsets_.size();
  for (size_t k = 0; k < inputs; ++k) offsets_[k] = 0;
  for (size_t d = rank_ - 1; d-- > 0;) {
    index_[d] = row % out_[d];
    row /= out_[d];
    for (size_t k = 0; k < inputs; ++k) offsets_[k] += strides_[k * rank_ + d] * index_[d];
  }
}

SimpleBroadcast simplify_broadcast(std::span<const int64_t> out_shape,
                                   std::span<const std::span<const int64_t>> inputs) {
  assert(inputs.size() <= SimpleBroadcast::kMaxInputs);
  const size_t rank = out_shape.size();
  const size_t count = inputs.size();
  SimpleBroadcast r;
  // full[k] of the previous kept dim, to decide whether the next one merges into it.
  bool prev_full[SimpleBroadcast::kMaxInputs] = {};
  for (size_t d = 0; d < rank; ++d) {
    const int64_t extent = out_shape[d];
    if (extent == 1) continue;
    bool full[SimpleBroadcast::kMaxInputs] = {};
    bool same = !r.out.empty();
    for (size_t k = 0; k < count; ++k) {
      const size_t in_rank = inputs[k].size();
      full[k] = d + in_rank >= rank && inputs[k][d + in_rank - rank] != 1;
      same = same && full[k] == prev_full[k];
    }
    if (same) {
      r.out.back() *= extent;
      for (size_t k = 0; k < count; ++k) r.in[k].back() *= full[k] ? extent : 1;
    } else {
      r.out.push_back(extent);
      for (size_t k = 0; k < count; ++k) r.in[k].push_back(full[k] ? extent : 1);
    }
    for (size_t k = 0; k < count; ++k) prev_full[k] = full[k];
  }
  return r;
}

bool is_suffix_of(std::span<const int64_t> in, std::span<const int64_t> out) {
  size_t first = 0;
  while (first < in.size() && in[first] == 1) ++first;
  const size_t len = in.size() - first;
  if (len > out.size()) return false;
  return std::equal(in.begin() + static_cast<std::ptrdiff_t>(first), in.end(),
                    out.end() - static_cast<std::ptrdiff_t>(len));
}

}  // namespace elementwise
}  // namespace ember::kernels
