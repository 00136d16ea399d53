// Shape rules of the attention-block ops: ONNX Attention, SwiGLU,
// TensorScatter, CausalConvWithState, LinearAttention and ai.onnx.preview
// FlexAttention, and com.microsoft GroupQueryAttention, MultiHeadAttention and
// Attention (kernels in src/kernels/attention/).
#include <algorithm>

#include "ir/shape_inference_internal.h"

namespace ember::ir::shape_inference_detail {
namespace {

// Input i's shape when it is known and of rank `rank`, else nullptr.
const SymShape* shape_of_rank(const OpContext& ctx, size_t i, size_t rank) {
  const SymShape* s = ctx.shape(i);
  return s && s->size() == rank ? s : nullptr;
}

// Attention (23+): Y [B, qN, S, Hv] (4-D) or [B, S, qN * Hv] (3-D, heads from
// q_num_heads / kv_num_heads); present_key/value [B, kvN, past + L, H or Hv];
// qk_matmul_output [B, qN, S, past + L].
Status attention(OpContext& ctx) {
  const DType t = ctx.dtype(0);
  const SymShape* q = ctx.shape(0);
  const SymShape* k = ctx.shape(1);
  const SymShape* v = ctx.shape(2);
  const size_t rank = q ? q->size() : 0;
  const int64_t qn = ctx.attrs.get_int("q_num_heads", 0), kvn = ctx.attrs.get_int("kv_num_heads", 0);
  // Anything else is the kernel's error to report, with the values at hand.
  if ((rank != 3 && rank != 4) || !k || !v || k->size() != rank || v->size() != rank ||
      (rank == 3 && (qn <= 0 || kvn <= 0))) {
    for (size_t i = 0; i < 4; ++i) set_output(ctx, i, t, std::nullopt);
    return Status::ok();
  }
  DimExpr batch = (*q)[0], q_heads, kv_heads, seq, kv_seq, head, v_head;
  if (rank == 4) {
    q_heads = (*q)[1], seq = (*q)[2], head = (*q)[3];
    kv_heads = (*k)[1], kv_seq = (*k)[2], v_head = (*v)[3];
  } else {
    q_heads = DimExpr::constant(qn), kv_heads = DimExpr::constant(kvn);
    seq = (*q)[1], kv_seq = (*k)[1];
    head = floor_div((*q)[2], q_heads), v_head = floor_div((*v)[2], kv_heads);
  }
  DimExpr total = kv_seq;
  if (const SymShape* past = shape_of_rank(ctx, 4, 4)) total = (*past)[2] + kv_seq;
  else if (ctx.has_input(4)) total = DimExpr();
  if (rank == 4) {
    set_output(ctx, 0, t, SymShape{batch, q_heads, seq, v_head});
  } else {
    set_output(ctx, 0, t, SymShape{batch, seq, q_heads * v_head});
  }
  set_output(ctx, 1, t, SymShape{batch, kv_heads, total, head});
  set_output(ctx, 2, t, SymShape{batch, kv_heads, total, v_head});
  set_output(ctx, 3, t, SymShape{batch, q_heads, seq, total});
  return Status::ok();
}

// CausalConvWithState: output like input [B, C, L]; present_state [B, C, k - 1].
Status causal_conv_with_state(OpContext& ctx) {
  EMBER_RETURN_IF_ERROR(same_as_input(ctx));
  const SymShape* x = shape_of_rank(ctx, 0, 3);
  const SymShape* w = shape_of_rank(ctx, 1, 3);
  std::optional<SymShape> state;
  if (x && w) state = SymShape{(*x)[0], (*x)[1], (*w)[2] - DimExpr::constant(1)};
  set_output(ctx, 1, ctx.dtype(0), std::move(state));
  return Status::ok();
}

// LinearAttention: output [B, T, qN * d_v] with d_v = value's last dim / kvN;
// present_state [B, kvN, d_k, d_v] in past_state's dtype (query's without it).
Status linear_attention(OpContext& ctx) {
  const int64_t qn = ctx.attrs.get_int("q_num_heads", 0), kvn = ctx.attrs.get_int("kv_num_heads", 0);
  const SymShape* q = shape_of_rank(ctx, 0, 3);
  const SymShape* v = shape_of_rank(ctx, 2, 3);
  const DType state_dtype = ctx.has_input(3) ? ctx.dtype(3) : ctx.dtype(0);
  if (qn <= 0 || kvn <= 0 || !q || !v) {
    set_output(ctx, 0, ctx.dtype(0), std::nullopt);
    set_output(ctx, 1, state_dtype, std::nullopt);
    return Status::ok();
  }
  const DimExpr dk = floor_div((*q)[2], DimExpr::constant(qn)), dv = floor_div((*v)[2], DimExpr::constant(kvn));
  set_output(ctx, 0, ctx.dtype(0), SymShape{(*q)[0], (*q)[1], DimExpr::constant(qn) * dv});
  set_output(ctx, 1, state_dtype, SymShape{(*q)[0], DimExpr::constant(kvn), dk, dv});
  return Status::ok();
}

// FlexAttention: Y [B, Hq, L, Ev].
Status flex_attention(OpContext& ctx) {
  const SymShape* q = shape_of_rank(ctx, 0, 4);
  const SymShape* v = shape_of_rank(ctx, 2, 4);
  std::optional<SymShape> out;
  if (q && v) out = SymShape{(*q)[0], (*q)[1], (*q)[2], (*v)[3]};
  set_output(ctx, 0, ctx.dtype(0), std::move(out));
  return Status::ok();
}

// com.microsoft GroupQueryAttention: output [B, S, N * H], with H from query
// [B, S, N * H] (packed: [B, S, (N + 2 Nkv) * H], key and value omitted);
// present_key/value [B, Nkv, max(past, total_sequence_length), H].
Status group_query_attention(OpContext& ctx) {
  const DType t = ctx.dtype(0);
  const int64_t n = ctx.attrs.get_int("num_heads", 0), nkv = ctx.attrs.get_int("kv_num_heads", 0);
  const SymShape* q = shape_of_rank(ctx, 0, 3);
  if (n <= 0 || nkv <= 0 || !q) {
    for (size_t i = 0; i < 3; ++i) set_output(ctx, i, t, std::nullopt);
    return Status::ok();
  }
  const int64_t q_heads = ctx.has_input(1) ? n : n + 2 * nkv;
  const DimExpr head = floor_div((*q)[2], DimExpr::constant(q_heads));
  const std::vector<DimExpr>* total = ctx.contents(6);
  DimExpr present = total && total->size() == 1 ? (*total)[0] : DimExpr();
  if (ctx.has_input(3)) {
    const SymShape* past = shape_of_rank(ctx, 3, 4);
    const std::optional<int64_t> p = past ? (*past)[2].as_constant() : std::nullopt;
    const std::optional<int64_t> l = present.as_constant();
    if (p && l) present = DimExpr::constant(std::max(*p, *l));
    else if (!(past && (*past)[2].same_as(present))) present = DimExpr();
  }
  set_output(ctx, 0, t, SymShape{(*q)[0], (*q)[1], DimExpr::constant(n) * head});
  for (size_t i : {1, 2}) set_output(ctx, i, t, SymShape{(*q)[0], DimExpr::constant(nkv), present, head});
  return Status::ok();
}

// com.microsoft MultiHeadAttention: output [B, S, N * Hv]; present_key/value
// [B, N, past + L, H or Hv], key/value [B, L, N * H] or [B, N, L, H].
Status multi_head_attention(OpContext& ctx) {
  const DType t = ctx.dtype(0);
  const int64_t n = ctx.attrs.get_int("num_heads", 0);
  const SymShape* q = shape_of_rank(ctx, 0, 3);
  const SymShape* k = ctx.shape(1);
  const SymShape* v = ctx.shape(2);
  if (n <= 0 || !q || !k || !v || k->size() != v->size() || (k->size() != 3 && k->size() != 4)) {
    for (size_t i = 0; i < 3; ++i) set_output(ctx, i, t, std::nullopt);
    return Status::ok();
  }
  const DimExpr heads = DimExpr::constant(n);
  const DimExpr head = floor_div((*q)[2], heads);
  const bool bnsh = k->size() == 4;
  const DimExpr kv_seq = bnsh ? (*k)[2] : (*k)[1];
  const DimExpr v_head = bnsh ? (*v)[3] : floor_div((*v)[2], heads);
  DimExpr total = kv_seq;
  if (const SymShape* past = shape_of_rank(ctx, 6, 4)) total = (*past)[2] + kv_seq;
  else if (ctx.has_input(6)) total = DimExpr();
  set_output(ctx, 0, t, SymShape{(*q)[0], (*q)[1], heads * v_head});
  set_output(ctx, 1, t, SymShape{(*q)[0], heads, total, head});
  set_output(ctx, 2, t, SymShape{(*q)[0], heads, total, v_head});
  return Status::ok();
}

// com.microsoft Attention: output [B, S, Dv]; present [2, B, N, past + S, Dk / N],
// with Dq, Dk, Dv from qkv_hidden_sizes or thirds of the weights' columns.
Status contrib_attention(OpContext& ctx) {
  const DType t = ctx.dtype(0);
  const int64_t n = ctx.attrs.get_int("num_heads", 0);
  const SymShape* x = shape_of_rank(ctx, 0, 3);
  const SymShape* w = shape_of_rank(ctx, 1, 2);
  const std::vector<int64_t> sizes = ctx.attrs.get_ints("qkv_hidden_sizes");
  if (n <= 0 || !x || (sizes.size() != 3 && !w)) {
    for (size_t i = 0; i < 2; ++i) set_output(ctx, i, t, std::nullopt);
    return Status::ok();
  }
  const DimExpr third = w ? floor_div((*w)[1], DimExpr::constant(3)) : DimExpr();
  const DimExpr k_hidden = sizes.size() == 3 ? DimExpr::constant(sizes[1]) : third;
  const DimExpr v_hidden = sizes.size() == 3 ? DimExpr::constant(sizes[2]) : third;
  DimExpr total = (*x)[1];
  if (const SymShape* past = shape_of_rank(ctx, 4, 5)) total = (*past)[3] + (*x)[1];
  else if (ctx.has_input(4)) total = DimExpr();
  set_output(ctx, 0, t, SymShape{(*x)[0], (*x)[1], v_hidden});
  set_output(ctx, 1, t,
             SymShape{DimExpr::constant(2), (*x)[0], DimExpr::constant(n), total, floor_div(k_hidden, DimExpr::constant(n))});
  return Status::ok();
}

}  // namespace

void add_attention_rules(RuleTable& rules) {
  rules["Attention"] = attention;
  rules["SwiGLU"] = same_as_input;
  rules["TensorScatter"] = same_as_input;
  rules["CausalConvWithState"] = causal_conv_with_state;
  rules["LinearAttention"] = linear_attention;
  rules["ai.onnx.preview.FlexAttention"] = flex_attention;
  rules["com.microsoft.GroupQueryAttention"] = group_query_attention;
  rules["com.microsoft.MultiHeadAttention"] = multi_head_attention;
  rules["com.microsoft.Attention"] = contrib_attention;
}

}  // namespace ember::ir::shape_inference_detail
