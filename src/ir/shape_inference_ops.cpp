// Shape rules for elementwise ops and the tensor-manipulation ops that shape
// tensors flow through (Shape, Gather, Slice, Concat, Reshape, ...).
#include <algorithm>
#include <climits>

#include "ir/shape_inference_internal.h"

namespace ember::ir::shape_inference_detail {

using Contents = std::vector<DimExpr>;

Result<size_t> normalize_axis(int64_t axis, size_t rank) {
  auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) return invalid_model("axis {} is out of range for rank {}", axis, rank);
  return static_cast<size_t>(axis < 0 ? axis + r : axis);
}

Result<DimExpr> broadcast_dim(const DimExpr& a, const DimExpr& b) {
  auto ca = a.as_constant(), cb = b.as_constant();
  if (ca && cb) {
    if (*ca == *cb || *cb == 1) return a;
    if (*ca == 1) return b;
    return invalid_model("dimensions {} and {} do not broadcast", *ca, *cb);
  }
  if (ca == 1) return b;
  if (cb == 1) return a;
  if (a.same_as(b)) return a;
  // A size other than 1 is what the other side must broadcast to (or equal).
  if (ca) return a;
  if (cb) return b;
  return DimExpr{};
}

Result<SymShape> broadcast_shapes(const SymShape& a, const SymShape& b) {
  size_t rank = std::max(a.size(), b.size());
  SymShape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const DimExpr one = DimExpr::constant(1);
    const DimExpr& da = i < rank - a.size() ? one : a[i - (rank - a.size())];
    const DimExpr& db = i < rank - b.size() ? one : b[i - (rank - b.size())];
    auto d = broadcast_dim(da, db);
    if (!d.is_ok()) {
      return invalid_model("shapes {} and {} do not broadcast: {}", sym_shape_to_string(a), sym_shape_to_string(b),
                           d.status().message());
    }
    out[i] = *d;
  }
  return out;
}

Result<SymShape> unknown_dims(int64_t rank, size_t input) {
  if (rank < 0 || rank > static_cast<int64_t>(kMaxRank)) {
    return invalid_model("input {} (a shape) has {} elements: a tensor has at most {} dims", input, rank, kMaxRank);
  }
  return SymShape(static_cast<size_t>(rank));
}

DimExpr product(const SymShape& dims, size_t begin, size_t end) {
  DimExpr p = DimExpr::constant(1);
  for (size_t i = begin; i < end && i < dims.size(); ++i) p = p * dims[i];
  return p;
}

void set_output(OpContext& ctx, size_t i, DType dtype, std::optional<SymShape> shape, std::optional<Contents> contents) {
  if (i >= ctx.outputs.size()) return;
  SymbolicValue& out = ctx.outputs[i];
  out.dtype = dtype;
  out.shape = std::move(shape);
  bool small_int = dtype_is_int(dtype) || dtype == DType::kBool;
  if (contents && small_int && out.shape && out.shape->size() <= 1) out.contents = std::move(contents);
}

Status same_as_input(OpContext& ctx) {
  const SymShape* s = ctx.shape(0);
  set_output(ctx, 0, ctx.dtype(0), s ? std::optional<SymShape>(*s) : std::nullopt);
  return Status::ok();
}

