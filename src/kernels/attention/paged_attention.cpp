// ember PagedAttention (domain "ember", opset 1+): GroupQueryAttention over a
// paged KV cache, for a continuous-batching engine.
//
// Inputs:
//   0 query [1, T, N*H] float32 or float16, or packed Q|K|V [1, T, (N + 2 Nkv) H]
//     with key and value omitted
//   1 key, 2 value [1, T, Nkv*H] (optional: both or neither)
//   3 key_cache, 4 value_cache [num_blocks, Nkv, block_size, H] in query's dtype
//   5 query_start int32 [S + 1]: sequence s's new tokens are query rows
//     [query_start[s], query_start[s + 1]); 0 first, T last, >= 1 token each
//   6 past_lens int32 [S]: tokens of sequence s already in the cache
//   7 block_tables int32 [S, max_blocks]: position p of sequence s is row
//     p % block_size of block block_tables[s][p / block_size] (entries past the
//     sequence's last block are not read)
//   8 cos_cache, 9 sin_cache [max_position, rotary_dim / 2] (do_rotary=1)
//   10 head_sink [N] (optional)
// Outputs: 0 output [1, T, N*H]; 1 key_cache, 2 value_cache: inputs 3 and 4
// themselves, written in place (the caller binds each output to its input's
// buffer; any other buffer is an error: a pool is never copied).
// Attributes: GroupQueryAttention's num_heads, kv_num_heads, scale, softcap,
// local_window_size, do_rotary, rotary_interleaved, smooth_softmax; qk_output
// must be 0. There is no sliding_window_cache: the pool keeps every position.
//
// New token i of sequence s has position p = past_lens[s] + i. Its key (rotated
// at p) and value are written at p first; then it attends to positions [0, p],
// only the last local_window_size of them when that is > 0. float16 computes in
// f32 as GroupQueryAttention does: new rows are stored rounded, attention reads
// the cache converted back, and the output is rounded once.
//
// Batch invariance: an engine must give a request the same tokens whichever
// requests share its steps and however its prompt is chunked, so each output row
// depends only on its q row, the keys it sees and the attributes. attend() runs
// every row of this op with one algorithm, the decode one (row_invariant: fixed
// key chunks from the row's first visible key, merged in chunk order), never
// the GEMM path whose sums depend on how many rows a slice has. A decode step
// (one row) gets the bits GroupQueryAttention gives over a contiguous cache.
#include "kernels/attention/paged_attention.h"

#include <algorithm>
#include <vector>

#include "base/buffer.h"
#include "kernels/attention/attention_core.h"
#include "kernels/attention/gqa_common.h"
#include "threading/thread_pool.h"

namespace ember::kernels::attention {
namespace {

enum Input : size_t {
  kQuery, kKey, kValue, kKeyCache, kValueCache, kQueryStart, kPastLens, kBlockTables, kCos, kSin, kHeadSink
};

struct Dims {
  int64_t tokens = 0, head_size = 0, seqs = 0, rot = 0;
  int64_t num_blocks = 0, block_size = 0, max_blocks = 0;
  bool packed = false;
};

thread_local AlignedBuffer t_query;
// float16 calls compute in f32: the cache rows attention reads staged here.
thread_local AlignedBuffer t_stage_kv;
thread_local AlignedBuffer t_row;  // per worker: one rotated row and its cos/sin rows
thread_local std::vector<int64_t> t_kv_before;

// The call's tensors, resolved once per run.
struct PagedRun : QkvRows {
  Dims d;
  const int32_t *query_start = nullptr, *past_lens = nullptr, *block_tables = nullptr;
  char *key_cache = nullptr, *value_cache = nullptr;  // in the op's dtype
  size_t esize = sizeof(float);
  const void *cos = nullptr, *sin = nullptr;  // in the op's dtype
  const float* sinks = nullptr;  // head_sink as f32, or nullptr
  // What attention reads: rotated (or given) queries, and for f16 the staged
  // cache rows (stage_f16_cache's layout, kv_before the caller thread's offsets).
  const float* q = nullptr;
  int64_t q_row = 0;
  const float *staged_k = nullptr, *staged_v = nullptr;
  const std::vector<int64_t>* kv_before = nullptr;
  float* out = nullptr;  // f32 output (staged for f16)

