// Shape rules for the neural-network ops: matmuls, convolutions and pools,
// reductions, normalizations, control flow, quantization and contrib ops.
#include <algorithm>
#include <map>
#include <string>

#include "ir/shape_inference_internal.h"

namespace ember::ir::shape_inference_detail {
namespace {

using Contents = std::vector<DimExpr>;

Result<std::optional<SymShape>> matmul_shape(const SymShape* a, const SymShape* b) {
  if (!a || !b) return std::optional<SymShape>();
  if (a->empty() || b->empty()) return invalid_model("MatMul inputs must have rank >= 1");
  SymShape x = *a, y = *b;
  bool drop_m = x.size() == 1, drop_n = y.size() == 1;
  if (drop_m) x.insert(x.begin(), DimExpr::constant(1));
  if (drop_n) y.push_back(DimExpr::constant(1));
  auto k1 = x.back().as_constant(), k2 = y[y.size() - 2].as_constant();
  if (k1 && k2 && *k1 != *k2) {
    return invalid_model("inner dimensions differ: {} and {}", sym_shape_to_string(*a), sym_shape_to_string(*b));
  }
  EMBER_ASSIGN_OR_RETURN(SymShape out, broadcast_shapes(SymShape(x.begin(), x.end() - 2), SymShape(y.begin(), y.end() - 2)));
  if (!drop_m) out.push_back(x[x.size() - 2]);
  if (!drop_n) out.push_back(y.back());
  return std::optional<SymShape>(std::move(out));
}

Status matmul(OpContext& ctx) {
  EMBER_ASSIGN_OR_RETURN(auto out, matmul_shape(ctx.shape(0), ctx.shape(1)));
  set_output(ctx, 0, ctx.node.op_type == "MatMulInteger" ? DType::kI32 : ctx.dtype(0), std::move(out));
  return Status::ok();
}

Status qlinear_matmul(OpContext& ctx) {
  EMBER_ASSIGN_OR_RETURN(auto out, matmul_shape(ctx.shape(0), ctx.shape(3)));
  set_output(ctx, 0, ctx.has_input(7) ? ctx.dtype(7) : DType::kU8, std::move(out));
  return Status::ok();
}

Status gemm(OpContext& ctx) {
  const SymShape* a = ctx.shape(0);
  const SymShape* b = ctx.shape(1);
  std::optional<SymShape> out;
  if (a && b && a->size() == 2 && b->size() == 2) {
    bool ta = ctx.attrs.get_int("transA", 0) != 0, tb = ctx.attrs.get_int("transB", 0) != 0;
    auto ka = (*a)[ta ? 0 : 1].as_constant(), kb = (*b)[tb ? 1 : 0].as_constant();
    if (ka && kb && *ka != *kb) return invalid_model("inner dimensions differ: {} and {}", *ka, *kb);
    out = SymShape{(*a)[ta ? 1 : 0], (*b)[tb ? 0 : 1]};
  } else if (a || b) {
    out = SymShape(2);
  }
  set_output(ctx, 0, ctx.dtype(0), std::move(out));
  return Status::ok();
}

// Spatial attributes of Conv/ConvTranspose/pools, defaulted for `n` spatial dims.
struct Window {
  std::vector<int64_t> kernel, strides, dilations, pads;
  std::string auto_pad;
};

Window window_of(OpContext& ctx, size_t n, const SymShape* weight) {
  Window w;
  w.kernel = ctx.attrs.get_ints("kernel_shape");
  if (w.kernel.empty() && weight && weight->size() == n + 2) {
    for (size_t i = 2; i < weight->size(); ++i) w.kernel.push_back((*weight)[i].as_constant().value_or(-1));
  }
  w.strides = ctx.attrs.get_ints("strides", std::vector<int64_t>(n, 1));
  w.dilations = ctx.attrs.get_ints("dilations", std::vector<int64_t>(n, 1));
  w.pads = ctx.attrs.get_ints("pads", std::vector<int64_t>(2 * n, 0));
  w.auto_pad = ctx.attrs.get_string("auto_pad", "NOTSET");
  return w;
}

// Output size of a sliding window over `in` (Conv, pools).
DimExpr window_out(const DimExpr& in, const Window& w, size_t i, size_t n, bool ceil_mode) {
  if (w.kernel[i] < 0) return {};
  const DimExpr stride = DimExpr::constant(w.strides[i]);
  int64_t span = (w.kernel[i] - 1) * w.dilations[i] + 1;
  if (w.auto_pad == "SAME_UPPER" || w.auto_pad == "SAME_LOWER") return ceil_div(in, stride);
  if (w.auto_pad == "VALID") return ceil_div(in - DimExpr::constant(span - 1), stride);
  DimExpr total = in + DimExpr::constant(w.pads[i] + w.pads[i + n] - span);
  DimExpr out = (ceil_mode ? ceil_div(total, stride) : floor_div(total, stride)) + DimExpr::constant(1);
  // A last window starting inside the end padding is dropped (ceil_mode only).
  auto c = out.as_constant(), d = in.as_constant();
  if (ceil_mode && c && d && (*c - 1) * w.strides[i] >= *d + w.pads[i]) out = DimExpr::constant(*c - 1);
  return out;
}

bool window_valid(const Window& w, size_t n) {
  return w.kernel.size() == n && w.strides.size() == n && w.dilations.size() == n && w.pads.size() == 2 * n;
}

Status conv(OpContext& ctx) {
  const SymShape* x = ctx.shape(0);
  const SymShape* weight = ctx.shape(1);
  std::optional<SymShape> out;
  size_t rank = x ? x->size() : weight ? weight->size() : 0;
  if (rank >= 3) {
    size_t n = rank - 2;
    Window w = window_of(ctx, n, weight);
    out = SymShape{x ? (*x)[0] : DimExpr{}, weight && !weight->empty() ? (*weight)[0] : DimExpr{}};
    for (size_t i = 0; i < n; ++i) {
      out->push_back(x && window_valid(w, n) ? window_out((*x)[i + 2], w, i, n, false) : DimExpr{});
    }
  }
  set_output(ctx, 0, ctx.dtype(0), std::move(out));
  return Status::ok();
}

Status conv_integer(OpContext& ctx) {
  EMBER_RETURN_IF_ERROR(conv(ctx));
  ctx.outputs[0].dtype = DType::kI32;
  return Status::ok();
}

Status conv_transpose(OpContext& ctx) {
  const SymShape* x = ctx.shape(0);
  const SymShape* weight = ctx.shape(1);
  std::optional<SymShape> out;
  if (x && x->size() >= 3) {
    size_t n = x->size() - 2;
    Window w = window_of(ctx, n, weight);
    auto group = ctx.attrs.get_int("group", 1);
    out = SymShape{(*x)[0], weight && weight->size() == x->size() ? (*weight)[1] * DimExpr::constant(group) : DimExpr{}};
    std::vector<int64_t> output_shape = ctx.attrs.get_ints("output_shape");
    std::vector<int64_t> output_padding = ctx.attrs.get_ints("output_padding", std::vector<int64_t>(n, 0));
    for (size_t i = 0; i < n; ++i) {
      if (output_shape.size() == n) {
        out->push_back(DimExpr::constant(output_shape[i]));
      } else if (!window_valid(w, n) || output_padding.size() != n || w.kernel[i] < 0) {
        out->push_back(DimExpr{});
      } else if ((w.auto_pad == "SAME_UPPER" || w.auto_pad == "SAME_LOWER") && !ctx.attrs.has("pads")) {
        out->push_back((*x)[i + 2] * DimExpr::constant(w.strides[i]));
      } else {
        int64_t pads = w.auto_pad == "VALID" ? 0 : w.pads[i] + w.pads[i + n];
        int64_t extra = output_padding[i] + (w.kernel[i] - 1) * w.dilations[i] + 1 - pads;
        out->push_back(((*x)[i + 2] - DimExpr::constant(1)) * DimExpr::constant(w.strides[i]) + DimExpr::constant(extra));
      }
    }
  }
  set_output(ctx, 0, ctx.dtype(0), std::move(out));
  return Status::ok();
}

Status pool(OpContext& ctx) {
  const SymShape* x = ctx.shape(0);
  std::optional<SymShape> out;
  if (x && x->size() >= 3) {
    size_t n = x->size() - 2;
    Window w = window_of(ctx, n, nullptr);
    bool ceil_mode = ctx.attrs.get_int("ceil_mode", 0) != 0;
    out = SymShape{(*x)[0], (*x)[1]};
    for (size_t i = 0; i < n; ++i) {
      out->push_back(window_valid(w, n) ? window_out((*x)[i + 2], w, i, n, ceil_mode) : DimExpr{});
    }
  }
  set_output(ctx, 0, ctx.dtype(0), out);
  set_output(ctx, 1, DType::kI64, out);
  return Status::ok();
}

Status global_pool(OpContext& ctx) {
  const SymShape* x = ctx.shape(0);
  std::optional<SymShape> out;
  if (x && x->size() >= 2) {
    out = SymShape{(*x)[0], (*x)[1]};
    out->resize(x->size(), DimExpr::constant(1));
  }
  set_output(ctx, 0, ctx.dtype(0), std::move(out));
  return Status::ok();
}

// Reduce*: axes are an attribute before `input_since`, input 1 from then on.
template <int input_since>
Status reduce(OpContext& ctx) {
  const SymShape* x = ctx.shape(0);
  bool keep = ctx.attrs.get_int("keepdims", 1) != 0;
  bool from_input = ctx.opset() >= input_since;
  std::optional<std::vector<int64_t>> axes;
  if (!from_input) {
    axes = ctx.attrs.get_ints("axes");
  } else if (!ctx.has_input(1)) {
    axes = std::vector<int64_t>{};
  } else {
    axes = ctx.ints(1);
  }
  if (!x || !axes) {
    set_output(ctx, 0, ctx.dtype(0), x && keep ? std::optional(SymShape(x->size())) : std::nullopt);
    return Status::ok();
  }
  bool noop = from_input && ctx.attrs.get_int("noop_with_empty_axes", 0) != 0;
  if (axes->empty() && noop) return same_as_input(ctx);
  std::vector<bool> reduced(x->size(), axes->empty());
  for (int64_t a : *axes) {
    EMBER_ASSIGN_OR_RETURN(size_t k, normalize_axis(a, x->size()));
    reduced[k] = true;
  }
  SymShape out;
  for (size_t k = 0; k < x->size(); ++k) {
    if (!reduced[k]) {
      out.push_back((*x)[k]);
    } else if (keep) {
      out.push_back(DimExpr::constant(1));
    }
  }
  std::optional<Contents> c;
  const Contents* in = ctx.contents(0);
  bool sum = ctx.node.op_type == "ReduceSum", prod = ctx.node.op_type == "ReduceProd";
  if (in && x->size() == 1 && (sum || prod)) {
    DimExpr acc = DimExpr::constant(sum ? 0 : 1);
    for (const DimExpr& e : *in) acc = sum ? acc + e : acc * e;
    c = Contents{acc};
  }
  set_output(ctx, 0, ctx.dtype(0), std::move(out), std::move(c));
  return Status::ok();
}

Status arg_reduce(OpContext& ctx) {
  const SymShape* x = ctx.shape(0);
  std::optional<SymShape> out;
  if (x) {
    EMBER_ASSIGN_OR_RETURN(size_t axis, normalize_axis(ctx.attrs.get_int("axis", 0), x->size()));
    out = *x;
    if (ctx.attrs.get_int("keepdims", 1) != 0) {
      (*out)[axis] = DimExpr::constant(1);
    } else {
      out->erase(out->begin() + static_cast<std::ptrdiff_t>(axis));
    }
  }
  set_output(ctx, 0, DType::kI64, std::move(out));
  return Status::ok();
}

// LayerNormalization and relatives: Y like X, then mean and inverse std-dev with
// the normalized dims kept as 1 (float, the stash type).
Status layer_norm(OpContext& ctx) {
  EMBER_RETURN_IF_ERROR(same_as_input(ctx));
  const SymShape* x = ctx.shape(0);
  std::optional<SymShape> stats;
  if (x) {
    EMBER_ASSIGN_OR_RETURN(size_t axis, normalize_axis(ctx.attrs.get_int("axis", -1), x->size()));
    stats = *x;
    std::fill(stats->begin() + static_cast<std::ptrdiff_t>(axis), stats->end(), DimExpr::constant(1));
  }
  bool skip = ctx.node.op_type.starts_with("Skip");
  set_output(ctx, 1, DType::kF32, stats);
  set_output(ctx, 2, DType::kF32, stats);
  // Skip*LayerNormalization: output 3 is input + skip (+ bias).
  if (skip) set_output(ctx, 3, ctx.dtype(0), opt_shape(x));
  return Status::ok();
}

Status batch_norm(OpContext& ctx) {
  EMBER_RETURN_IF_ERROR(same_as_input(ctx));
  // The statistics outputs (running or saved mean and var) are typed like input_mean.
  for (size_t i = 1; i < ctx.outputs.size(); ++i) set_output(ctx, i, ctx.dtype(3), opt_shape(ctx.shape(3)));
  return Status::ok();
}

Status top_k(OpContext& ctx) {
  const SymShape* x = ctx.shape(0);
  std::optional<SymShape> out;
  if (x) {
    EMBER_ASSIGN_OR_RETURN(size_t axis, normalize_axis(ctx.attrs.get_int("axis", -1), x->size()));
    out = *x;
    const Contents* k = ctx.contents(1);
    if (ctx.opset() < 10) {
      (*out)[axis] = DimExpr::constant(ctx.attrs.get_int("k", 0));
    } else {
      (*out)[axis] = k && k->size() == 1 ? (*k)[0] : DimExpr{};
    }
  }
  set_output(ctx, 0, ctx.dtype(0), out);
  set_output(ctx, 1, DType::kI64, out);
  return Status::ok();
}

Status non_zero(OpContext& ctx) {
  const SymShape* x = ctx.shape(0);
  set_output(ctx, 0, DType::kI64, SymShape{x ? DimExpr::constant(static_cast<int64_t>(x->size())) : DimExpr{}, DimExpr{}});
  return Status::ok();
}

Status one_hot(OpContext& ctx) {
  const SymShape* idx = ctx.shape(0);
  std::optional<SymShape> out;
  const Contents* depth = ctx.contents(1);
  if (idx) {
    EMBER_ASSIGN_OR_RETURN(size_t axis, normalize_axis(ctx.attrs.get_int("axis", -1), idx->size() + 1));
    out = *idx;
    out->insert(out->begin() + static_cast<std::ptrdiff_t>(axis), depth && depth->size() == 1 ? (*depth)[0] : DimExpr{});
  }
  set_output(ctx, 0, ctx.dtype(2), std::move(out));
  return Status::ok();
}

Status depth_space(OpContext& ctx) {
  const SymShape* x = ctx.shape(0);
  std::optional<SymShape> out;
  int64_t b = ctx.attrs.get_int("blocksize", 1);
  if (x && x->size() == 4 && b > 0) {
    const DimExpr bb = DimExpr::constant(b), b2 = DimExpr::constant(b * b);
    if (ctx.node.op_type == "DepthToSpace") {
      out = SymShape{(*x)[0], floor_div((*x)[1], b2), (*x)[2] * bb, (*x)[3] * bb};
    } else {
      out = SymShape{(*x)[0], (*x)[1] * b2, floor_div((*x)[2], bb), floor_div((*x)[3], bb)};
    }
  }
  set_output(ctx, 0, ctx.dtype(0), std::move(out));
  return Status::ok();
}

Status resize(OpContext& ctx) {
  const SymShape* x = ctx.shape(0);
  if (!x) {
    set_output(ctx, 0, ctx.dtype(0), std::nullopt);
    return Status::ok();
  }
  // Scales are floats (not tracked): only sizes give the output lengths, as they
  // are under the "stretch" policy, or rescaled by one factor (rounded half up)
  // under the others when the input lengths are known.
  SymShape out(x->size());
  const Contents* sizes = ctx.opset() >= 11 && ctx.num_inputs() > 3 ? ctx.contents(3) : nullptr;
  std::vector<int64_t> axes = ctx.attrs.get_ints("axes");
  if (axes.empty()) {
    for (size_t d = 0; d < x->size(); ++d) axes.push_back(static_cast<int64_t>(d));
  }
  if (!sizes || sizes->size() != axes.size() || axes.empty()) {
    set_output(ctx, 0, ctx.dtype(0), std::move(out));
    return Status::ok();
  }
  std::string policy = ctx.attrs.get_string("keep_aspect_ratio_policy", "stretch");
  out = *x;
  std::optional<double> scale;
  for (size_t k = 0; k < axes.size(); ++k) {
    EMBER_ASSIGN_OR_RETURN(size_t d, normalize_axis(axes[k], x->size()));
    out[d] = (*sizes)[k];
    if (policy == "stretch") continue;
    auto in_len = (*x)[d].as_constant();
    auto size = (*sizes)[k].as_constant();
    if (!in_len || !size || *in_len <= 0) {
      set_output(ctx, 0, ctx.dtype(0), SymShape(x->size()));
      return Status::ok();
    }
    double s = static_cast<double>(*size) / static_cast<double>(*in_len);
    scale = !scale ? s : (policy == "not_larger" ? std::min(*scale, s) : std::max(*scale, s));
  }
  if (scale) {
    for (int64_t a : axes) {
      EMBER_ASSIGN_OR_RETURN(size_t d, normalize_axis(a, x->size()));
      out[d] = DimExpr::constant(static_cast<int64_t>(*scale * static_cast<double>(*(*x)[d].as_constant()) + 0.5));
    }
  }
  set_output(ctx, 0, ctx.dtype(0), std::move(out));
  return Status::ok();
}

Status upsample(OpContext& ctx) {
  const SymShape* x = ctx.shape(0);
  set_output(ctx, 0, ctx.dtype(0), x ? std::optional(SymShape(x->size())) : std::nullopt);
  return Status::ok();
}

// AffineGrid: theta [N, r, r+1] and size [N, C, spatial...] give [N, spatial..., r].
Status affine_grid(OpContext& ctx) {
  const SymShape* size_shape = ctx.shape(1);
  const Contents* size = ctx.contents(1);
  std::optional<SymShape> out;
  if (size && size->size() >= 3) {
    out = SymShape{(*size)[0]};
    out->insert(out->end(), size->begin() + 2, size->end());
    out->push_back(DimExpr::constant(static_cast<int64_t>(size->size()) - 2));
  } else if (size_shape && size_shape->size() == 1) {
    if (auto n = (*size_shape)[0].as_constant(); n && *n >= 3) {
      EMBER_ASSIGN_OR_RETURN(out, unknown_dims(*n, 1));
      out->back() = DimExpr::constant(*n - 2);
    }
  }
  set_output(ctx, 0, ctx.dtype(0), std::move(out));
  return Status::ok();
}

// CenterCropPad: the listed axes (all by default) take the lengths of input 1.
Status center_crop_pad(OpContext& ctx) {
  const SymShape* x = ctx.shape(0);
  if (!x) {
    set_output(ctx, 0, ctx.dtype(0), std::nullopt);
    return Status::ok();
  }
  SymShape out(x->size());
  const Contents* lengths = ctx.contents(1);
  std::vector<int64_t> axes = ctx.attrs.get_ints("axes");
  if (axes.empty()) {
    for (size_t d = 0; d < x->size(); ++d) axes.push_back(static_cast<int64_t>(d));
  }
  if (lengths && lengths->size() == axes.size()) {
    out = *x;
    for (size_t k = 0; k < axes.size(); ++k) {
      EMBER_ASSIGN_OR_RETURN(size_t d, normalize_axis(axes[k], x->size()));
      out[d] = (*lengths)[k];
    }
  }
  set_output(ctx, 0, ctx.dtype(0), std::move(out));
  return Status::ok();
}

// Col2Im: [N, C*prod(block_shape), L] -> [N, C, image_shape...].
Status col2im(OpContext& ctx) {
  const SymShape* x = ctx.shape(0);
  const Contents* image = ctx.contents(1);
  std::optional<std::vector<int64_t>> block = ctx.ints(2);
  std::optional<SymShape> out;
  if (x && x->size() == 3 && image) {
    DimExpr channels;
    if (block) {
      int64_t k = 1;
      for (int64_t b : *block) k *= b;
      if (k > 0) channels = floor_div((*x)[1], DimExpr::constant(k));
    }
    out = SymShape{(*x)[0], channels};
    out->insert(out->end(), image->begin(), image->end());
  }
  set_output(ctx, 0, ctx.dtype(0), std::move(out));
  return Status::ok();
}

Status quantize(OpContext& ctx) {
  DType dt = ctx.has_input(2) ? ctx.dtype(2) : DType::kU8;
  int64_t attr = ctx.attrs.get_int("output_dtype", 0);
  if (!ctx.has_input(2) && attr != 0 && dtype_is_known(static_cast<int32_t>(attr))) dt = static_cast<DType>(attr);
  set_output(ctx, 0, dt, opt_shape(ctx.shape(0)));
  return Status::ok();
}

Status dequantize(OpContext& ctx) {
  set_output(ctx, 0, ctx.has_input(1) ? ctx.dtype(1) : DType::kF32, opt_shape(ctx.shape(0)));
  return Status::ok();
}

Status dynamic_quantize(OpContext& ctx) {
  set_output(ctx, 0, DType::kU8, opt_shape(ctx.shape(0)));
  set_output(ctx, 1, DType::kF32, SymShape{});
  set_output(ctx, 2, DType::kU8, SymShape{});
  return Status::ok();
}

// EyeLike, Random*Like: input 0's shape, the `dtype` attribute or input 0's type.
Status like_with_dtype(OpContext& ctx) {
  int64_t attr = ctx.attrs.get_int("dtype", 0);
  DType dt = attr != 0 && dtype_is_known(static_cast<int32_t>(attr)) ? static_cast<DType>(attr) : ctx.dtype(0);
  set_output(ctx, 0, dt, opt_shape(ctx.shape(0)));
  return Status::ok();
}

// Merges what two branches agree on: a dim both give the same, else unknown.
SymbolicValue agree(const SymbolicValue& a, const SymbolicValue& b) {
  SymbolicValue r;
  r.dtype = a.dtype == b.dtype ? a.dtype : DType::kUndefined;
  if (a.shape && b.shape && a.shape->size() == b.shape->size()) {
    r.shape = SymShape{};
    for (size_t i = 0; i < a.shape->size(); ++i) {
      r.shape->push_back((*a.shape)[i].same_as((*b.shape)[i]) ? (*a.shape)[i] : DimExpr{});
    }
  }
  if (a.contents && b.contents && *a.contents == *b.contents) r.contents = a.contents;
  return r;
}

Status if_op(OpContext& ctx) {
  std::shared_ptr<Graph> branches[2] = {ctx.attrs.get_graph("then_branch"), ctx.attrs.get_graph("else_branch")};
  std::vector<SymbolicValue> results[2];
  for (int b = 0; b < 2; ++b) {
    if (!branches[b]) return Status::ok();
    auto r = infer_graph(*branches[b], &ctx.scope);
    if (!r.is_ok()) return r.status().with_context(b == 0 ? "then_branch: " : "else_branch: ");
    results[b] = std::move(r).value();
  }
  auto branch_output = [&](int b, size_t i) -> const SymbolicValue* {
    const Graph& g = *branches[b];
    return i < g.outputs.size() ? &results[b][static_cast<size_t>(g.outputs[i])] : nullptr;
  };
  auto cond = ctx.ints(0);
  for (size_t i = 0; i < ctx.outputs.size(); ++i) {
    const SymbolicValue* t = branch_output(0, i);
    const SymbolicValue* e = branch_output(1, i);
    if (!t || !e) continue;
    if (cond && cond->size() == 1) {
      ctx.outputs[i] = (*cond)[0] ? *t : *e;
    } else {
      ctx.outputs[i] = agree(*t, *e);
    }
  }
  return Status::ok();
}

// Loop and Scan: their bodies are inferred for their own values. Each output
// takes the dtype of its body output: a Loop's carried value may change kind
// (an empty optional in, a sequence out). Where the body leaves it unknown, a
// carried output keeps its initial value's dtype (shapes may change per iteration).
Status loop_op(OpContext& ctx) {
  auto body = ctx.attrs.get_graph("body");
  if (!body) return Status::ok();
  auto r = infer_graph(*body, &ctx.scope);
  if (!r.is_ok()) return r.status().with_context("body: ");
  const std::vector<SymbolicValue>& values = *r;
  bool is_loop = ctx.node.op_type == "Loop";
  auto explicit_inputs = static_cast<int64_t>(ctx.node.num_explicit_inputs);
  // Scan before opset 9 has a leading sequence_lens input.
  int64_t first_state = is_loop ? 2 : ctx.opset() < 9 ? 1 : 0;
  int64_t scan_inputs = is_loop ? 0 : ctx.attrs.get_int("num_scan_inputs", 0);
  auto carried = static_cast<size_t>(std::max<int64_t>(0, explicit_inputs - first_state - scan_inputs));
  const size_t first_body_output = is_loop ? 1 : 0;
  for (size_t i = 0; i < ctx.outputs.size(); ++i) {
    const size_t o = first_body_output + i;
    DType t = o < body->outputs.size() ? values[static_cast<size_t>(body->outputs[o])].dtype : DType::kUndefined;
    if (t == DType::kUndefined && i < carried) t = ctx.dtype(static_cast<size_t>(first_state) + i);
    ctx.outputs[i].dtype = t;
  }
  return Status::ok();
}

// Einsum: each letter names one size; "..." stands for broadcast leading dims.
Status einsum(OpContext& ctx) {
  std::string eq = ctx.attrs.get_string("equation", "");
  std::erase(eq, ' ');
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::map<char, DimExpr> sizes;
  std::map<char, int> counts;
  SymShape ellipsis;
  size_t term_start = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    size_t comma = lhs.find(',', term_start);
    std::string term = lhs.substr(term_start, comma == std::string::npos ? std::string::npos : comma - term_start);
    term_start = comma == std::string::npos ? lhs.size() : comma + 1;
    const SymShape* shape = ctx.shape(i);
    if (!shape) {
      set_output(ctx, 0, ctx.dtype(0), std::nullopt);
      return Status::ok();
    }
    size_t dots = term.find("...");
    size_t letters = term.size() - (dots == std::string::npos ? 0 : 3);
    if (shape->size() < letters) return invalid_model("input {} has rank {} for term '{}'", i, shape->size(), term);
    size_t ellipsis_rank = shape->size() - letters;
    size_t k = 0;
    for (size_t p = 0; p < term.size(); ++p) {
      if (p == dots) {
        auto from = shape->begin() + static_cast<std::ptrdiff_t>(k);
        SymShape part(from, from + static_cast<std::ptrdiff_t>(ellipsis_rank));
        EMBER_ASSIGN_OR_RETURN(ellipsis, broadcast_shapes(ellipsis, part));
        k += ellipsis_rank;
        p += 2;
        continue;
      }
      auto [it, fresh] = sizes.try_emplace(term[p], (*shape)[k]);
      if (!fresh) {
        EMBER_ASSIGN_OR_RETURN(it->second, broadcast_dim(it->second, (*shape)[k]));
      }
      ++counts[term[p]];
      ++k;
    }
  }
  std::string rhs;
  if (arrow != std::string::npos) {
    rhs = eq.substr(arrow + 2);
  } else {
    rhs = lhs.find("...") != std::string::npos ? "..." : "";
    for (const auto& [letter, n] : counts) {
      if (n == 1) rhs += letter;
    }
  }
  SymShape out;
  for (size_t p = 0; p < rhs.size(); ++p) {
    if (rhs.compare(p, 3, "...") == 0) {
      out.insert(out.end(), ellipsis.begin(), ellipsis.end());
      p += 2;
    } else if (auto it = sizes.find(rhs[p]); it != sizes.end()) {
      out.push_back(it->second);
    } else {
      return invalid_model("output letter '{}' is not in any input", rhs[p]);
    }
  }
  set_output(ctx, 0, ctx.dtype(0), std::move(out));
  return Status::ok();
}

Status det(OpContext& ctx) {
  const SymShape* x = ctx.shape(0);
  std::optional<SymShape> out;
  if (x && x->size() >= 2) out = SymShape(x->begin(), x->end() - 2);
  set_output(ctx, 0, ctx.dtype(0), std::move(out));
  return Status::ok();
}

Status non_max_suppression(OpContext& ctx) {
  set_output(ctx, 0, DType::kI64, SymShape{DimExpr{}, DimExpr::constant(3)});
  return Status::ok();
}

Status compress(OpContext& ctx) {
  const SymShape* x = ctx.shape(0);
  std::optional<SymShape> out = SymShape{DimExpr{}};
  if (ctx.attrs.has("axis")) {
    out.reset();
    if (x) {
      EMBER_ASSIGN_OR_RETURN(size_t axis, normalize_axis(ctx.attrs.get_int("axis", 0), x->size()));
      out = *x;
      (*out)[axis] = DimExpr{};
    }
  }
  set_output(ctx, 0, ctx.dtype(0), std::move(out));
  return Status::ok();
}

Status qlinear_conv(OpContext& ctx) {
  const SymShape* x = ctx.shape(0);
  const SymShape* w = ctx.shape(3);
  std::optional<SymShape> out;
  if (x && x->size() >= 3) {
    size_t n = x->size() - 2;
    Window win = window_of(ctx, n, w);
    out = SymShape{(*x)[0], w && !w->empty() ? (*w)[0] : DimExpr{}};
    for (size_t i = 0; i < n; ++i) {
      out->push_back(window_valid(win, n) ? window_out((*x)[i + 2], win, i, n, false) : DimExpr{});
    }
  }
  set_output(ctx, 0, ctx.has_input(7) ? ctx.dtype(7) : ctx.dtype(0), std::move(out));
  return Status::ok();
}

// RoiAlign [rois, C, h, w] and GridSample [N, C, grid dims]: spatial sizes from attributes or the grid.
Status roi_align(OpContext& ctx) {
  const SymShape* x = ctx.shape(0);
  const SymShape* rois = ctx.shape(1);
  set_output(ctx, 0, ctx.dtype(0),
             SymShape{rois && !rois->empty() ? (*rois)[0] : DimExpr{}, x && x->size() > 1 ? (*x)[1] : DimExpr{},
                      DimExpr::constant(ctx.attrs.get_int("output_height", 1)),
                      DimExpr::constant(ctx.attrs.get_int("output_width", 1))});
  return Status::ok();
}

// DeformConv [N, M, offset's spatial dims]: the offsets are given per output position.
Status deform_conv(OpContext& ctx) {
  const SymShape* x = ctx.shape(0);
  const SymShape* weight = ctx.shape(1);
  const SymShape* offset = ctx.shape(2);
  std::optional<SymShape> out;
  if (offset && offset->size() >= 3) {
    out = SymShape{x && !x->empty() ? (*x)[0] : (*offset)[0], weight && !weight->empty() ? (*weight)[0] : DimExpr{}};
    out->insert(out->end(), offset->begin() + 2, offset->end());
  }
  set_output(ctx, 0, ctx.dtype(0), std::move(out));
  return Status::ok();
}

// MaxUnpool: output_shape's values when given, else (in - 1) * stride - pads + kernel.
Status max_unpool(OpContext& ctx) {
  const SymShape* x = ctx.shape(0);
  std::optional<SymShape> out;
  if (ctx.has_input(2)) {
    if (const std::vector<DimExpr>* dims = ctx.contents(2)) out = SymShape(dims->begin(), dims->end());
  } else if (x && x->size() >= 3) {
    const size_t n = x->size() - 2;
    const std::vector<int64_t> kernel = ctx.attrs.get_ints("kernel_shape");
    const std::vector<int64_t> strides = ctx.attrs.get_ints("strides", std::vector<int64_t>(n, 1));
    const std::vector<int64_t> pads = ctx.attrs.get_ints("pads", std::vector<int64_t>(2 * n, 0));
    out = SymShape{(*x)[0], (*x)[1]};
    for (size_t i = 0; i < n; ++i) {
      if (kernel.size() != n || strides.size() != n || pads.size() != 2 * n) {
        out->push_back(DimExpr{});
        continue;
      }
      out->push_back(((*x)[i + 2] - DimExpr::constant(1)) * DimExpr::constant(strides[i]) +
                     DimExpr::constant(kernel[i] - pads[i] - pads[i + n]));
    }
  }
  set_output(ctx, 0, ctx.dtype(0), std::move(out));
  return Status::ok();
}

Status grid_sample(OpContext& ctx) {
  const SymShape* x = ctx.shape(0);
  const SymShape* grid = ctx.shape(1);
  std::optional<SymShape> out;
  if (x && grid && x->size() >= 2 && grid->size() == x->size()) {
    out = SymShape{(*x)[0], (*x)[1]};
    out->insert(out->end(), grid->begin() + 1, grid->end() - 1);
  }
  set_output(ctx, 0, ctx.dtype(0), std::move(out));
  return Status::ok();
}

// ImageDecoder: [H, W, C], H and W known only from the decoded bytes.
Status image_decoder(OpContext& ctx) {
  const std::string format = ctx.attrs.get_string("pixel_format", "RGB");
  const DimExpr channels = format == "Grayscale"                 ? DimExpr::constant(1)
                           : format == "RGB" || format == "BGR" ? DimExpr::constant(3)
                                                                 : DimExpr{};
  set_output(ctx, 0, DType::kU8, SymShape{DimExpr{}, DimExpr{}, channels});
  return Status::ok();
}

Status matmul_nbits(OpContext& ctx) {
  const SymShape* a = ctx.shape(0);
  std::optional<SymShape> out;
  if (a && !a->empty() && ctx.attrs.has("N")) {
    out = *a;
    out->back() = DimExpr::constant(ctx.attrs.get_int("N", 0));
  }
  set_output(ctx, 0, ctx.dtype(0), std::move(out));
  return Status::ok();
}

// com.microsoft GatherBlockQuantized: Gather on gather_axis, then the quantized
// last axis holds 8 / bits codes per uint8 byte (ONNX Runtime's contrib op).
Status gather_block_quantized(OpContext& ctx) {
  const SymShape* data = ctx.shape(0);
  const SymShape* idx = ctx.shape(1);
  const DType out_dtype = ctx.dtype(2);
  if (!data || !idx || data->empty()) {
    set_output(ctx, 0, out_dtype, std::nullopt);
    return Status::ok();
  }
  EMBER_ASSIGN_OR_RETURN(size_t axis, normalize_axis(ctx.attrs.get_int("gather_axis", 0), data->size()));
  SymShape out(data->begin(), data->begin() + static_cast<std::ptrdiff_t>(axis));
  out.insert(out.end(), idx->begin(), idx->end());
  out.insert(out.end(), data->begin() + static_cast<std::ptrdiff_t>(axis) + 1, data->end());
  const int64_t bits = ctx.attrs.get_int("bits", 4);
  if (ctx.dtype(0) == DType::kU8 && bits > 0 && bits < 8 && !out.empty()) {
    out.back() = out.back() * DimExpr::constant(8 / bits);
  }
  set_output(ctx, 0, out_dtype, std::move(out));
  return Status::ok();
}

// NegativeLogLikelihoodLoss / SoftmaxCrossEntropyLoss: the loss is target's
// shape with reduction "none", else a scalar; SCE's log_prob is like scores.
Status loss(OpContext& ctx) {
  const std::string reduction = ctx.attrs.get_string("reduction", "mean");
  set_output(ctx, 0, ctx.dtype(0), reduction == "none" ? opt_shape(ctx.shape(1)) : std::optional<SymShape>(SymShape{}));
  set_output(ctx, 1, ctx.dtype(0), opt_shape(ctx.shape(0)));
  return Status::ok();
}

// Unique: U unique values (slices along `axis` when it is set); indices and
// counts [U]; inverse_indices one per element (per slice along `axis`).
Status unique(OpContext& ctx) {
  const SymShape* x = ctx.shape(0);
  std::optional<SymShape> y = SymShape{DimExpr{}};
  std::optional<SymShape> inverse;
  if (ctx.attrs.has("axis")) {
    y.reset();
    if (x) {
      EMBER_ASSIGN_OR_RETURN(size_t axis, normalize_axis(ctx.attrs.get_int("axis", 0), x->size()));
      y = *x;
      (*y)[axis] = DimExpr{};
      inverse = SymShape{(*x)[axis]};
    }
  } else if (x) {
    inverse = SymShape{product(*x, 0, x->size())};
  }
  set_output(ctx, 0, ctx.dtype(0), std::move(y));
  set_output(ctx, 1, DType::kI64, SymShape{DimExpr{}});
  set_output(ctx, 2, DType::kI64, std::move(inverse));
  set_output(ctx, 3, DType::kI64, SymShape{DimExpr{}});
  return Status::ok();
}

// RandomNormal / RandomUniform: the `shape` attribute, in `dtype` (float by default).
Status random_from_attrs(OpContext& ctx) {
  const int64_t attr = ctx.attrs.get_int("dtype", static_cast<int64_t>(DType::kF32));
  const DType dt = dtype_is_known(static_cast<int32_t>(attr)) ? static_cast<DType>(attr) : DType::kUndefined;
  std::optional<SymShape> out;
  if (ctx.attrs.has("shape")) {
    out = SymShape{};
    for (int64_t d : ctx.attrs.get_ints("shape")) out->push_back(d >= 0 ? DimExpr::constant(d) : DimExpr{});
  }
  set_output(ctx, 0, dt, std::move(out));
  return Status::ok();
}

}  // namespace