namespace {

// The axes of a node: an attribute up to `input_since`, input `input` from then on.
std::optional<std::vector<int64_t>> axes_of(OpContext& ctx, int input_since, size_t input, const char* attr = "axes") {
  if (ctx.opset() < input_since) {
    if (!ctx.attrs.has(attr)) return std::nullopt;
    return ctx.attrs.get_ints(attr);
  }
  return ctx.ints(input);
}

// ------------------------------------------------------------ elementwise

using ContentsFn = DimExpr (*)(const DimExpr&, const DimExpr&);

// Elementwise over 0-D/1-D contents with broadcasting of a single element.
std::optional<Contents> zip(const Contents* a, const Contents* b, ContentsFn fn) {
  if (!a || !b) return std::nullopt;
  size_t n = std::max(a->size(), b->size());
  if ((a->size() != n && a->size() != 1) || (b->size() != n && b->size() != 1)) return std::nullopt;
  Contents r;
  for (size_t i = 0; i < n; ++i) r.push_back(fn((*a)[a->size() == 1 ? 0 : i], (*b)[b->size() == 1 ? 0 : i]));
  return r;
}

DimExpr both_constant(const DimExpr& a, const DimExpr& b, int64_t (*f)(int64_t, int64_t)) {
  auto ca = a.as_constant(), cb = b.as_constant();
  return ca && cb ? DimExpr::constant(f(*ca, *cb)) : DimExpr{};
}

DimExpr add_contents(const DimExpr& a, const DimExpr& b) { return a + b; }
DimExpr sub_contents(const DimExpr& a, const DimExpr& b) { return a - b; }
DimExpr mul_contents(const DimExpr& a, const DimExpr& b) { return a * b; }
DimExpr div_contents(const DimExpr& a, const DimExpr& b) {
  auto ca = a.as_constant(), cb = b.as_constant();
  if (ca && cb) return *cb == 0 ? DimExpr{} : DimExpr::constant(*ca / *cb);  // integer Div truncates
  return floor_div(a, b);  // dims are non-negative, where truncation and floor agree
}
DimExpr max_contents(const DimExpr& a, const DimExpr& b) {
  if (a.same_as(b)) return a;
  return both_constant(a, b, [](int64_t x, int64_t y) { return std::max(x, y); });
}
DimExpr min_contents(const DimExpr& a, const DimExpr& b) {
  if (a.same_as(b)) return a;
  return both_constant(a, b, [](int64_t x, int64_t y) { return std::min(x, y); });
}
DimExpr equal_contents(const DimExpr& a, const DimExpr& b) {
  auto diff = (a - b).as_constant();
  if (diff) return DimExpr::constant(*diff == 0);
  // A symbolic dim is never negative (the "-1 means infer" test of exporters).
  auto ca = a.as_constant(), cb = b.as_constant();
  if ((ca && *ca < 0 && b.known()) || (cb && *cb < 0 && a.known())) return DimExpr::constant(0);
  return {};
}
DimExpr less_contents(const DimExpr& a, const DimExpr& b) {
  return both_constant(a, b, [](int64_t x, int64_t y) -> int64_t { return x < y; });
}
DimExpr greater_contents(const DimExpr& a, const DimExpr& b) { return less_contents(b, a); }
DimExpr and_contents(const DimExpr& a, const DimExpr& b) {
  return both_constant(a, b, [](int64_t x, int64_t y) -> int64_t { return x && y; });
}
DimExpr or_contents(const DimExpr& a, const DimExpr& b) {
  return both_constant(a, b, [](int64_t x, int64_t y) -> int64_t { return x || y; });
}

Status broadcast_all(OpContext& ctx, DType dtype, ContentsFn fn) {
  std::optional<SymShape> shape = SymShape{};
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    if (!ctx.shape(i)) {
      shape.reset();
      break;
    }
    EMBER_ASSIGN_OR_RETURN(*shape, broadcast_shapes(*shape, *ctx.shape(i)));
  }
  std::optional<Contents> contents;
  if (fn && ctx.num_inputs() == 2) contents = zip(ctx.contents(0), ctx.contents(1), fn);
  set_output(ctx, 0, dtype, std::move(shape), std::move(contents));
  return Status::ok();
}

DType first_dtype(const OpContext& ctx) {
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (ctx.dtype(i) != DType::kUndefined) return ctx.dtype(i);
  }
  return DType::kUndefined;
}

template <ContentsFn fn>
Status arith(OpContext& ctx) { return broadcast_all(ctx, first_dtype(ctx), fn); }
Status arith_plain(OpContext& ctx) { return broadcast_all(ctx, first_dtype(ctx), nullptr); }
template <ContentsFn fn>
Status compare(OpContext& ctx) { return broadcast_all(ctx, DType::kBool, fn); }
Status compare_plain(OpContext& ctx) { return broadcast_all(ctx, DType::kBool, nullptr); }

Status to_bool(OpContext& ctx) {
  set_output(ctx, 0, DType::kBool, opt_shape(ctx.shape(0)));
  return Status::ok();
}

Status identity(OpContext& ctx) {
  std::optional<Contents> c;
  if (ctx.contents(0)) c = *ctx.contents(0);
  set_output(ctx, 0, ctx.dtype(0), opt_shape(ctx.shape(0)), std::move(c));
  return Status::ok();
}

Status neg(OpContext& ctx) {
  std::optional<Contents> c;
  if (const Contents* in = ctx.contents(0)) {
    c.emplace();
    for (const DimExpr& e : *in) c->push_back(e * DimExpr::constant(-1));
  }
  set_output(ctx, 0, ctx.dtype(0), opt_shape(ctx.shape(0)), std::move(c));
  return Status::ok();
}

Status dropout(OpContext& ctx) {
  EMBER_RETURN_IF_ERROR(same_as_input(ctx));
  // The mask is bool from opset 10; before, it has the data's type.
  set_output(ctx, 1, ctx.opset() >= 10 ? DType::kBool : ctx.dtype(0), opt_shape(ctx.shape(0)));
  return Status::ok();
}

