// Shape rules for the recurrent ops (RNN, GRU, LSTM) and the signal ops (DFT,
// STFT, the window generators, MelWeightMatrix).
#include <string>

#include "ir/shape_inference_internal.h"

namespace ember::ir::shape_inference_detail {
namespace {

// One scalar integer input whose value is known, or nullopt.
std::optional<int64_t> scalar_of(const OpContext& ctx, size_t i) {
  auto v = ctx.ints(i);
  if (!v || v->size() != 1) return std::nullopt;
  return (*v)[0];
}

DimExpr dim_or_unknown(std::optional<int64_t> v) { return v ? DimExpr::constant(*v) : DimExpr{}; }

// Y [seq, dirs, batch, hidden] and Y_h (Y_c) [dirs, batch, hidden]; layout 1 puts batch first.
Status recurrent(OpContext& ctx) {
  const SymShape* x = ctx.shape(0);
  const SymShape* r = ctx.shape(2);
  const int64_t dirs = ctx.attrs.get_string("direction", "forward") == "bidirectional" ? 2 : 1;
  const int64_t layout = ctx.attrs.get_int("layout", 0);
  DimExpr hidden;
  if (ctx.attrs.has("hidden_size")) {
    hidden = DimExpr::constant(ctx.attrs.get_int("hidden_size", 0));
  } else if (r && r->size() == 3) {
    hidden = (*r)[2];
  }
  if (x && x->size() != 3) return invalid_model("X must have rank 3, got {}", sym_shape_to_string(*x));
  const DimExpr seq = x ? (*x)[layout == 0 ? 0 : 1] : DimExpr{};
  const DimExpr batch = x ? (*x)[layout == 0 ? 1 : 0] : DimExpr{};
  const DimExpr d = DimExpr::constant(dirs);
  SymShape y = layout == 0 ? SymShape{seq, d, batch, hidden} : SymShape{batch, seq, d, hidden};
  SymShape state = layout == 0 ? SymShape{d, batch, hidden} : SymShape{batch, d, hidden};
  set_output(ctx, 0, ctx.dtype(0), y);
  set_output(ctx, 1, ctx.dtype(0), state);
  if (ctx.node.op_type == "LSTM") set_output(ctx, 2, ctx.dtype(0), state);
  return Status::ok();
}

// The input's shape with the transformed axis resized and the last dimension
// 2 (complex), or 1 for an inverse one-sided (real) result.
Status dft(OpContext& ctx) {
  const SymShape* x = ctx.shape(0);
  if (!x) {
    set_output(ctx, 0, ctx.dtype(0), std::nullopt);
    return Status::ok();
  }
  if (x->size() < 2) return invalid_model("DFT input must have rank >= 2, got {}", sym_shape_to_string(*x));
  const bool inverse = ctx.attrs.get_int("inverse", 0) != 0, onesided = ctx.attrs.get_int("onesided", 0) != 0;
  std::optional<int64_t> axis = ctx.opset() >= 20 ? std::optional<int64_t>(-2) : ctx.attrs.get_int("axis", 1);
  if (ctx.opset() >= 20 && ctx.has_input(2)) axis = scalar_of(ctx, 2);
  SymShape out = *x;
  out.back() = DimExpr::constant(inverse && onesided ? 1 : 2);
  if (!axis) {
    for (size_t i = 0; i + 1 < out.size(); ++i) out[i] = DimExpr{};
    set_output(ctx, 0, ctx.dtype(0), std::move(out));
    return Status::ok();
  }
  const auto rank = static_cast<int64_t>(x->size());
  const int64_t a = *axis < 0 ? *axis + rank : *axis;
  if (a < 0 || a >= rank - 1) return invalid_model("DFT axis {} is outside the signal dimensions of rank {}", *axis, rank);
  DimExpr length;
  if (ctx.has_input(1)) {
    length = dim_or_unknown(scalar_of(ctx, 1));
  } else {
    length = inverse && onesided ? ((*x)[a] - DimExpr::constant(1)) * DimExpr::constant(2) : (*x)[a];
  }
  out[a] = !inverse && onesided ? floor_div(length, DimExpr::constant(2)) + DimExpr::constant(1) : length;
  set_output(ctx, 0, ctx.dtype(0), std::move(out));
  return Status::ok();
}

// [batch, frames, bins, 2]: frames = 1 + (length - frame_length) / frame_step.
Status stft(OpContext& ctx) {
  const SymShape* x = ctx.shape(0);
  const SymShape* window = ctx.shape(2);
  std::optional<int64_t> step = scalar_of(ctx, 1);
  DimExpr frame_length;
  if (ctx.has_input(3)) {
    frame_length = dim_or_unknown(scalar_of(ctx, 3));
  } else if (window && window->size() == 1) {
    frame_length = (*window)[0];
  } else if (x && x->size() == 3) {
    frame_length = (*x)[1];
  }
  DimExpr frames, bins;
  if (x && x->size() == 3 && step) {
    frames = floor_div((*x)[1] - frame_length, DimExpr::constant(*step)) + DimExpr::constant(1);
  }
  const bool onesided = ctx.attrs.get_int("onesided", 1) != 0;
  bins = onesided ? floor_div(frame_length, DimExpr::constant(2)) + DimExpr::constant(1) : frame_length;
  set_output(ctx, 0, ctx.dtype(0), SymShape{x && !x->empty() ? (*x)[0] : DimExpr{}, frames, bins, DimExpr::constant(2)});
  return Status::ok();
}

DType output_datatype(OpContext& ctx) {
  return static_cast<DType>(ctx.attrs.get_int("output_datatype", static_cast<int64_t>(DType::kF32)));
}

Status window(OpContext& ctx) {
  set_output(ctx, 0, output_datatype(ctx), SymShape{dim_or_unknown(scalar_of(ctx, 0))});
  return Status::ok();
}

Status mel_weight_matrix(OpContext& ctx) {
  const std::optional<int64_t> dft_length = scalar_of(ctx, 1);
  const DimExpr bins = dft_length ? DimExpr::constant(*dft_length / 2 + 1) : DimExpr{};
  set_output(ctx, 0, output_datatype(ctx), SymShape{bins, dim_or_unknown(scalar_of(ctx, 0))});
  return Status::ok();
}

}  // namespace

void add_signal_rules(RuleTable& rules) {
  for (const char* op : {"RNN", "GRU", "LSTM"}) rules[op] = recurrent;
  rules["DFT"] = dft;
  rules["STFT"] = stft;
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"}) rules[op] = window;
  rules["MelWeightMatrix"] = mel_weight_matrix;
}

}  // namespace ember::ir::shape_inference_detail