  int64_t seq_of(int64_t token) const {
    return std::upper_bound(query_start, query_start + d.seqs + 1, token) - query_start - 1;
  }
  int64_t position(int64_t token) const {
    const int64_t s = seq_of(token);
    return past_lens[s] + token - query_start[s];
  }
  int64_t total(int64_t s) const { return past_lens[s] + query_start[s + 1] - query_start[s]; }
};

class PagedAttention final : public GqaKernel {
 public:
  PagedAttention(GqaAttrs at, DType dtype) : GqaKernel(at, dtype) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(Dims d, dims(ctx));
    ctx.set_output(0, dtype_, Shape{1, d.tokens, at_.num_heads * d.head_size});
    ctx.set_output(1, dtype_, ctx.input(kKeyCache).shape());
    ctx.set_output(2, dtype_, ctx.input(kValueCache).shape());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override;

  bool may_share_buffer(size_t output, size_t input) const override {
    return (output == 1 && input == kKeyCache) || (output == 2 && input == kValueCache);
  }

 private:
  Result<Dims> dims(const KernelContext& ctx) const;
  Status check_values(const KernelContext& ctx, const Dims& d) const;
  static Status check_in_place(KernelContext& ctx);
  void write_cache(const PagedRun& g) const;
  const float* rotate_queries(const PagedRun& g) const;
  void stage_f16_cache(PagedRun& g) const;
  AttentionSlice slice(const PagedRun& g, int64_t seq, int64_t kv_head) const;
};

Result<Dims> PagedAttention::dims(const KernelContext& ctx) const {
  const Tensor& q = ctx.input(kQuery);
  if (q.rank() != 3 || q.dim(0) != 1) {
    return invalid_argument("input 'query' {} must be [1, tokens, hidden] (the new tokens of every sequence, "
                            "flattened)",
                            q.describe());
  }
  Dims d;
  d.tokens = q.dim(1);
  d.packed = !ctx.has_input(kKey);
  EMBER_ASSIGN_OR_RETURN(d.head_size, head_size(ctx, q, d.packed, kValue));
  const int64_t hs = d.head_size, nkv = at_.kv_num_heads;
  if (!d.packed) {
    for (size_t i : {kKey, kValue}) {
      const Tensor& t = ctx.input(i);
      if (t.rank() != 3 || t.dim(0) != 1 || t.dim(1) != d.tokens || t.dim(2) != nkv * hs) {
        return invalid_argument("input '{}' {} must be [1, tokens={}, kv_num_heads * head_size={}]",
                                i == kKey ? "key" : "value", t.describe(), d.tokens, nkv * hs);
      }
    }
  }
  const Tensor& kc = ctx.input(kKeyCache);
  const Tensor& vc = ctx.input(kValueCache);
  if (kc.rank() != 4 || kc.dim(1) != nkv || kc.dim(2) < 1 || kc.dim(3) != hs || kc.shape() != vc.shape()) {
    return invalid_argument("inputs 'key_cache' {} and 'value_cache' {} must both be [num_blocks, kv_num_heads={}, "
                            "block_size >= 1, head_size={}]",
                            kc.describe(), vc.describe(), nkv, hs);
  }
  d.num_blocks = kc.dim(0);
  d.block_size = kc.dim(2);
  const Tensor& past = ctx.input(kPastLens);
  if (past.rank() != 1) return invalid_argument("input 'past_lens' {} must be [num_seqs]", past.describe());
  d.seqs = past.dim(0);
  const Tensor& starts = ctx.input(kQueryStart);
  if (starts.rank() != 1 || starts.dim(0) != d.seqs + 1) {
    return invalid_argument("input 'query_start' {} must be [num_seqs + 1 = {}] ('past_lens' is {})",
                            starts.describe(), d.seqs + 1, past.describe());
  }
  const Tensor& tables = ctx.input(kBlockTables);
  if (tables.rank() != 2 || tables.dim(0) != d.seqs) {
    return invalid_argument("input 'block_tables' {} must be [num_seqs={}, max_blocks]", tables.describe(), d.seqs);
  }
  d.max_blocks = tables.dim(1);
  EMBER_ASSIGN_OR_RETURN(d.rot, rotary_dim(ctx, kCos, kSin, hs));
  EMBER_RETURN_IF_ERROR(check_head_sink(ctx, kHeadSink));
  return d;
}

// The values that index the pool: every block a sequence reaches must exist.
Status PagedAttention::check_values(const KernelContext& ctx, const Dims& d) const {
  const int32_t* starts = ctx.input(kQueryStart).data_as<int32_t>();
  const int32_t* past = ctx.input(kPastLens).data_as<int32_t>();
  const int32_t* tables = ctx.input(kBlockTables).data_as<int32_t>();
  if (starts[0] != 0 || starts[d.seqs] != d.tokens) {
    return invalid_argument("query_start[0] = {} and query_start[{}] = {} must be 0 and the query's {} tokens",
                            starts[0], d.seqs, starts[d.seqs], d.tokens);
  }
  for (int64_t s = 0; s < d.seqs; ++s) {
    if (starts[s + 1] <= starts[s]) {
      return invalid_argument("query_start[{}] = {} and query_start[{}] = {}: sequence {} must have at least one new "
                              "token (query_start increasing)",
                              s, starts[s], s + 1, starts[s + 1], s);
    }
  }
  const int64_t positions = at_.do_rotary ? ctx.input(kCos).dim(0) : 0;
  for (int64_t s = 0; s < d.seqs; ++s) {
    if (past[s] < 0) return invalid_argument("past_lens[{}] = {} is negative", s, past[s]);
    const int64_t total = int64_t{past[s]} + starts[s + 1] - starts[s];
    const int64_t blocks = (total + d.block_size - 1) / d.block_size;
    if (blocks > d.max_blocks) {
      return invalid_argument("sequence {}: past_lens {} + {} new tokens need {} blocks of {} rows, but "
                              "'block_tables' has {} per sequence",
                              s, past[s], starts[s + 1] - starts[s], blocks, d.block_size, d.max_blocks);
    }
    for (int64_t j = 0; j < blocks; ++j) {
      const int32_t b = tables[s * d.max_blocks + j];
      if (b < 0 || b >= d.num_blocks) {
        return invalid_argument("block_tables[{}][{}] = {} is outside the {} blocks of 'key_cache'", s, j, b,
                                d.num_blocks);
      }
    }
    if (at_.do_rotary && total > positions) {
      return invalid_argument("sequence {}: position {} is outside the {} rows of 'cos_cache'", s, total - 1,
                              positions);
    }
  }
  return Status::ok();
}

Status PagedAttention::check_in_place(KernelContext& ctx) {
  for (size_t out : {size_t{1}, size_t{2}}) {
    const size_t in = out == 1 ? kKeyCache : kValueCache;
    if (!ctx.has_output(out) || ctx.output(out).data() != ctx.input(in).data()) {
      return invalid_argument("output {} ('{}') must be bound to the buffer of input {}: PagedAttention writes the "
                              "cache in place and never copies the pool",
                              out, out == 1 ? "key_cache" : "value_cache", in);
    }
  }
  if (ctx.input(kKeyCache).data() == ctx.input(kValueCache).data()) {
    return invalid_argument("inputs 'key_cache' and 'value_cache' are one buffer; they must be two");
  }
  return Status::ok();
}

// Each new token's key (rotated at its position) and value into its block row.
void PagedAttention::write_cache(const PagedRun& g) const {
  const Dims& d = g.d;
  const int64_t nkv = at_.kv_num_heads, hs = d.head_size, bs = d.block_size;
  const size_t row_bytes = static_cast<size_t>(hs) * g.esize;
  const int64_t grain = std::max<int64_t>(1, kGqaCopyGrainElements / (nkv * hs));
  threading::parallel_for(d.tokens, grain, [&](int64_t begin, int64_t end) {
    float* rotated = grow_floats(t_row, hs + d.rot);
    float* buf = rotated + hs;
    for (int64_t t = begin; t < end; ++t) {
      const int64_t s = g.seq_of(t);
      const int64_t p = g.past_lens[s] + t - g.query_start[s];
      const int64_t block = g.block_tables[s * d.max_blocks + p / bs];
      TrigRows trig;
      if (at_.do_rotary) trig = trig_rows(g.cos, g.sin, d.rot, p, buf);
      for (int64_t h = 0; h < nkv; ++h) {
        const size_t at = static_cast<size_t>((block * nkv + h) * bs + p % bs) * row_bytes;
        const float* k = g.key + t * g.kv_row_floats + h * hs;
        if (at_.do_rotary) {
          rotate(k, trig, rotated, d.rot, hs);
          k = rotated;
        }
        store_row(k, g.key_cache + at, hs);
        store_row(g.value + t * g.kv_row_floats + h * hs, g.value_cache + at, hs);
      }
    }
  });
}

// Rotated queries, [T, N, H], in a thread-local buffer.
const float* PagedAttention::rotate_queries(const PagedRun& g) const {
  const Dims& d = g.d;
  const int64_t n = at_.num_heads, hs = d.head_size;
  float* q_rot = grow_floats(t_query, d.tokens * n * hs);
  const int64_t grain = std::max<int64_t>(1, kGqaCopyGrainElements / (n * hs));
  threading::parallel_for(d.tokens, grain, [&](int64_t begin, int64_t end) {
    float* buf = grow_floats(t_row, d.rot);
    for (int64_t t = begin; t < end; ++t) {
      const TrigRows trig = trig_rows(g.cos, g.sin, d.rot, g.position(t), buf);
      for (int64_t h = 0; h < n; ++h) {
        rotate(g.query + t * g.row_floats + h * hs, trig, q_rot + (t * n + h) * hs, d.rot, hs);
      }
    }
  });
  return q_rot;
}

// float16: every row each sequence sees, as f32, contiguous per (sequence, kv
// head): sequence s, head h at (kv_before[s] * Nkv + h * total_s) * H of
// staged_k and staged_v. Converted block by block after the new rows are stored.
void PagedAttention::stage_f16_cache(PagedRun& g) const {
  const Dims& d = g.d;
  const int64_t nkv = at_.kv_num_heads, hs = d.head_size, bs = d.block_size;
  std::vector<int64_t>& before = t_kv_before;
  before.assign(static_cast<size_t>(d.seqs) + 1, 0);
  for (int64_t s = 0; s < d.seqs; ++s) before[static_cast<size_t>(s) + 1] = before[static_cast<size_t>(s)] + g.total(s);
  const int64_t floats_k = before.back() * nkv * hs;
  float* staged = grow_floats(t_stage_kv, 2 * floats_k);
  threading::parallel_for(d.seqs * nkv, 1, [&](int64_t begin, int64_t end) {
    for (int64_t sh = begin; sh < end; ++sh) {
      const int64_t s = sh / nkv, h = sh % nkv, total = g.total(s);
      const int64_t at = (before[static_cast<size_t>(s)] * nkv + h * total) * hs;
      for (int64_t p0 = 0; p0 < total; p0 += bs) {
        const int64_t block = g.block_tables[s * d.max_blocks + p0 / bs];
        const int64_t from = (block * nkv + h) * bs * hs, n = std::min(bs, total - p0) * hs;
        convert_->f16_to_f32(reinterpret_cast<const uint16_t*>(g.key_cache) + from, staged + at + p0 * hs, n);
        convert_->f16_to_f32(reinterpret_cast<const uint16_t*>(g.value_cache) + from, staged + floats_k + at + p0 * hs,
                             n);
      }
    }
  });
  g.staged_k = staged;
  g.staged_v = staged + floats_k;
  g.kv_before = &before;  // this thread's: slices are described on any thread
}

// Sequence `seq`'s rows of the query heads that read kv head `kv_head`.
AttentionSlice PagedAttention::slice(const PagedRun& g, int64_t seq, int64_t kv_head) const {
  const int64_t n = at_.num_heads, nkv = at_.kv_num_heads, hs = g.d.head_size, bs = g.d.block_size;
  const int64_t group = n / nkv, q0 = g.query_start[seq], total = g.total(seq);
  AttentionSlice sl;
  sl.heads = group;
  sl.rows = g.query_start[seq + 1] - q0;
  sl.keys = total;
  sl.q = g.q + q0 * g.q_row + kv_head * group * hs;
  sl.q_head_stride = hs;
  sl.q_row_stride = g.q_row;
  sl.k_row_stride = sl.v_row_stride = hs;
  if (g.staged_k) {
    const int64_t at = ((*g.kv_before)[static_cast<size_t>(seq)] * nkv + kv_head * total) * hs;
    sl.k = g.staged_k + at;
    sl.v = g.staged_v + at;
  } else {
    sl.k = reinterpret_cast<const float*>(g.key_cache) + kv_head * bs * hs;
    sl.v = reinterpret_cast<const float*>(g.value_cache) + kv_head * bs * hs;
    sl.blocks = g.block_tables + seq * g.d.max_blocks;
    sl.block_rows = bs;
    sl.k_block_stride = sl.v_block_stride = nkv * bs * hs;
  }
  sl.out = g.out + q0 * n * hs + kv_head * group * hs;
  sl.out_head_stride = hs;
  sl.out_row_stride = n * hs;
  sl.causal_end = g.past_lens[seq];
  sl.window = at_.window();
  sl.sinks = g.sinks ? g.sinks + kv_head * group : nullptr;
  return sl;
}

Status PagedAttention::run(KernelContext& ctx) const {
  PagedRun g;
  EMBER_ASSIGN_OR_RETURN(g.d, dims(ctx));
  const Dims& d = g.d;
  EMBER_RETURN_IF_ERROR(check_values(ctx, d));
  EMBER_RETURN_IF_ERROR(check_in_place(ctx));
  const int64_t n = at_.num_heads, nkv = at_.kv_num_heads, hs = d.head_size;
  const bool f16 = dtype_ == DType::kF16;
  g.query_start = ctx.input(kQueryStart).data_as<int32_t>();
  g.past_lens = ctx.input(kPastLens).data_as<int32_t>();
  g.block_tables = ctx.input(kBlockTables).data_as<int32_t>();
  g.esize = dtype_size(dtype_);
  const float *query = nullptr, *key = nullptr, *value = nullptr;
  float_inputs(ctx, {{kQuery, &query}, {kKey, &key}, {kValue, &value}, {kHeadSink, &g.sinks}});
  static_cast<QkvRows&>(g) = qkv_rows(query, key, value, d.packed, hs);
  g.key_cache = static_cast<char*>(ctx.output(1).data());
  g.value_cache = static_cast<char*>(ctx.output(2).data());
  if (at_.do_rotary) {
    g.cos = ctx.input(kCos).data();
    g.sin = ctx.input(kSin).data();
  }
  write_cache(g);
  g.q = at_.do_rotary ? rotate_queries(g) : g.query;
  g.q_row = at_.do_rotary ? n * hs : g.row_floats;
  if (f16) stage_f16_cache(g);
  g.out = output_floats(ctx, d.tokens * n * hs);

  AttentionSpec spec = attention_spec(hs, g.sinks);
  spec.row_invariant = true;  // batch invariance: see the top of this file
  attend(spec, d.seqs * nkv, [&](int64_t sh) { return slice(g, sh / nkv, sh % nkv); });
  finish_output(ctx, g.out, d.tokens * n * hs);
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<OpKernel>> create_paged_attention(const KernelInit& init) {
  static constexpr const char* kNames[] = {"query", "key", "value", "key_cache", "value_cache", "query_start",
                                           "past_lens", "block_tables"};
  for (size_t i : {kQuery, kKeyCache, kValueCache, kQueryStart, kPastLens, kBlockTables}) {
    if (input_dtype(init, i) == DType::kUndefined) {
      return invalid_model("PagedAttention needs input {} ('{}')", i, kNames[i]);
    }
  }
  EMBER_ASSIGN_OR_RETURN(const DType dtype,
                         gqa_float_dtype(init, "PagedAttention", kQuery,
                                         {kKey, kValue, kKeyCache, kValueCache, kCos, kSin, kHeadSink}));
  for (size_t i : {kQueryStart, kPastLens, kBlockTables}) EMBER_RETURN_IF_ERROR(check_int32_input(init, i, kNames[i]));
  ir::AttrReader r(init.node);
  EMBER_ASSIGN_OR_RETURN(GqaAttrs at, read_gqa_attrs(r));
  return std::unique_ptr<OpKernel>(std::make_unique<PagedAttention>(at, dtype));
}

}  // namespace ember::kernels::attention