Status where(OpContext& ctx) {
  EMBER_RETURN_IF_ERROR(broadcast_all(ctx, ctx.dtype(1) != DType::kUndefined ? ctx.dtype(1) : ctx.dtype(2), nullptr));
  auto cond = ctx.ints(0);
  const Contents* x = ctx.contents(1);
  const Contents* y = ctx.contents(2);
  if (!cond || !x || !y) return Status::ok();
  size_t n = std::max({cond->size(), x->size(), y->size()});
  auto fits = [n](size_t k) { return k == n || k == 1; };
  if (!fits(cond->size()) || !fits(x->size()) || !fits(y->size())) return Status::ok();
  Contents r;
  auto at = [](const auto& v, size_t i) { return v[v.size() == 1 ? 0 : i]; };
  for (size_t i = 0; i < n; ++i) r.push_back(at(*cond, i) ? at(*x, i) : at(*y, i));
  set_output(ctx, 0, ctx.outputs[0].dtype, ctx.outputs[0].shape, std::move(r));
  return Status::ok();
}

Status cast(OpContext& ctx) {
  int64_t to = ctx.attrs.get_int("to", 0);
  DType dt = dtype_is_known(static_cast<int32_t>(to)) ? static_cast<DType>(to) : DType::kUndefined;
  std::optional<Contents> c;
  bool int_to_int = dtype_is_int(dt) && (dtype_is_int(ctx.dtype(0)) || ctx.dtype(0) == DType::kBool);
  if (int_to_int && ctx.contents(0)) c = *ctx.contents(0);
  set_output(ctx, 0, dt, opt_shape(ctx.shape(0)), std::move(c));
  return Status::ok();
}

Status bit_cast(OpContext& ctx) {
  int64_t to = ctx.attrs.get_int("to", 0);
  DType dt = dtype_is_known(static_cast<int32_t>(to)) ? static_cast<DType>(to) : DType::kUndefined;
  set_output(ctx, 0, dt, opt_shape(ctx.shape(0)), std::nullopt);
  return Status::ok();
}

Status cast_like(OpContext& ctx) {
  std::optional<Contents> c;
  if (dtype_is_int(ctx.dtype(1)) && dtype_is_int(ctx.dtype(0)) && ctx.contents(0)) c = *ctx.contents(0);
  set_output(ctx, 0, ctx.dtype(1), opt_shape(ctx.shape(0)), std::move(c));
  return Status::ok();
}

// ------------------------------------------------------------ shape tensors

