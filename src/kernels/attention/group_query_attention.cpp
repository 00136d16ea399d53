// com.microsoft GroupQueryAttention as ONNX Runtime's CPU kernel defines it.
//
// Inputs: query [B, S, N*H] (or packed Q|K|V [B, S, (N + 2 Nkv) H] with key and
// value omitted), key/value [B, S, Nkv*H], past_key/past_value BNSH
// [B, Nkv, P, H], seqlens_k int32 [B] or [B, 1] (total length - 1 per batch row),
// total_sequence_length int32 scalar, cos_cache/sin_cache [max_pos, rot/2],
// position_ids int64 [B, S], attention_bias [B|1, N|1, S, T], head_sink [N].
// Outputs: output [B, S, N*H], present_key/present_value [B, Nkv, max(P, total), H].
//
// Row b has total_b = seqlens_k[b] + 1 keys. The call is a first prompt when
// S == total_sequence_length (its rows are causal from 0; rows at or past total_b
// are padding), a subsequent prompt when 1 < S != total (batch 1), else decode
// (S == 1). New keys land at positions past_b = total_b - S (0 for a first
// prompt). When present and past are one buffer (past_present_share_buffer) the
// new rows are written in place; otherwise present is past's first past_b rows,
// the new rows, and zeros. Scores are scale * q.k, softcapped, plus the bias;
// query head n reads kv head n / (N / Nkv); local_window_size w > 0 lets a row
// see only its last w keys. smooth_softmax or head_sink add exp(sink) to the
// softmax denominator. float32 or float16 (caches stay float16; attention is
// computed in f32 on converted rows, and the output rounded once).
#include "kernels/attention/group_query_attention.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/buffer.h"
#include "kernels/attention/attention_core.h"
#include "kernels/attention/attention_layout.h"
#include "kernels/attention/gqa_common.h"
#include "threading/thread_pool.h"

namespace ember::kernels::attention {
namespace {

enum Input : size_t {
  kQuery, kKey, kValue, kPastKey, kPastValue, kSeqlensK, kTotalSeqLen, kCos, kSin, kPositionIds, kBias, kHeadSink
};

struct Dims {
  int64_t batch = 0, seq = 0, head_size = 0, past = 0, total = 0, present = 0, rot = 0;
  bool packed = false;
};

thread_local AlignedBuffer t_query;
// float16 calls compute in f32: K/V of the cache staged here.
thread_local AlignedBuffer t_stage_kv;
// Per worker: one rotated row and its cos/sin rows.
thread_local AlignedBuffer t_row;

struct GqaRun;

class GroupQueryAttention final : public GqaKernel {
 public:
  GroupQueryAttention(GqaAttrs at, bool sliding_window_cache, DType dtype)
      : GqaKernel(at, dtype), sliding_window_cache_(sliding_window_cache) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(Dims d, dims(ctx));
    const int64_t hidden = at_.num_heads * d.head_size;
    ctx.set_output(0, dtype_, Shape{d.batch, d.seq, hidden});
    ctx.set_output(1, dtype_, Shape{d.batch, at_.kv_num_heads, d.present, d.head_size});
    ctx.set_output(2, dtype_, Shape{d.batch, at_.kv_num_heads, d.present, d.head_size});
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override;

  // past_present_share_buffer: present_key/value appended in place into past_key/value.
  bool may_share_buffer(size_t output, size_t input) const override {
    return (output == 1 && input == kPastKey) || (output == 2 && input == kPastValue);
  }

 private:
  void write_cache(const KernelContext& ctx, const GqaRun& g) const;
  const float* rotate_queries(const KernelContext& ctx, const GqaRun& g) const;
  void stage_f16_cache(const GqaRun& g, const float** k, const float** v) const;
  Result<Dims> dims(const KernelContext& ctx) const;
  Status check_lengths(const KernelContext& ctx, const Dims& d, bool first_prompt) const;
  int64_t position(const KernelContext& ctx, const Dims& d, bool first_prompt, int64_t b, int64_t s) const;