void add_nn_rules(RuleTable& rules) {
  rules["MatMul"] = matmul;
  rules["MatMulInteger"] = matmul;
  rules["QLinearMatMul"] = qlinear_matmul;
  rules["Gemm"] = gemm;
  rules["Conv"] = conv;
  rules["ConvInteger"] = conv_integer;
  rules["ConvTranspose"] = conv_transpose;
  for (const char* op : {"MaxPool", "AveragePool", "LpPool"}) rules[op] = pool;
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"}) rules[op] = global_pool;
  rules["ReduceSum"] = reduce<13>;
  for (const char* op : {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
                         "ReduceLogSumExp", "ReduceSumSquare"}) {
    rules[op] = reduce<18>;
  }
  rules["ArgMax"] = arg_reduce;
  rules["ArgMin"] = arg_reduce;
  rules["LayerNormalization"] = layer_norm;
  rules["SimplifiedLayerNormalization"] = layer_norm;
  rules["RMSNormalization"] = same_as_input;
  rules["GroupNormalization"] = same_as_input;
  rules["InstanceNormalization"] = same_as_input;
  rules["BatchNormalization"] = batch_norm;
  rules["TopK"] = top_k;
  rules["NonZero"] = non_zero;
  rules["OneHot"] = one_hot;
  rules["DepthToSpace"] = depth_space;
  rules["SpaceToDepth"] = depth_space;
  rules["Resize"] = resize;
  rules["Upsample"] = upsample;
  rules["AffineGrid"] = affine_grid;
  rules["CenterCropPad"] = center_crop_pad;
  rules["Col2Im"] = col2im;
  rules["ImageDecoder"] = image_decoder;
  rules["QuantizeLinear"] = quantize;
  rules["DequantizeLinear"] = dequantize;
  rules["DynamicQuantizeLinear"] = dynamic_quantize;
  for (const char* op : {"EyeLike", "RandomNormalLike", "RandomUniformLike"}) rules[op] = like_with_dtype;
  for (const char* op : {"RandomNormal", "RandomUniform"}) rules[op] = random_from_attrs;
  rules["NegativeLogLikelihoodLoss"] = loss;
  rules["SoftmaxCrossEntropyLoss"] = loss;
  rules["Unique"] = unique;
  rules["Einsum"] = einsum;
  rules["Det"] = det;
  rules["NonMaxSuppression"] = non_max_suppression;
  rules["Compress"] = compress;
  rules["QLinearConv"] = qlinear_conv;
  rules["RoiAlign"] = roi_align;
  rules["DeformConv"] = deform_conv;
  rules["MaxUnpool"] = max_unpool;
  rules["GridSample"] = grid_sample;
  rules["Bernoulli"] = like_with_dtype;
  rules["If"] = if_op;
  rules["Loop"] = loop_op;
  rules["Scan"] = loop_op;
  rules["RotaryEmbedding"] = same_as_input;
  rules["com.microsoft.MatMulNBits"] = matmul_nbits;
  rules["com.microsoft.GatherBlockQuantized"] = gather_block_quantized;
  rules["com.microsoft.SkipLayerNormalization"] = layer_norm;
  rules["com.microsoft.SkipSimplifiedLayerNormalization"] = layer_norm;
  for (const char* op : {"FastGelu", "BiasGelu", "RotaryEmbedding", "BiasAdd"}) {
    rules[std::string("com.microsoft.") + op] = same_as_input;
  }
}

}  // namespace ember::ir::shape_inference_detail