Status shape_op(OpContext& ctx) {
  const SymShape* s = ctx.shape(0);
  if (!s) {
    set_output(ctx, 0, DType::kI64, SymShape{DimExpr{}});
    return Status::ok();
  }
  auto rank = static_cast<int64_t>(s->size());
  auto clamp = [rank](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  int64_t start = clamp(ctx.attrs.get_int("start", 0));
  int64_t end = clamp(ctx.attrs.get_int("end", rank));
  Contents c(s->begin() + start, s->begin() + std::max(start, end));
  set_output(ctx, 0, DType::kI64, SymShape{DimExpr::constant(static_cast<int64_t>(c.size()))}, c);
  return Status::ok();
}

Status size_op(OpContext& ctx) {
  const SymShape* s = ctx.shape(0);
  set_output(ctx, 0, DType::kI64, SymShape{}, Contents{s ? product(*s, 0, s->size()) : DimExpr{}});
  return Status::ok();
}

// A shape given by input `i`: its contents, or just its rank from its length.
Result<std::optional<SymShape>> shape_from_input(const OpContext& ctx, size_t i) {
  if (const Contents* c = ctx.contents(i)) return std::optional<SymShape>(*c);
  const SymShape* s = ctx.shape(i);
  if (s && s->size() == 1) {
    if (auto n = (*s)[0].as_constant()) {
      EMBER_ASSIGN_OR_RETURN(SymShape dims, unknown_dims(*n, i));
      return std::optional<SymShape>(std::move(dims));
    }
  }
  return std::optional<SymShape>();
}

Status constant_of_shape(OpContext& ctx) {
  const Attribute* value = ctx.node.find_attr("value");
  DType dt = value && value->type == AttrType::kTensor ? value->t.dtype() : DType::kF32;
  EMBER_ASSIGN_OR_RETURN(std::optional<SymShape> shape, shape_from_input(ctx, 0));
  std::optional<Contents> c;
  if (shape && shape->size() == 1 && value && value->t.numel() == 1) {
    auto fill = contents_of(value->t);
    auto n = (*shape)[0].as_constant();
    if (fill && n && *n <= static_cast<int64_t>(kMaxContents)) c = Contents(static_cast<size_t>(*n), (*fill)[0]);
  }
  set_output(ctx, 0, dt, std::move(shape), std::move(c));
  return Status::ok();
}

Status range(OpContext& ctx) {
  DType dt = ctx.dtype(0);
  const Contents* s = ctx.contents(0);
  const Contents* l = ctx.contents(1);
  auto delta = ctx.ints(2);
  DimExpr n;
  std::optional<Contents> c;
  if (s && l && delta && s->size() == 1 && l->size() == 1 && delta->size() == 1 && (*delta)[0] != 0) {
    int64_t d = (*delta)[0];
    DimExpr span = d > 0 ? (*l)[0] - (*s)[0] : (*s)[0] - (*l)[0];
    n = ceil_div(span, DimExpr::constant(d > 0 ? d : -d));
    if (auto k = n.as_constant()) {
      n = DimExpr::constant(std::max<int64_t>(*k, 0));
      if (*k <= static_cast<int64_t>(kMaxContents)) {
        c.emplace();
        for (int64_t i = 0; i < *k; ++i) c->push_back((*s)[0] + DimExpr::constant(i * d));
      }
    }
  }
  set_output(ctx, 0, dt, SymShape{n}, std::move(c));
  return Status::ok();
}

Status reshape(OpContext& ctx) {
  const SymShape* in = ctx.shape(0);
  EMBER_ASSIGN_OR_RETURN(std::optional<SymShape> target, shape_from_input(ctx, 1));
  if (ctx.opset() < 5 && ctx.attrs.has("shape")) {
    target.emplace();
    for (int64_t v : ctx.attrs.get_ints("shape")) target->push_back(DimExpr::constant(v));
  }
  if (!target) {
    set_output(ctx, 0, ctx.dtype(0), std::nullopt);
    return Status::ok();
  }
  bool allow_zero = ctx.opset() >= 14 && ctx.attrs.get_int("allowzero", 0) != 0;
  SymShape out = *target;
  int infer_at = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i].is_constant(0) && !allow_zero) {
      if (in && i >= in->size()) return invalid_model("shape element {} is 0 but the input has rank {}", i, in->size());
      out[i] = in ? (*in)[i] : DimExpr{};
    } else if (out[i].is_constant(-1)) {
      if (infer_at >= 0) return invalid_model("shape has more than one -1");
      infer_at = static_cast<int>(i);
    }
  }
  if (infer_at >= 0) {
    out[static_cast<size_t>(infer_at)] = DimExpr::constant(1);
    DimExpr rest = product(out, 0, out.size());
    out[static_cast<size_t>(infer_at)] = in ? floor_div(product(*in, 0, in->size()), rest) : DimExpr{};
  }
  std::optional<Contents> c;
  if (ctx.contents(0)) c = *ctx.contents(0);
  set_output(ctx, 0, ctx.dtype(0), std::move(out), std::move(c));
  return Status::ok();
}

Status flatten(OpContext& ctx) {
  const SymShape* in = ctx.shape(0);
  if (!in) {
    set_output(ctx, 0, ctx.dtype(0), SymShape(2));
    return Status::ok();
  }
  int64_t axis = ctx.attrs.get_int("axis", 1);
  auto r = static_cast<int64_t>(in->size());
  if (axis < -r || axis > r) return invalid_model("axis {} is out of range for rank {}", axis, r);
  auto a = static_cast<size_t>(axis < 0 ? axis + r : axis);
  set_output(ctx, 0, ctx.dtype(0), SymShape{product(*in, 0, a), product(*in, a, in->size())});
  return Status::ok();
}

Status squeeze(OpContext& ctx) {
  const SymShape* in = ctx.shape(0);
  auto axes = axes_of(ctx, 13, 1);
  bool axes_given = ctx.opset() < 13 ? ctx.attrs.has("axes") : ctx.has_input(1);
  std::optional<Contents> c;
  if (ctx.contents(0)) c = *ctx.contents(0);
  if (!in || (axes_given && !axes)) {
    set_output(ctx, 0, ctx.dtype(0), std::nullopt);
    return Status::ok();
  }
  std::vector<bool> drop(in->size(), false);
  if (axes_given) {
    for (int64_t a : *axes) {
      EMBER_ASSIGN_OR_RETURN(size_t k, normalize_axis(a, in->size()));
      if (auto d = (*in)[k].as_constant(); d && *d != 1) return invalid_model("cannot squeeze axis {} of size {}", a, *d);
      drop[k] = true;
    }
  } else {
    for (size_t k = 0; k < in->size(); ++k) {
      // Without axes every size-1 dim goes; a dim that might be 1 leaves the rank unknown.
      if (!(*in)[k].known()) {
        set_output(ctx, 0, ctx.dtype(0), std::nullopt);
        return Status::ok();
      }
      drop[k] = (*in)[k].is_constant(1);
    }
  }
  SymShape out;
  for (size_t k = 0; k < in->size(); ++k) {
    if (!drop[k]) out.push_back((*in)[k]);
  }
  set_output(ctx, 0, ctx.dtype(0), std::move(out), std::move(c));
  return Status::ok();
}