  // ONNX Runtime evicts the oldest positions of a shared past/present buffer
  // shorter than the sequence; Ember runs such a node only while its buffer
  // holds every position (Ember's generator allocates full-length caches).
  bool sliding_window_cache_;
};

Result<Dims> GroupQueryAttention::dims(const KernelContext& ctx) const {
  const Tensor& q = ctx.input(kQuery);
  if (q.rank() != 3) return invalid_argument("input 'query' {} must be 3-D [batch, sequence, hidden]", q.describe());
  Dims d;
  d.batch = q.dim(0);
  d.seq = q.dim(1);
  d.packed = !ctx.has_input(kKey);
  EMBER_ASSIGN_OR_RETURN(d.head_size, head_size(ctx, q, d.packed, kValue));
  if (!d.packed) {
    for (size_t i : {kKey, kValue}) {
      const Tensor& t = ctx.input(i);
      if (t.rank() != 3 || t.dim(0) != d.batch || t.dim(1) != d.seq || t.dim(2) != at_.kv_num_heads * d.head_size) {
        return invalid_argument("input '{}' {} must be [batch={}, sequence={}, kv_num_heads * head_size={}]",
                                i == kKey ? "key" : "value", t.describe(), d.batch, d.seq,
                                at_.kv_num_heads * d.head_size);
      }
    }
  }
  if (ctx.has_input(kPastKey) != ctx.has_input(kPastValue)) {
    return invalid_argument("inputs 'past_key' and 'past_value' must both be given or both be omitted");
  }
  if (ctx.has_input(kPastKey)) {
    const Tensor& pk = ctx.input(kPastKey);
    if (pk.rank() != 4 || pk.dim(0) != d.batch || pk.dim(1) != at_.kv_num_heads || pk.dim(3) != d.head_size ||
        pk.shape() != ctx.input(kPastValue).shape()) {
      return invalid_argument("inputs 'past_key' {} and 'past_value' {} must both be [batch={}, kv_num_heads={}, "
                              "past, head_size={}]",
                              pk.describe(), ctx.input(kPastValue).describe(), d.batch, at_.kv_num_heads, d.head_size);
    }
    d.past = pk.dim(2);
  }
  const Tensor& seqlens = ctx.input(kSeqlensK);
  // onnxruntime-genai's exports compute it with ReduceSum(keepdims=1): [batch, 1].
  if (seqlens.rank() < 1 || seqlens.rank() > 2 || seqlens.dim(0) != d.batch || seqlens.numel() != d.batch) {
    return invalid_argument("input 'seqlens_k' {} must be [batch={}] or [batch, 1]", seqlens.describe(), d.batch);
  }
  const Tensor& total = ctx.input(kTotalSeqLen);
  if (total.numel() != 1 || total.rank() > 1) {
    return invalid_argument("input 'total_sequence_length' {} must be a scalar", total.describe());
  }
  if (!ctx.has_value(kTotalSeqLen)) return needs_value(kTotalSeqLen);
  d.total = total.data_as<int32_t>()[0];
  if (d.total < d.seq) {
    return invalid_argument("total_sequence_length {} is less than the sequence length {}", d.total, d.seq);
  }
  d.present = std::max(d.total, d.past);
  if (sliding_window_cache_ && !ctx.has_input(kPastKey)) {
    return invalid_argument("sliding_window_cache=1 needs inputs 'past_key' and 'past_value' (the cache buffers)");
  }
  // A past of total - sequence rows is the cache itself; another length short
  // of total is a shared buffer ONNX Runtime would have evicted from.
  if (sliding_window_cache_ && d.past < d.total && d.past != d.total - d.seq) {
    return not_implemented("sliding_window_cache=1 with a past/present buffer of {} positions for {} in all: Ember "
                           "does not evict from window-sized caches; give it a buffer of the whole length",
                           d.past, d.total);
  }
  EMBER_ASSIGN_OR_RETURN(d.rot, rotary_dim(ctx, kCos, kSin, d.head_size));
  if (ctx.has_input(kBias)) {
    const Tensor& bias = ctx.input(kBias);
    if (bias.rank() != 4 || (bias.dim(0) != 1 && bias.dim(0) != d.batch) ||
        (bias.dim(1) != 1 && bias.dim(1) != at_.num_heads) || bias.dim(2) != d.seq || bias.dim(3) < d.total) {
      return invalid_argument("input 'attention_bias' {} must be [batch={} or 1, num_heads={} or 1, sequence={}, "
                              ">= total_sequence_length={}]",
                              bias.describe(), d.batch, at_.num_heads, d.seq, d.total);
    }
  }
  if (ctx.has_input(kPositionIds)) {
    const Tensor& pos = ctx.input(kPositionIds);
    if (pos.rank() != 2 || pos.dim(0) != d.batch || pos.dim(1) != d.seq) {
      return invalid_argument("input 'position_ids' {} must be [batch={}, sequence={}]", pos.describe(), d.batch,
                              d.seq);
    }
  }
  EMBER_RETURN_IF_ERROR(check_head_sink(ctx, kHeadSink));
  if (d.seq > 1 && d.seq != d.total && d.batch != 1) {
    return invalid_argument("a prompt with past context (sequence {} < total_sequence_length {}) needs batch 1, got {}",
                            d.seq, d.total, d.batch);
  }
  return d;
}

Status GroupQueryAttention::check_lengths(const KernelContext& ctx, const Dims& d, bool first_prompt) const {
  const int32_t* seqlens = ctx.input(kSeqlensK).data_as<int32_t>();
  for (int64_t b = 0; b < d.batch; ++b) {
    const int64_t total_b = int64_t{seqlens[b]} + 1;
    const int64_t least = first_prompt ? 1 : d.seq;
    if (total_b < least || total_b > d.total) {
      return invalid_argument("seqlens_k[{}] = {}: the row's total length {} must be in [{}, "
                              "total_sequence_length={}] (sequence length {})",
                              b, seqlens[b], total_b, least, d.total, d.seq);
    }
  }
  if (at_.do_rotary) {
    const int64_t rows = ctx.input(kCos).dim(0);
    for (int64_t b = 0; b < d.batch; ++b) {
      for (int64_t s = 0; s < d.seq; ++s) {
        const int64_t p = position(ctx, d, first_prompt, b, s);
        if (p < 0 || p >= rows) {
          return invalid_argument("position {} of batch row {}, token {} is outside the {} rows of 'cos_cache'", p, b,
                                  s, rows);
        }
      }
    }
  }
  return Status::ok();
}

// The rotary position of token s of row b: position_ids when given, else the
// token's index in its row (padding tokens of a first prompt included, as ORT).
int64_t GroupQueryAttention::position(const KernelContext& ctx, const Dims& d, bool first_prompt, int64_t b,
                                      int64_t s) const {
  if (ctx.has_input(kPositionIds)) return ctx.input(kPositionIds).data_as<int64_t>()[b * d.seq + s];
  const int64_t total_b = int64_t{ctx.input(kSeqlensK).data_as<int32_t>()[b]} + 1;
  if (first_prompt) return s;
  return total_b - d.seq + s;
}

// The call's tensors, resolved once per run.
struct GqaRun : QkvRows {
  Dims d;
  bool first_prompt = false;
  const int32_t* seqlens = nullptr;
  // The caches in the op's dtype, `esize` bytes per element.
  size_t esize = sizeof(float);
  const char *past_k = nullptr, *past_v = nullptr;
  char *present_k = nullptr, *present_v = nullptr;
  bool shared = false;  // present is past's buffer (past_present_share_buffer)
  const void *cos = nullptr, *sin = nullptr;  // in the op's dtype
  const float* bias = nullptr;   // attention_bias as f32, or nullptr
  const float* sinks = nullptr;  // head_sink as f32, or nullptr
};

// Per (b, kv head): present rows [0, past_b) from past (unless shared), rows
// [past_b, past_b + S) the new keys (rotated) and values, the rest zero.
void GroupQueryAttention::write_cache(const KernelContext& ctx, const GqaRun& g) const {
  const Dims& d = g.d;
  const int64_t nkv = at_.kv_num_heads, hs = d.head_size;
  const size_t row_bytes = static_cast<size_t>(hs) * g.esize;
  const int64_t grain = std::max<int64_t>(1, kGqaCopyGrainElements / std::max<int64_t>(1, d.present * hs));
  threading::parallel_for(d.batch * nkv, grain, [&](int64_t begin, int64_t end) {
    float* rotated = grow_floats(t_row, hs + d.rot);
    float* trig = rotated + hs;
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / nkv, h = bh % nkv;
      const int64_t total_b = int64_t{g.seqlens[b]} + 1;
      const int64_t past_b = g.first_prompt ? 0 : total_b - d.seq;
      char* pk = g.present_k + static_cast<size_t>(bh * d.present) * row_bytes;
      char* pv = g.present_v + static_cast<size_t>(bh * d.present) * row_bytes;
      if (!g.shared) {
        const int64_t copy = std::min(past_b, d.past);
        if (copy > 0) {
          std::memcpy(pk, g.past_k + static_cast<size_t>(bh * d.past) * row_bytes, static_cast<size_t>(copy) * row_bytes);
          std::memcpy(pv, g.past_v + static_cast<size_t>(bh * d.past) * row_bytes, static_cast<size_t>(copy) * row_bytes);
        }
        const int64_t written = std::min(past_b + d.seq, d.present);
        for (char* p : {pk, pv}) {
          std::memset(p + copy * row_bytes, 0, static_cast<size_t>(std::max<int64_t>(0, past_b - copy)) * row_bytes);
          std::memset(p + written * row_bytes, 0, static_cast<size_t>(d.present - written) * row_bytes);
        }
      }
      for (int64_t s = 0; s < d.seq && past_b + s < d.present; ++s) {
        const float* ks = g.key + (b * d.seq + s) * g.kv_row_floats + h * hs;
        const float* vs = g.value + (b * d.seq + s) * g.kv_row_floats + h * hs;
        if (at_.do_rotary) {
          const int64_t p = position(ctx, d, g.first_prompt, b, s);
          rotate(ks, trig_rows(g.cos, g.sin, d.rot, p, trig), rotated, d.rot, hs);
          ks = rotated;
        }
        store_row(ks, pk + (past_b + s) * row_bytes, hs);
        store_row(vs, pv + (past_b + s) * row_bytes, hs);
      }
    }
  });
}

// Rotated queries, [B, S, N, H], in a thread-local buffer.
const float* GroupQueryAttention::rotate_queries(const KernelContext& ctx, const GqaRun& g) const {
  const Dims& d = g.d;
  const int64_t n = at_.num_heads, hs = d.head_size;
  float* q_rot = grow_floats(t_query, d.batch * d.seq * n * hs);
  const int64_t grain = std::max<int64_t>(1, kGqaCopyGrainElements / (n * hs));
  threading::parallel_for(d.batch * d.seq, grain, [&](int64_t begin, int64_t end) {
    float* buf = grow_floats(t_row, d.rot);
    for (int64_t bs = begin; bs < end; ++bs) {
      const int64_t p = position(ctx, d, g.first_prompt, bs / d.seq, bs % d.seq);
      const TrigRows trig = trig_rows(g.cos, g.sin, d.rot, p, buf);
      for (int64_t h = 0; h < n; ++h) {
        rotate(g.query + bs * g.row_floats + h * hs, trig, q_rot + (bs * n + h) * hs, d.rot, hs);
      }
    }
  });
  return q_rot;
}

// float16: the cache rows attention reads, [B * Nkv, present, H] in f32.
void GroupQueryAttention::stage_f16_cache(const GqaRun& g, const float** k, const float** v) const {
  const Dims& d = g.d;
  const int64_t rows = d.batch * at_.kv_num_heads, block = d.present * d.head_size;
  float* kf = grow_floats(t_stage_kv, 2 * rows * block);
  float* vf = kf + rows * block;
  threading::parallel_for(rows, 1, [&](int64_t begin, int64_t end) {
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t n = (int64_t{g.seqlens[bh / at_.kv_num_heads]} + 1) * d.head_size;
      convert_->f16_to_f32(reinterpret_cast<const uint16_t*>(g.present_k) + bh * block, kf + bh * block, n);
      convert_->f16_to_f32(reinterpret_cast<const uint16_t*>(g.present_v) + bh * block, vf + bh * block, n);
    }
  });
  *k = kf;
  *v = vf;
}

