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
#include <cmath>
#include <cstring>
#include <vector>

#include "base/buffer.h"
#include "kernels/attention/attention_core.h"
#include "kernels/attention/rotary_ukernels.h"
#include "kernels/common/convert.h"
#include "threading/thread_pool.h"

namespace ember::kernels::attention {
namespace {

enum Input : size_t {
  kQuery, kKey, kValue, kKeyCache, kValueCache, kQueryStart, kPastLens, kBlockTables, kCos, kSin, kHeadSink
};

struct PagedAttrs {
  int64_t num_heads = 0, kv_num_heads = 0;
  float scale = 0.0f, softcap = 0.0f;
  int64_t local_window = -1;
  bool do_rotary = false, interleaved = false, smooth_softmax = false;
};

struct Dims {
  int64_t tokens = 0, head_size = 0, seqs = 0, rot = 0;
  int64_t num_blocks = 0, block_size = 0, max_blocks = 0;
  bool packed = false;
};

// Elements per parallel_for range when rotating and storing new rows: a decode
// step (one row per head) stays inline. GroupQueryAttention's measured grain.
constexpr int64_t kCopyGrainElements = 16384;

thread_local AlignedBuffer t_query;
// float16 calls compute in f32: inputs, the cache rows attention reads and the output.
thread_local AlignedBuffer t_stage_in;
thread_local AlignedBuffer t_stage_kv;
thread_local AlignedBuffer t_stage_out;
thread_local AlignedBuffer t_row;  // per worker: one rotated row and its cos/sin rows
thread_local std::vector<int64_t> t_kv_before;

float* floats(AlignedBuffer& b, int64_t n) {
  b.resize(static_cast<size_t>(std::max<int64_t>(n, 1)) * sizeof(float));
  return static_cast<float*>(b.data());
}

// The call's tensors, resolved once per run.
struct PagedRun {
  Dims d;
  const int32_t *query_start = nullptr, *past_lens = nullptr, *block_tables = nullptr;
  const float *query = nullptr, *key = nullptr, *value = nullptr;  // f32 (staged for f16)
  int64_t row_floats = 0, kv_row_floats = 0;  // per token: [q heads | k heads | v heads] when packed
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

class PagedAttention final : public OpKernel {
 public:
  PagedAttention(PagedAttrs at, DType dtype)
      : at_(at), dtype_(dtype), rotary_(&rotary_table()), convert_(&convert_table()) {}

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
  void stage_f16_inputs(const KernelContext& ctx, PagedRun& g) const;
  void write_cache(const PagedRun& g) const;
  const float* rotate_queries(const PagedRun& g) const;
  void stage_f16_cache(PagedRun& g) const;
  AttentionSlice slice(const PagedRun& g, int64_t seq, int64_t kv_head) const;
  const float* trig_row(const PagedRun& g, bool sin, int64_t position, float* buf) const;
  void rotate(const float* x, const float* cos, const float* sin, float* y, const Dims& d) const;