Status unsqueeze(OpContext& ctx) {
  const SymShape* in = ctx.shape(0);
  auto axes = axes_of(ctx, 13, 1);
  if (!in || !axes) {
    set_output(ctx, 0, ctx.dtype(0), std::nullopt);
    return Status::ok();
  }
  size_t rank = in->size() + axes->size();
  std::vector<bool> added(rank, false);
  for (int64_t a : *axes) {
    EMBER_ASSIGN_OR_RETURN(size_t k, normalize_axis(a, rank));
    if (added[k]) return invalid_model("axis {} is repeated", a);
    added[k] = true;
  }
  SymShape out;
  size_t next = 0;
  for (size_t k = 0; k < rank; ++k) out.push_back(added[k] ? DimExpr::constant(1) : (*in)[next++]);
  std::optional<Contents> c;
  if (ctx.contents(0)) c = *ctx.contents(0);
  set_output(ctx, 0, ctx.dtype(0), std::move(out), std::move(c));
  return Status::ok();
}

Status concat(OpContext& ctx) {
  const SymShape* ref = nullptr;
  for (size_t i = 0; i < ctx.num_inputs() && !ref; ++i) ref = ctx.shape(i);
  DType dt = first_dtype(ctx);
  if (!ref) {
    set_output(ctx, 0, dt, std::nullopt);
    return Status::ok();
  }
  EMBER_ASSIGN_OR_RETURN(size_t axis, normalize_axis(ctx.attrs.get_int("axis", 0), ref->size()));
  SymShape out(ref->size());
  out[axis] = DimExpr::constant(0);
  std::optional<Contents> c = Contents{};
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const SymShape* s = ctx.shape(i);
    if (ctx.contents(i) && c) {
      c->insert(c->end(), ctx.contents(i)->begin(), ctx.contents(i)->end());
    } else {
      c.reset();
    }
    if (!s) {
      out[axis] = DimExpr{};
      continue;
    }
    if (s->size() != ref->size()) return invalid_model("input {} has rank {}, input 0 rank {}", i, s->size(), ref->size());
    out[axis] = out[axis] + (*s)[axis];
    for (size_t k = 0; k < out.size(); ++k) {
      if (k == axis) continue;
      auto a = out[k].as_constant(), b = (*s)[k].as_constant();
      if (a && b && *a != *b) return invalid_model("input {} has size {} on axis {}, others {}", i, *b, k, *a);
      if (!out[k].known() || (b && !a)) out[k] = (*s)[k];
    }
  }
  set_output(ctx, 0, dt, std::move(out), std::move(c));
  return Status::ok();
}

Status split(OpContext& ctx) {
  const SymShape* in = ctx.shape(0);
  size_t n = ctx.outputs.size();
  if (!in) {
    for (size_t i = 0; i < n; ++i) set_output(ctx, i, ctx.dtype(0), std::nullopt);
    return Status::ok();
  }
  EMBER_ASSIGN_OR_RETURN(size_t axis, normalize_axis(ctx.attrs.get_int("axis", 0), in->size()));
  const DimExpr& d = (*in)[axis];
  std::vector<DimExpr> sizes;
  bool sizes_given = ctx.opset() < 13 ? ctx.attrs.has("split") : ctx.has_input(1);
  if (sizes_given) {
    auto given = ctx.opset() < 13 ? std::optional(ctx.attrs.get_ints("split")) : ctx.ints(1);
    for (size_t i = 0; i < n; ++i) sizes.push_back(given && i < given->size() ? DimExpr::constant((*given)[i]) : DimExpr{});
  } else if (auto c = d.as_constant()) {
    // Opset 18 allows an uneven split: ceil-sized chunks, the last one smaller.
    int64_t chunk = (*c + static_cast<int64_t>(n) - 1) / static_cast<int64_t>(n);
    for (size_t i = 0; i < n; ++i) {
      sizes.push_back(DimExpr::constant(std::clamp<int64_t>(*c - chunk * static_cast<int64_t>(i), 0, chunk)));
    }
  } else {
    sizes.assign(n, floor_div(d, DimExpr::constant(static_cast<int64_t>(n))));
  }
  const Contents* c = ctx.contents(0);
  size_t offset = 0;
  for (size_t i = 0; i < n; ++i) {
    SymShape out = *in;
    out[axis] = sizes[i];
    std::optional<Contents> part;
    auto len = sizes[i].as_constant();
    if (c && len && offset + static_cast<size_t>(*len) <= c->size()) {
      auto from = c->begin() + static_cast<std::ptrdiff_t>(offset);
      part = Contents(from, from + static_cast<std::ptrdiff_t>(*len));
      offset += static_cast<size_t>(*len);
    } else {
      c = nullptr;
    }
    set_output(ctx, i, ctx.dtype(0), std::move(out), std::move(part));
  }
  return Status::ok();
}