Status GroupQueryAttention::run(KernelContext& ctx) const {
  GqaRun g;
  EMBER_ASSIGN_OR_RETURN(g.d, dims(ctx));
  const Dims& d = g.d;
  g.first_prompt = d.seq == d.total;
  EMBER_RETURN_IF_ERROR(check_lengths(ctx, d, g.first_prompt));
  const int64_t n = at_.num_heads, nkv = at_.kv_num_heads, hs = d.head_size, group = n / nkv;
  const bool f16 = dtype_ == DType::kF16;
  g.seqlens = ctx.input(kSeqlensK).data_as<int32_t>();
  g.esize = dtype_size(dtype_);
  const float *query = nullptr, *key = nullptr, *value = nullptr;
  float_inputs(ctx, {{kQuery, &query}, {kKey, &key}, {kValue, &value}, {kBias, &g.bias}, {kHeadSink, &g.sinks}});
  static_cast<QkvRows&>(g) = qkv_rows(query, key, value, d.packed, hs);
  g.present_k = static_cast<char*>(ctx.output(1).data());
  g.present_v = static_cast<char*>(ctx.output(2).data());
  if (ctx.has_input(kPastKey)) {
    g.past_k = static_cast<const char*>(ctx.input(kPastKey).data());
    g.past_v = static_cast<const char*>(ctx.input(kPastValue).data());
    g.shared = g.past_k == g.present_k && g.past_v == g.present_v;
  }
  if (at_.do_rotary) {
    g.cos = ctx.input(kCos).data();
    g.sin = ctx.input(kSin).data();
  }
  write_cache(ctx, g);
  const float* q = at_.do_rotary ? rotate_queries(ctx, g) : g.query;
  const int64_t q_row = at_.do_rotary ? n * hs : g.row_floats;
  const float* keys = reinterpret_cast<const float*>(g.present_k);
  const float* values = reinterpret_cast<const float*>(g.present_v);
  if (f16) stage_f16_cache(g, &keys, &values);

  ScoreBias bias;
  if (g.bias) {
    bias = attention_bias_scores(ctx.input(kBias));
    bias.data = g.bias;
  }
  const int64_t out_floats = d.batch * d.seq * n * hs;
  float* out = output_floats(ctx, out_floats);
  attend(attention_spec(hs, g.sinks), d.batch * nkv, [&](int64_t bh) {
    const int64_t b = bh / nkv, h = bh % nkv;
    const int64_t total_b = int64_t{g.seqlens[b]} + 1;
    AttentionSlice s;
    s.heads = group;
    s.rows = d.seq;
    s.keys = total_b;
    s.q = q + b * d.seq * q_row + h * group * hs;
    s.q_head_stride = hs;
    s.q_row_stride = q_row;
    s.k = keys + bh * d.present * hs;
    s.v = values + bh * d.present * hs;
    s.k_row_stride = s.v_row_stride = hs;
    s.out = out + b * d.seq * n * hs + h * group * hs;
    s.out_head_stride = hs;
    s.out_row_stride = n * hs;
    s.causal_end = g.first_prompt ? 0 : total_b - d.seq;
    s.window = at_.window();
    if (bias.data) {
      s.bias = bias.data + b * bias.batch_stride + h * group * bias.head_stride;
      s.bias_head_stride = bias.head_stride;
      s.bias_row_stride = bias.row_stride;
    }
    s.sinks = g.sinks ? g.sinks + h * group : nullptr;
    return s;
  });
  finish_output(ctx, out, out_floats);
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<OpKernel>> create_group_query_attention(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 1));
  EMBER_ASSIGN_OR_RETURN(const DType dtype,
                         gqa_float_dtype(init, "GroupQueryAttention", kQuery,
                                         {kKey, kValue, kPastKey, kPastValue, kCos, kSin, kBias, kHeadSink}));
  EMBER_RETURN_IF_ERROR(check_int32_input(init, kSeqlensK, "seqlens_k"));
  EMBER_RETURN_IF_ERROR(check_int32_input(init, kTotalSeqLen, "total_sequence_length"));
  if (input_dtype(init, kPositionIds) != DType::kUndefined && input_dtype(init, kPositionIds) != DType::kI64) {
    return invalid_argument("input 'position_ids' must be int64, got {}", dtype_name(input_dtype(init, kPositionIds)));
  }
  ir::AttrReader r(init.node);
  const int64_t sliding_window_cache = r.get_int("sliding_window_cache", 0);
  EMBER_ASSIGN_OR_RETURN(GqaAttrs at, read_gqa_attrs(r));
  if (sliding_window_cache != 0 && (sliding_window_cache != 1 || at.local_window < 1)) {
    return invalid_argument("sliding_window_cache={} must be 0 or 1, and 1 needs local_window_size > 0 (got {})",
                            sliding_window_cache, at.local_window);
  }
  return std::unique_ptr<OpKernel>(std::make_unique<GroupQueryAttention>(at, sliding_window_cache == 1, dtype));
}

}  // namespace ember::kernels::attention