  PagedAttrs at_;
  DType dtype_;  // f32, or f16 computed in f32
  const RotaryTable* rotary_;
  const ConvertTable* convert_;
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
  const int64_t heads = d.packed ? at_.num_heads + 2 * at_.kv_num_heads : at_.num_heads;
  d.head_size = q.dim(2) / heads;
  if (d.head_size * heads != q.dim(2) || d.head_size == 0) {
    return invalid_argument("input 'query' {}: hidden size {} is not a multiple of {} heads{}", q.describe(), q.dim(2),
                            heads, d.packed ? " (packed Q, K and V)" : "");
  }
  if (d.packed != !ctx.has_input(kValue)) {
    return invalid_argument("inputs 'key' and 'value' must both be given or both be omitted (packed QKV)");
  }
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
  if (at_.do_rotary) {
    if (!ctx.has_input(kCos) || !ctx.has_input(kSin)) {
      return invalid_argument("do_rotary=1 needs inputs 'cos_cache' and 'sin_cache'");
    }
    const Tensor& cos = ctx.input(kCos);
    if (cos.rank() != 2 || cos.shape() != ctx.input(kSin).shape() || 2 * cos.dim(1) > hs) {
      return invalid_argument("inputs 'cos_cache' {} and 'sin_cache' {} must both be [max_position, rotary_dim / 2] "
                              "with rotary_dim <= head_size={}",
                              cos.describe(), ctx.input(kSin).describe(), hs);
    }
    d.rot = 2 * cos.dim(1);
  }
  if (ctx.has_input(kHeadSink)) {
    const Tensor& sink = ctx.input(kHeadSink);
    if (sink.rank() != 1 || sink.dim(0) != at_.num_heads) {
      return invalid_argument("input 'head_sink' {} must be [num_heads={}]", sink.describe(), at_.num_heads);
    }
  }
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

void PagedAttention::rotate(const float* x, const float* cos, const float* sin, float* y, const Dims& d) const {
  const int64_t half = d.rot / 2;
  if (at_.interleaved) {
    rotary_->f32_rotate_pairs(x, cos, sin, y, half);
  } else {
    rotary_->f32_rotate_half(x, x + half, cos, sin, y, y + half, half);
  }
  if (d.rot < d.head_size) std::memcpy(y + d.rot, x + d.rot, static_cast<size_t>(d.head_size - d.rot) * sizeof(float));
}

// The cos or sin row of `position` as f32 (converted into buf for f16).
const float* PagedAttention::trig_row(const PagedRun& g, bool sin, int64_t position, float* buf) const {
  const int64_t half = g.d.rot / 2;
  const void* cache = sin ? g.sin : g.cos;
  if (dtype_ == DType::kF32) return static_cast<const float*>(cache) + position * half;
  convert_->f16_to_f32(static_cast<const uint16_t*>(cache) + position * half, buf, half);
  return buf;
}

// Each new token's key (rotated at its position) and value into its block row.
void PagedAttention::write_cache(const PagedRun& g) const {
  const Dims& d = g.d;
  const int64_t nkv = at_.kv_num_heads, hs = d.head_size, bs = d.block_size;
  const size_t row_bytes = static_cast<size_t>(hs) * g.esize;
  auto store = [&](const float* src, char* dst) {
    if (dtype_ == DType::kF32) std::memcpy(dst, src, row_bytes);
    else convert_->f32_to_f16(src, reinterpret_cast<uint16_t*>(dst), hs);
  };
  const int64_t grain = std::max<int64_t>(1, kCopyGrainElements / (nkv * hs));
  threading::parallel_for(d.tokens, grain, [&](int64_t begin, int64_t end) {
    float* rotated = floats(t_row, hs + d.rot);
    float* trig = rotated + hs;
    for (int64_t t = begin; t < end; ++t) {
      const int64_t s = g.seq_of(t);
      const int64_t p = g.past_lens[s] + t - g.query_start[s];
      const int64_t block = g.block_tables[s * d.max_blocks + p / bs];
      const float *cos = nullptr, *sin = nullptr;
      if (at_.do_rotary) {
        cos = trig_row(g, false, p, trig);
        sin = trig_row(g, true, p, trig + d.rot / 2);
      }
      for (int64_t h = 0; h < nkv; ++h) {
        const size_t at = static_cast<size_t>((block * nkv + h) * bs + p % bs) * row_bytes;
        const float* k = g.key + t * g.kv_row_floats + h * hs;
        if (at_.do_rotary) {
          rotate(k, cos, sin, rotated, d);
          k = rotated;
        }
        store(k, g.key_cache + at);
        store(g.value + t * g.kv_row_floats + h * hs, g.value_cache + at);
      }
    }
  });
}

// Rotated queries, [T, N, H], in a thread-local buffer.
const float* PagedAttention::rotate_queries(const PagedRun& g) const {
  const Dims& d = g.d;
  const int64_t n = at_.num_heads, hs = d.head_size;
  float* q_rot = floats(t_query, d.tokens * n * hs);
  const int64_t grain = std::max<int64_t>(1, kCopyGrainElements / (n * hs));
  threading::parallel_for(d.tokens, grain, [&](int64_t begin, int64_t end) {
    float* trig = floats(t_row, d.rot);
    for (int64_t t = begin; t < end; ++t) {
      const int64_t p = g.position(t);
      const float* cos = trig_row(g, false, p, trig);
      const float* sin = trig_row(g, true, p, trig + d.rot / 2);
      for (int64_t h = 0; h < n; ++h) rotate(g.query + t * g.row_floats + h * hs, cos, sin, q_rot + (t * n + h) * hs, d);
    }
  });
  return q_rot;
}

// float16: query/key/value and head_sink converted to f32.
void PagedAttention::stage_f16_inputs(const KernelContext& ctx, PagedRun& g) const {
  int64_t total = 0;
  for (size_t i : {kQuery, kKey, kValue, kHeadSink}) total += ctx.has_input(i) ? ctx.input(i).numel() : 0;
  float* at = floats(t_stage_in, total);
  auto stage = [&](size_t i) -> const float* {
    if (!ctx.has_input(i)) return nullptr;
    const Tensor& t = ctx.input(i);
    float* dst = at;
    threading::parallel_for(t.numel(), kCopyGrainElements, [&](int64_t begin, int64_t end) {
      convert_->f16_to_f32(t.data_as<uint16_t>() + begin, dst + begin, end - begin);
    });
    at += t.numel();
    return dst;
  };
  g.query = stage(kQuery);
  g.key = g.d.packed ? g.query + at_.num_heads * g.d.head_size : stage(kKey);
  g.value = g.d.packed ? g.query + (at_.num_heads + at_.kv_num_heads) * g.d.head_size : stage(kValue);
  g.sinks = stage(kHeadSink);
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
  float* staged = floats(t_stage_kv, 2 * floats_k);
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
  sl.window = at_.local_window > 0 ? at_.local_window : 0;
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
  g.row_floats = d.packed ? (n + 2 * nkv) * hs : n * hs;
  g.kv_row_floats = d.packed ? g.row_floats : nkv * hs;
  g.esize = dtype_size(dtype_);
  if (f16) {
    stage_f16_inputs(ctx, g);
  } else {
    g.query = ctx.input(kQuery).data_as<float>();
    g.key = d.packed ? g.query + n * hs : ctx.input(kKey).data_as<float>();
    g.value = d.packed ? g.query + (n + nkv) * hs : ctx.input(kValue).data_as<float>();
    g.sinks = ctx.has_input(kHeadSink) ? ctx.input(kHeadSink).data_as<float>() : nullptr;
  }
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
  g.out = f16 ? floats(t_stage_out, d.tokens * n * hs) : ctx.output(0).data_as<float>();

  AttentionSpec spec;
  spec.head_size = hs;
  spec.v_head_size = hs;
  spec.scale = at_.scale != 0.0f ? at_.scale : 1.0f / std::sqrt(static_cast<float>(hs));
  spec.softcap = at_.softcap;
  spec.smooth_softmax = at_.smooth_softmax || g.sinks;
  spec.row_invariant = true;  // batch invariance: see the top of this file
  attend(spec, d.seqs * nkv, [&](int64_t sh) { return slice(g, sh / nkv, sh % nkv); });
  if (f16) {
    uint16_t* y = ctx.output(0).data_as<uint16_t>();
    threading::parallel_for(d.tokens * n * hs, kCopyGrainElements, [&](int64_t begin, int64_t end) {
      convert_->f32_to_f16(g.out + begin, y + begin, end - begin);
    });
  }
  return Status::ok();
}

Result<PagedAttrs> read_attrs(const ir::Node& node) {
  ir::AttrReader r(node);
  PagedAttrs at;
  at.num_heads = r.get_int("num_heads", 0);
  at.kv_num_heads = r.get_int("kv_num_heads", 0);
  at.scale = r.get_float("scale", 0.0f);
  at.softcap = r.get_float("softcap", 0.0f);
  at.local_window = r.get_int("local_window_size", -1);
  const int64_t do_rotary = r.get_int("do_rotary", 0);
  const int64_t interleaved = r.get_int("rotary_interleaved", 0);
  const int64_t smooth = r.get_int("smooth_softmax", 0);
  const int64_t qk_output = r.get_int("qk_output", 0);
  EMBER_RETURN_IF_ERROR(r.status());
  if (at.num_heads <= 0 || at.kv_num_heads <= 0 || at.num_heads % at.kv_num_heads != 0) {
    return invalid_argument("num_heads={} and kv_num_heads={} must be positive with num_heads a multiple of "
                            "kv_num_heads",
                            at.num_heads, at.kv_num_heads);
  }
  if (at.local_window == 0 || at.local_window < -1) {
    return invalid_argument("local_window_size={} must be -1 (no window) or positive", at.local_window);
  }
  if (at.softcap < 0 || !std::isfinite(at.softcap) || !std::isfinite(at.scale)) {
    return invalid_argument("softcap={} must be finite and >= 0, scale={} finite", at.softcap, at.scale);
  }
  if (qk_output != 0) return not_implemented("qk_output={}: the attention-scores output is not implemented", qk_output);
  at.do_rotary = do_rotary == 1;
  at.interleaved = interleaved == 1;
  at.smooth_softmax = smooth == 1;
  return at;
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
  const DType dtype = input_dtype(init, kQuery);
  if (dtype != DType::kF32 && dtype != DType::kF16) {
    return not_implemented("input 'query' is {}; PagedAttention runs float32 and float16", dtype_name(dtype));
  }
  for (size_t i : {kKey, kValue, kKeyCache, kValueCache, kCos, kSin, kHeadSink}) {
    const DType t = input_dtype(init, i);
    if (t != DType::kUndefined && t != dtype) {
      return invalid_argument("input {} is {} but 'query' is {}", i, dtype_name(t), dtype_name(dtype));
    }
  }
  for (size_t i : {kQueryStart, kPastLens, kBlockTables}) {
    if (input_dtype(init, i) != DType::kI32) {
      return invalid_argument("input {} ('{}') must be int32, got {}", i, kNames[i],
                              dtype_name(input_dtype(init, i)));
    }
  }
  EMBER_ASSIGN_OR_RETURN(PagedAttrs at, read_attrs(init.node));
  return std::unique_ptr<OpKernel>(std::make_unique<PagedAttention>(at, dtype));
}

}  // namespace ember::kernels::attention