// Exporters write "to the end" as INT64_MAX, INT32_MAX or similar.
constexpr int64_t kSliceInfinity = INT32_MAX;

DimExpr slice_dim(const DimExpr& d, int64_t start, int64_t end, int64_t step) {
  if (auto n = d.as_constant()) {
    if (start < 0) start += *n;
    if (end < 0) end += *n;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, *n);
      end = std::clamp<int64_t>(end, 0, *n);
      return DimExpr::constant(end > start ? (end - start + step - 1) / step : 0);
    }
    start = std::clamp<int64_t>(start, 0, *n - 1);
    end = std::clamp<int64_t>(end, -1, *n - 1);
    return DimExpr::constant(start > end ? (start - end - step - 1) / -step : 0);
  }
  // Symbolic: only the whole range is provable; any other bound depends on
  // whether the dim is at least that large (a slice [0:2] of d is min(2, d)).
  if (step == 1 && (start == 0 || start <= -kSliceInfinity) && end >= kSliceInfinity) return d;
  if (step == -1 && (start == -1 || start >= kSliceInfinity) && end <= -kSliceInfinity) return d;
  return DimExpr();
}

Status slice(OpContext& ctx) {
  const SymShape* in = ctx.shape(0);
  std::optional<std::vector<int64_t>> starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    starts = ctx.attrs.get_ints("starts");
    ends = ctx.attrs.get_ints("ends");
    if (ctx.attrs.has("axes")) axes = ctx.attrs.get_ints("axes");
  } else {
    starts = ctx.ints(1);
    ends = ctx.ints(2);
    if (ctx.has_input(3)) axes = ctx.ints(3);
    if (ctx.has_input(4)) steps = ctx.ints(4);
  }
  bool axes_known = ctx.opset() < 10 ? true : (!ctx.has_input(3) || axes);
  bool steps_known = ctx.opset() < 10 || !ctx.has_input(4) || steps;
  if (!in) {
    set_output(ctx, 0, ctx.dtype(0), std::nullopt);
    return Status::ok();
  }
  if (!starts || !ends || !axes_known || !steps_known) {
    set_output(ctx, 0, ctx.dtype(0), SymShape(in->size()));
    return Status::ok();
  }
  size_t n = starts->size();
  if (!axes) {
    axes.emplace();
    for (size_t i = 0; i < n; ++i) axes->push_back(static_cast<int64_t>(i));
  }
  if (!steps) steps = std::vector<int64_t>(n, 1);
  if (ends->size() != n || axes->size() != n || steps->size() != n) {
    return invalid_model("starts, ends, axes and steps have lengths {}, {}, {}, {}", n, ends->size(), axes->size(),
                         steps->size());
  }
  SymShape out = *in;
  const Contents* c = ctx.contents(0);
  std::optional<Contents> sliced;
  for (size_t i = 0; i < n; ++i) {
    EMBER_ASSIGN_OR_RETURN(size_t axis, normalize_axis((*axes)[i], in->size()));
    if ((*steps)[i] == 0) return invalid_model("step of axis {} is 0", (*axes)[i]);
    out[axis] = slice_dim((*in)[axis], (*starts)[i], (*ends)[i], (*steps)[i]);
    if (c && in->size() == 1) {
      auto len = static_cast<int64_t>(c->size());
      int64_t s = (*starts)[i], step = (*steps)[i];
      int64_t count = slice_dim(DimExpr::constant(len), s, (*ends)[i], step).as_constant().value_or(0);
      if (s < 0) s += len;
      if (count > 0) s = std::clamp<int64_t>(s, 0, step > 0 ? len : len - 1);
      sliced.emplace();
      for (int64_t k = 0; k < count; ++k) sliced->push_back((*c)[static_cast<size_t>(s + k * step)]);
    }
  }
  set_output(ctx, 0, ctx.dtype(0), std::move(out), std::move(sliced));
  return Status::ok();
}

Status gather(OpContext& ctx) {
  const SymShape* data = ctx.shape(0);
  const SymShape* idx = ctx.shape(1);
  if (!data || !idx) {
    set_output(ctx, 0, ctx.dtype(0), std::nullopt);
    return Status::ok();
  }
  EMBER_ASSIGN_OR_RETURN(size_t axis, normalize_axis(ctx.attrs.get_int("axis", 0), data->size()));
  SymShape out(data->begin(), data->begin() + static_cast<std::ptrdiff_t>(axis));
  out.insert(out.end(), idx->begin(), idx->end());
  out.insert(out.end(), data->begin() + static_cast<std::ptrdiff_t>(axis) + 1, data->end());
  std::optional<Contents> c;
  const Contents* dc = ctx.contents(0);
  auto indices = ctx.ints(1);
  if (dc && indices && data->size() == 1) {
    c.emplace();
    auto len = static_cast<int64_t>(dc->size());
    for (int64_t i : *indices) {
      if (i < -len || i >= len) return invalid_model("index {} is out of range for a dim of size {}", i, len);
      c->push_back((*dc)[static_cast<size_t>(i < 0 ? i + len : i)]);
    }
  }
  set_output(ctx, 0, ctx.dtype(0), std::move(out), std::move(c));
  return Status::ok();
}

Status gather_elements(OpContext& ctx) {
  set_output(ctx, 0, ctx.dtype(0), opt_shape(ctx.shape(1)));
  return Status::ok();
}

Status gather_nd(OpContext& ctx) {
  const SymShape* data = ctx.shape(0);
  const SymShape* idx = ctx.shape(1);
  std::optional<SymShape> out;
  auto batch = static_cast<size_t>(ctx.attrs.get_int("batch_dims", 0));
  if (data && idx && !idx->empty()) {
    if (auto k = idx->back().as_constant(); k && batch + static_cast<size_t>(*k) <= data->size()) {
      out = SymShape(idx->begin(), idx->end() - 1);
      out->insert(out->end(), data->begin() + static_cast<std::ptrdiff_t>(batch + static_cast<size_t>(*k)), data->end());
    }
  }
  set_output(ctx, 0, ctx.dtype(0), std::move(out));
  return Status::ok();
}

Status expand(OpContext& ctx) {
  const SymShape* in = ctx.shape(0);
  EMBER_ASSIGN_OR_RETURN(std::optional<SymShape> target, shape_from_input(ctx, 1));
  std::optional<SymShape> out;
  if (in && target) {
    EMBER_ASSIGN_OR_RETURN(out, broadcast_shapes(*in, *target));
  }
  set_output(ctx, 0, ctx.dtype(0), std::move(out));
  return Status::ok();
}

Status tile(OpContext& ctx) {
  const SymShape* in = ctx.shape(0);
  const Contents* repeats = ctx.contents(1);
  std::optional<SymShape> out;
  if (in && repeats) {
    if (repeats->size() != in->size()) {
      return invalid_model("repeats has {} elements for rank {}", repeats->size(), in->size());
    }
    out = SymShape{};
    for (size_t i = 0; i < in->size(); ++i) out->push_back((*in)[i] * (*repeats)[i]);
  } else if (in) {
    out = SymShape(in->size());
  }
  set_output(ctx, 0, ctx.dtype(0), std::move(out));
  return Status::ok();
}

Status transpose(OpContext& ctx) {
  const SymShape* in = ctx.shape(0);
  if (!in) {
    set_output(ctx, 0, ctx.dtype(0), std::nullopt);
    return Status::ok();
  }
  std::vector<int64_t> perm = ctx.attrs.get_ints("perm");
  if (perm.empty()) {
    for (size_t i = in->size(); i > 0; --i) perm.push_back(static_cast<int64_t>(i - 1));
  }
  if (perm.size() != in->size()) return invalid_model("perm has {} entries for rank {}", perm.size(), in->size());
  SymShape out;
  for (int64_t p : perm) {
    EMBER_ASSIGN_OR_RETURN(size_t k, normalize_axis(p, in->size()));
    out.push_back((*in)[k]);
  }
  set_output(ctx, 0, ctx.dtype(0), std::move(out));
  return Status::ok();
}

Status pad(OpContext& ctx) {
  const SymShape* in = ctx.shape(0);
  std::optional<std::vector<int64_t>> pads =
      ctx.opset() < 11 ? std::optional(ctx.attrs.get_ints(ctx.opset() < 2 ? "paddings" : "pads")) : ctx.ints(1);
  if (!in) {
    set_output(ctx, 0, ctx.dtype(0), std::nullopt);
    return Status::ok();
  }
  std::vector<int64_t> axes;
  if (ctx.opset() >= 18 && ctx.has_input(3)) {
    auto given = ctx.ints(3);
    if (!given) {
      set_output(ctx, 0, ctx.dtype(0), SymShape(in->size()));
      return Status::ok();
    }
    axes = *given;
  } else {
    for (size_t i = 0; i < in->size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (!pads) {
    set_output(ctx, 0, ctx.dtype(0), SymShape(in->size()));
    return Status::ok();
  }
  if (pads->size() != 2 * axes.size()) return invalid_model("pads has {} entries for {} axes", pads->size(), axes.size());
  SymShape out = *in;
  for (size_t i = 0; i < axes.size(); ++i) {
    EMBER_ASSIGN_OR_RETURN(size_t k, normalize_axis(axes[i], in->size()));
    out[k] = out[k] + DimExpr::constant((*pads)[i] + (*pads)[i + axes.size()]);
  }
  set_output(ctx, 0, ctx.dtype(0), std::move(out));
  return Status::ok();
}

Status constant(OpContext& ctx) {
  const Attribute* a = ctx.node.find_attr("value");
  if (a && a->type == AttrType::kTensor) {
    SymShape s;
    for (int64_t d : a->t.shape()) s.push_back(DimExpr::constant(d));
    set_output(ctx, 0, a->t.dtype(), std::move(s), contents_of(a->t));
  } else if (ctx.attrs.has("value_int")) {
    set_output(ctx, 0, DType::kI64, SymShape{}, Contents{DimExpr::constant(ctx.attrs.get_int("value_int", 0))});
  } else if (ctx.attrs.has("value_ints")) {
    Contents c;
    for (int64_t v : ctx.attrs.get_ints("value_ints")) c.push_back(DimExpr::constant(v));
    set_output(ctx, 0, DType::kI64, SymShape{DimExpr::constant(static_cast<int64_t>(c.size()))}, std::move(c));
  } else if (ctx.attrs.has("value_float")) {
    set_output(ctx, 0, DType::kF32, SymShape{});
  } else if (ctx.attrs.has("value_floats")) {
    auto n = static_cast<int64_t>(ctx.attrs.get_floats("value_floats").size());
    set_output(ctx, 0, DType::kF32, SymShape{DimExpr::constant(n)});
  }
  return Status::ok();
}

}  // namespace

void add_tensor_rules(RuleTable& rules) {
  for (const char* op :
       {"Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Clip", "Cosh", "Hardmax", "LogSoftmax", "Shrink", "Sign",
        "Sinh", "Softmax", "Tan", "BitwiseNot", "Trilu", "CumSum", "ReverseSequence",
        "ScatterND", "ScatterElements", "PRelu", "Scatter", "LpNormalization", "MeanVarianceNormalization", "LRN",
        "CumProd"}) {
    rules[op] = same_as_input;
  }
  rules["Identity"] = identity;
  rules["Neg"] = neg;
  rules["Dropout"] = dropout;
  for (const char* op : {"IsNaN", "IsInf", "Not"}) rules[op] = to_bool;
  rules["Add"] = arith<add_contents>;
  rules["Sub"] = arith<sub_contents>;
  rules["Mul"] = arith<mul_contents>;
  rules["Div"] = arith<div_contents>;
  rules["Max"] = arith<max_contents>;
  rules["Min"] = arith<min_contents>;
  for (const char* op : {"Pow", "Mod", "Mean", "Sum", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor"}) {
    rules[op] = arith_plain;
  }
  rules["Equal"] = compare<equal_contents>;
  rules["Less"] = compare<less_contents>;
  rules["Greater"] = compare<greater_contents>;
  rules["And"] = compare<and_contents>;
  rules["Or"] = compare<or_contents>;
  for (const char* op : {"LessOrEqual", "GreaterOrEqual", "Xor"}) rules[op] = compare_plain;
  rules["Where"] = where;
  rules["Cast"] = cast;
  rules["CastLike"] = cast_like;
  rules["BitCast"] = bit_cast;
  rules["Shape"] = shape_op;
  rules["Size"] = size_op;
  rules["ConstantOfShape"] = constant_of_shape;
  rules["Range"] = range;
  rules["Reshape"] = reshape;
  rules["Flatten"] = flatten;
  rules["Squeeze"] = squeeze;
  rules["Unsqueeze"] = unsqueeze;
  rules["Concat"] = concat;
  rules["Split"] = split;
  rules["Slice"] = slice;
  rules["Gather"] = gather;
  rules["GatherElements"] = gather_elements;
  rules["GatherND"] = gather_nd;
  rules["Expand"] = expand;
  rules["Tile"] = tile;
  rules["Transpose"] = transpose;
  rules["Pad"] = pad;
  rules["Constant"] = constant;
  // The rows of the unary op table keep input 0's shape and dtype; an op with
  // a rule of its own above (Neg's shape-tensor arithmetic) keeps that rule.
#define EMBER_UNARY_OP(domain, op_type, ...) \
  rules.emplace(std::string_view(domain).empty() ? op_type : domain "." op_type, same_as_input);
#include "ops/unary_ops.def"
}

}  // namespace ember::ir::shape_inference_detail
