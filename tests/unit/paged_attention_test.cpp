// ember PagedAttention: GroupQueryAttention over a paged KV cache.
//
// - Oracle: each sequence of a mixed call run alone through GroupQueryAttention
//   on a contiguous cache holding the same past rows; outputs agree (bit for bit
//   where GQA also runs the decode algorithm, <= 4 new rows), and the pool equals
//   its initial contents with GQA's present rows written in (bit for bit).
// - Batch invariance: a sequence's output rows and cache rows have the same bits
//   alone, beside other sequences, split into different chunks across calls,
//   and at 1 or 2 threads.
// - The core's paged slices against contiguous ones, and every bad input an error.
// ctest: every ISA level
// ctest: emulated CPUs
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/isa.h"
#include "kernels/attention/attention_core.h"
#include "kernels/attention/attention_ukernels.h"
#include "kernels/kernel.h"
#include "op_test_util.h"
#include "threading/thread_pool.h"

namespace ember::kernels::attention {
namespace {

struct Config {
  std::string name;
  int64_t heads = 4, kv_heads = 2, hs = 16, block_size = 16;
  bool packed = false, rotary = false, interleaved = false;
  int64_t rot = 0;  // rotary dims; 0: the whole head
  int64_t window = -1;
  float softcap = 0.0f, scale = 0.0f;
  bool sink = false, smooth = false;
  DType dtype = DType::kF32;
};

struct Seq {
  int64_t past = 0, fresh = 0;
  int64_t total() const { return past + fresh; }
};

int64_t esize(const Config& c) { return static_cast<int64_t>(dtype_size(c.dtype)); }

// f32 values in [lo, hi) as a tensor of the config's dtype.
Tensor random_tensor(const Config& c, Shape shape, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
  Tensor t = Tensor::allocate(c.dtype, std::move(shape));
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float x = d(rng);
    if (c.dtype == DType::kF32) t.data_as<float>()[i] = x;
    else t.data_as<Float16>()[i] = Float16(x);
  }
  return t;
}

float value_at(const Tensor& t, int64_t i) {
  return t.dtype() == DType::kF32 ? t.data_as<float>()[i] : static_cast<float>(t.data_as<Float16>()[i]);
}

std::vector<ir::Attribute> attrs_of(const Config& c) {
  std::vector<ir::Attribute> a = {test::attr_int("num_heads", c.heads), test::attr_int("kv_num_heads", c.kv_heads)};
  if (c.rotary) a.push_back(test::attr_int("do_rotary", 1));
  if (c.interleaved) a.push_back(test::attr_int("rotary_interleaved", 1));
  if (c.window > 0) a.push_back(test::attr_int("local_window_size", c.window));
  if (c.softcap > 0) a.push_back(test::attr_float("softcap", c.softcap));
  if (c.scale != 0) a.push_back(test::attr_float("scale", c.scale));
  if (c.smooth) a.push_back(test::attr_int("smooth_softmax", 1));
  return a;
}

// One sequence's inputs: its new tokens' query (packed Q|K|V or Q alone) and
// key/value, and the (already rotated) rows of its past.
struct SeqData {
  Tensor q, k, v;          // [1, fresh, ...]; k, v empty when packed
  Tensor past_k, past_v;   // [1, Nkv, past, H]
};

SeqData make_seq(const Config& c, const Seq& s, std::mt19937& rng) {
  SeqData d;
  const int64_t q_hidden = (c.packed ? c.heads + 2 * c.kv_heads : c.heads) * c.hs;
  d.q = random_tensor(c, {1, s.fresh, q_hidden}, rng, -1.5f, 1.5f);
  if (!c.packed) {
    d.k = random_tensor(c, {1, s.fresh, c.kv_heads * c.hs}, rng, -1.5f, 1.5f);
    d.v = random_tensor(c, {1, s.fresh, c.kv_heads * c.hs}, rng);
  }
  d.past_k = random_tensor(c, {1, c.kv_heads, s.past, c.hs}, rng, -1.5f, 1.5f);
  d.past_v = random_tensor(c, {1, c.kv_heads, s.past, c.hs}, rng);
  return d;
}

// The token rows [from, to) of [1, T, W] tensors, concatenated.
Tensor concat_tokens(const std::vector<const Tensor*>& parts, const std::vector<std::pair<int64_t, int64_t>>& ranges) {
  const int64_t width = parts[0]->dim(2);
  int64_t tokens = 0;
  for (const auto& [from, to] : ranges) tokens += to - from;
  Tensor out = Tensor::allocate(parts[0]->dtype(), {1, tokens, width});
  const size_t row = static_cast<size_t>(width) * dtype_size(out.dtype());
  char* dst = static_cast<char*>(out.data());
  for (size_t i = 0; i < parts.size(); ++i) {
    const auto [from, to] = ranges[i];
    std::memcpy(dst, static_cast<const char*>(parts[i]->data()) + from * row, static_cast<size_t>(to - from) * row);
    dst += (to - from) * row;
  }
  return out;
}

struct Rotary {
  Tensor cos, sin;  // [max_pos, rot / 2]
};

Rotary make_rotary(const Config& c, int64_t max_pos) {
  const int64_t half = (c.rot > 0 ? c.rot : c.hs) / 2;
  Rotary r;
  Tensor cos = Tensor::allocate(DType::kF32, {max_pos, half}), sin = Tensor::allocate(DType::kF32, {max_pos, half});
  for (int64_t p = 0; p < max_pos; ++p) {
    for (int64_t i = 0; i < half; ++i) {
      const double angle = p * std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(2 * half));
      cos.data_as<float>()[p * half + i] = static_cast<float>(std::cos(angle));
      sin.data_as<float>()[p * half + i] = static_cast<float>(std::sin(angle));
    }
  }
  if (c.dtype == DType::kF32) return {std::move(cos), std::move(sin)};
  r.cos = Tensor::allocate(DType::kF16, cos.shape());
  r.sin = Tensor::allocate(DType::kF16, sin.shape());
  for (int64_t i = 0; i < cos.numel(); ++i) {
    r.cos.data_as<Float16>()[i] = Float16(cos.data_as<float>()[i]);
    r.sin.data_as<Float16>()[i] = Float16(sin.data_as<float>()[i]);
  }
  return r;
}

// A pool of shuffled blocks: tables[s][j] is sequence s's j-th block (-1 past
// its last), and every other row holds garbage.
struct Pool {
  Tensor kc, vc, tables;
  int64_t block_size = 0;
  int64_t row(int64_t s, int64_t p, int64_t h, int64_t kv_heads) const {  // element offset of a row
    const int64_t block = tables.data_as<int32_t>()[s * tables.dim(1) + p / block_size];
    return ((block * kv_heads + h) * block_size + p % block_size) * kc.dim(3);
  }
};

Pool make_pool(const Config& c, const std::vector<Seq>& seqs, std::mt19937& rng, int64_t spare_blocks = 3) {
  const int64_t bs = c.block_size;
  int64_t needed = 0, widest = 1;
  for (const Seq& s : seqs) {
    const int64_t n = (s.total() + bs - 1) / bs;
    needed += n;
    widest = std::max(widest, n);
  }
  Pool p;
  p.block_size = bs;
  const int64_t blocks = needed + spare_blocks;
  p.kc = random_tensor(c, {blocks, c.kv_heads, bs, c.hs}, rng, -9.0f, 9.0f);
  p.vc = random_tensor(c, {blocks, c.kv_heads, bs, c.hs}, rng, -9.0f, 9.0f);
  std::vector<int32_t> ids(static_cast<size_t>(blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  const int64_t width = widest + 1;
  p.tables = Tensor::allocate(DType::kI32, {static_cast<int64_t>(seqs.size()), width});
  std::fill(p.tables.data_as<int32_t>(), p.tables.data_as<int32_t>() + p.tables.numel(), -1);
  size_t next = 0;
  for (size_t s = 0; s < seqs.size(); ++s) {
    for (int64_t j = 0; j < (seqs[s].total() + bs - 1) / bs; ++j) {
      p.tables.data_as<int32_t>()[static_cast<int64_t>(s) * width + j] = ids[next++];
    }
  }
  return p;
}

// Sequence s's past rows into the pool.
void fill_past(const Config& c, Pool& pool, int64_t s, const SeqData& d) {
  const int64_t past = d.past_k.dim(2);
  const size_t row = static_cast<size_t>(c.hs * esize(c));
  for (int64_t h = 0; h < c.kv_heads; ++h) {
    for (int64_t p = 0; p < past; ++p) {
      const int64_t at = pool.row(s, p, h, c.kv_heads) * esize(c);
      const int64_t from = (h * past + p) * c.hs * esize(c);
      std::memcpy(static_cast<char*>(pool.kc.data()) + at, static_cast<const char*>(d.past_k.data()) + from, row);
      std::memcpy(static_cast<char*>(pool.vc.data()) + at, static_cast<const char*>(d.past_v.data()) + from, row);
    }
  }
}

Tensor int_tensor(std::vector<int32_t> v) {
  const auto n = static_cast<int64_t>(v.size());
  return test::make_tensor<int32_t>({n}, std::move(v));
}

// Runs PagedAttention with outputs 1 and 2 bound to the pool's buffers (or to
// `other_k`/`other_v` when given, which the op must refuse).
Result<Tensor> run_paged(const Config& c, const Tensor& q, const Tensor* k, const Tensor* v, Pool& pool,
                         const Tensor& starts, const Tensor& past_lens, const Tensor* tables, const Rotary* rot,
                         const Tensor* sink, Tensor* other_k = nullptr, Tensor* other_v = nullptr) {
  ir::Node node;
  node.name = "paged";
  node.op_type = "PagedAttention";
  node.domain = "ember";
  node.opset = 1;
  node.attributes = attrs_of(c);
  const Tensor* t = tables ? tables : &pool.tables;
  std::vector<const Tensor*> ins = {&q, k, v, &pool.kc, &pool.vc, &starts, &past_lens, t,
                                    rot ? &rot->cos : nullptr, rot ? &rot->sin : nullptr, sink};
  node.num_explicit_inputs = ins.size();
  std::vector<DType> dtypes;
  for (const Tensor* in : ins) dtypes.push_back(in ? in->dtype() : DType::kUndefined);
  const std::vector<const Tensor*> constants(ins.size(), nullptr);
  EMBER_ASSIGN_OR_RETURN(auto kernel, create_kernel(KernelInit{node, dtypes, constants, nullptr}));
  EXPECT_TRUE(kernel->may_share_buffer(1, 3) && kernel->may_share_buffer(2, 4));
  Tensor out = Tensor::allocate(c.dtype, {1, q.dim(1), c.heads * c.hs});
  const std::vector<Tensor*> outs = {&out, other_k ? other_k : &pool.kc, other_v ? other_v : &pool.vc};
  KernelContext ctx(ins, outs);
  EMBER_RETURN_IF_ERROR(kernel->infer(ctx));
  EMBER_RETURN_IF_ERROR(kernel->run(ctx));
  return out;
}

// GroupQueryAttention on one sequence with a contiguous past: {output, present_key, present_value}.
std::vector<Tensor> run_gqa(const Config& c, const Seq& s, const SeqData& d, const Rotary* rot, const Tensor* sink) {
  const Tensor seqlens = int_tensor({static_cast<int32_t>(s.total() - 1)});
  const Tensor total = test::make_tensor<int32_t>(Shape{}, {static_cast<int32_t>(s.total())});
  const bool past = s.past > 0;
  auto r = test::run_op("GroupQueryAttention",
                        {&d.q, c.packed ? nullptr : &d.k, c.packed ? nullptr : &d.v, past ? &d.past_k : nullptr,
                         past ? &d.past_v : nullptr, &seqlens, &total, rot ? &rot->cos : nullptr,
                         rot ? &rot->sin : nullptr, nullptr, nullptr, sink},
                        attrs_of(c), 3, 1, "com.microsoft");
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? std::move(r).value() : std::vector<Tensor>{};
}

// ---- against GroupQueryAttention ----

struct OracleCase {
  Config c;
  std::vector<Seq> seqs;
};

void PrintTo(const OracleCase& p, std::ostream* os) { *os << p.c.name; }

class PagedVsGqa : public testing::TestWithParam<OracleCase> {};

TEST_P(PagedVsGqa, MatchesGroupQueryAttentionPerSequence) {
  const Config& c = GetParam().c;
  const std::vector<Seq>& seqs = GetParam().seqs;
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(c.name)));
  std::vector<SeqData> data;
  for (const Seq& s : seqs) data.push_back(make_seq(c, s, rng));
  Pool pool = make_pool(c, seqs, rng);
  for (size_t s = 0; s < seqs.size(); ++s) fill_past(c, pool, static_cast<int64_t>(s), data[s]);
  int64_t max_pos = 0;
  for (const Seq& s : seqs) max_pos = std::max(max_pos, s.total());
  const Rotary rot = make_rotary(c, max_pos + 3);
  const Rotary* rotp = c.rotary ? &rot : nullptr;
  const Tensor sink = random_tensor(c, {c.heads}, rng, -0.5f, 2.0f);
  const Tensor* sinkp = c.sink ? &sink : nullptr;

  std::vector<const Tensor*> qs, ks, vs;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  std::vector<int32_t> starts = {0}, past_lens;
  for (size_t s = 0; s < seqs.size(); ++s) {
    qs.push_back(&data[s].q);
    ks.push_back(&data[s].k);
    vs.push_back(&data[s].v);
    ranges.emplace_back(0, seqs[s].fresh);
    starts.push_back(starts.back() + static_cast<int32_t>(seqs[s].fresh));
    past_lens.push_back(static_cast<int32_t>(seqs[s].past));
  }
  const Tensor q = concat_tokens(qs, ranges);
  const Tensor k = c.packed ? Tensor() : concat_tokens(ks, ranges);
  const Tensor v = c.packed ? Tensor() : concat_tokens(vs, ranges);
  Pool expected = pool;
  expected.kc = pool.kc.clone();
  expected.vc = pool.vc.clone();
  auto got = run_paged(c, q, c.packed ? nullptr : &k, c.packed ? nullptr : &v, pool, int_tensor(starts),
                       int_tensor(past_lens), nullptr, rotp, sinkp);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();

  // float16 rounds the output once from f32 sums that differ in the last f32 bits (GQA's GEMM prompt path).
  const double tol = c.dtype == DType::kF32 ? 2e-5 : 2e-3;
  const int64_t width = c.heads * c.hs;
  const size_t row = static_cast<size_t>(c.hs * esize(c));
  for (size_t s = 0; s < seqs.size(); ++s) {
    const std::vector<Tensor> want = run_gqa(c, seqs[s], data[s], rotp, sinkp);
    ASSERT_EQ(want.size(), 3u);
    const bool decode_rows = seqs[s].fresh <= 4;  // GQA's decode algorithm too: the same bits
    for (int64_t i = 0; i < seqs[s].fresh * width; ++i) {
      const float w = value_at(want[0], i), g = value_at(*got, starts[s] * width + i);
      if (decode_rows) {
        ASSERT_EQ(g, w) << "sequence " << s << " (past " << seqs[s].past << ", new " << seqs[s].fresh << ") at " << i;
      } else {
        ASSERT_NEAR(g, w, tol + tol * std::fabs(w)) << "sequence " << s << " (past " << seqs[s].past << ", new "
                                                    << seqs[s].fresh << ") at " << i;
      }
    }
    for (int64_t h = 0; h < c.kv_heads; ++h) {
      for (int64_t p = seqs[s].past; p < seqs[s].total(); ++p) {
        const int64_t at = expected.row(static_cast<int64_t>(s), p, h, c.kv_heads) * esize(c);
        const int64_t from = (h * seqs[s].total() + p) * c.hs * esize(c);
        std::memcpy(static_cast<char*>(expected.kc.data()) + at, static_cast<const char*>(want[1].data()) + from, row);
        std::memcpy(static_cast<char*>(expected.vc.data()) + at, static_cast<const char*>(want[2].data()) + from, row);
      }
    }
  }
  ASSERT_EQ(std::memcmp(pool.kc.data(), expected.kc.data(), pool.kc.nbytes()), 0)
      << "key_cache: new rows differ from GQA's present rows, or other rows changed";
  ASSERT_EQ(std::memcmp(pool.vc.data(), expected.vc.data(), pool.vc.nbytes()), 0)
      << "value_cache: new rows differ from GQA's present rows, or other rows changed";
}

// Past lengths 0 and across the 256-key decode chunks, new tokens 1..40 (GQA's
// decode path at <= 4 rows, its GEMM path above), several sequences per call.
const std::vector<Seq> kMixed = {{0, 1}, {0, 9}, {5, 1}, {17, 3}, {40, 20}, {300, 1}, {255, 2}, {250, 40}, {0, 4}};
const std::vector<Seq> kShort = {{0, 1}, {3, 6}, {31, 1}, {12, 17}, {0, 5}};

std::vector<OracleCase> oracle_cases() {
  std::vector<OracleCase> v;
  auto add = [&](Config c, std::vector<Seq> seqs) { v.push_back({std::move(c), std::move(seqs)}); };
  add({.name = "plain_bs16"}, kMixed);
  add({.name = "plain_bs12", .block_size = 12}, kMixed);
  add({.name = "packed_bs12", .block_size = 12, .packed = true}, kMixed);
  add({.name = "bs1_mha", .heads = 3, .kv_heads = 3, .block_size = 1}, kShort);
  add({.name = "bs7_one_kv_head", .heads = 5, .kv_heads = 1, .block_size = 7}, kShort);
  add({.name = "rotary_half", .rotary = true}, kMixed);
  add({.name = "rotary_interleaved_bs12", .block_size = 12, .rotary = true, .interleaved = true}, kMixed);
  add({.name = "rotary_partial_packed", .hs = 32, .packed = true, .rotary = true, .rot = 16}, kShort);
  add({.name = "rotary_interleaved_partial", .hs = 40, .rotary = true, .interleaved = true, .rot = 24}, kShort);
  add({.name = "window13", .window = 13}, kMixed);
  add({.name = "window300_bs12", .block_size = 12, .window = 300}, kMixed);
  add({.name = "softcap_scale", .softcap = 2.5f, .scale = 0.3f}, kMixed);
  add({.name = "head_sink", .sink = true}, kMixed);
  add({.name = "smooth_softmax_window", .window = 20, .smooth = true}, kShort);
  add({.name = "qwen_shape", .heads = 14, .kv_heads = 2, .hs = 64, .rotary = true}, kShort);
  add({.name = "f16", .dtype = DType::kF16}, kMixed);
  add({.name = "f16_rotary_packed_bs12", .block_size = 12, .packed = true, .rotary = true, .dtype = DType::kF16},
      kMixed);
  add({.name = "f16_sink_window_interleaved", .rotary = true, .interleaved = true, .window = 30, .sink = true,
       .dtype = DType::kF16},
      kShort);
  return v;
}

INSTANTIATE_TEST_SUITE_P(Cases, PagedVsGqa, testing::ValuesIn(oracle_cases()),
                         [](const testing::TestParamInfo<OracleCase>& i) { return i.param.c.name; });

// ---- batch invariance ----

// One sequence (A) of `fresh` new tokens over `past` cached ones, run as the
// calls `chunks` describe, each call holding A's chunk and the `others` around it.
struct Invariance {
  Config c;
  int64_t past = 290, fresh = 37;
  std::vector<Seq> others;  // sequences sharing every call, A placed in the middle
};

void PrintTo(const Invariance& t, std::ostream* os) { *os << t.c.name; }

// A's output rows and its cache rows after running its tokens in `chunks`, with
// `others` sharing each call, at `threads` threads.
std::pair<std::vector<float>, std::vector<uint8_t>> run_chunked(const Invariance& t, const std::vector<int64_t>& chunks,
                                                                bool with_others, int threads) {
  const Config& c = t.c;
  std::mt19937 rng(12345);
  const Seq a{t.past, t.fresh};
  SeqData da = make_seq(c, a, rng);
  std::vector<Seq> seqs = {a};
  std::vector<SeqData> others;
  for (const Seq& s : t.others) {
    seqs.push_back(s);
    others.push_back(make_seq(c, s, rng));
  }
  std::mt19937 pool_rng(99);
  Pool pool = make_pool(c, seqs, pool_rng);  // A's blocks are the same in every scenario
  fill_past(c, pool, 0, da);
  for (size_t i = 0; i < others.size(); ++i) fill_past(c, pool, static_cast<int64_t>(i) + 1, others[i]);
  int64_t max_pos = 0;
  for (const Seq& s : seqs) max_pos = std::max(max_pos, s.total());
  const Rotary rot = make_rotary(c, max_pos);
  const Rotary* rotp = c.rotary ? &rot : nullptr;
  const Tensor sink = random_tensor(c, {c.heads}, rng, -0.5f, 2.0f);
  const Tensor* sinkp = c.sink ? &sink : nullptr;
  threading::ScopedThreadLimit limit(threads);

  std::vector<float> rows;
  int64_t done = 0;
  for (int64_t chunk : chunks) {
    // Call layout: others[0..half), A, others[half..); each other sequence sends
    // its own new tokens every call (its past then grows).
    std::vector<const Tensor*> qs, ks, vs;
    std::vector<std::pair<int64_t, int64_t>> ranges;
    std::vector<int32_t> starts = {0}, past_lens;
    std::vector<int64_t> order;
    const size_t half = with_others ? others.size() / 2 : 0;
    for (size_t i = 0; i < half; ++i) order.push_back(static_cast<int64_t>(i) + 1);
    order.push_back(0);
    if (with_others) {
      for (size_t i = half; i < others.size(); ++i) order.push_back(static_cast<int64_t>(i) + 1);
    }
    int64_t a_start = 0;
    for (int64_t s : order) {
      const SeqData& d = s == 0 ? da : others[static_cast<size_t>(s - 1)];
      const int64_t from = s == 0 ? done : 0, to = s == 0 ? done + chunk : seqs[static_cast<size_t>(s)].fresh;
      if (s == 0) a_start = starts.back();
      qs.push_back(&d.q);
      ks.push_back(&d.k);
      vs.push_back(&d.v);
      ranges.emplace_back(from, to);
      starts.push_back(starts.back() + static_cast<int32_t>(to - from));
      past_lens.push_back(static_cast<int32_t>(seqs[static_cast<size_t>(s)].past + from));
    }
    // Block tables in call order.
    Tensor tables = Tensor::allocate(DType::kI32, {static_cast<int64_t>(order.size()), pool.tables.dim(1)});
    for (size_t i = 0; i < order.size(); ++i) {
      std::memcpy(tables.data_as<int32_t>() + static_cast<int64_t>(i) * tables.dim(1),
                  pool.tables.data_as<int32_t>() + order[i] * pool.tables.dim(1),
                  static_cast<size_t>(tables.dim(1)) * sizeof(int32_t));
    }
    const Tensor q = concat_tokens(qs, ranges);
    const Tensor k = c.packed ? Tensor() : concat_tokens(ks, ranges);
    const Tensor v = c.packed ? Tensor() : concat_tokens(vs, ranges);
    auto out = run_paged(c, q, c.packed ? nullptr : &k, c.packed ? nullptr : &v, pool, int_tensor(starts),
                         int_tensor(past_lens), &tables, rotp, sinkp);
    EXPECT_TRUE(out.is_ok()) << out.status().to_string();
    if (!out.is_ok()) return {};
    const int64_t width = c.heads * c.hs;
    for (int64_t i = 0; i < chunk * width; ++i) rows.push_back(value_at(*out, a_start * width + i));
    done += chunk;
    // The other sequences' tokens are written again at the same positions next call:
    // their pasts stay as they were, and so do A's inputs.
  }
  std::vector<uint8_t> cache;
  const size_t row = static_cast<size_t>(c.hs * esize(c));
  for (const Tensor* pool_part : {&pool.kc, &pool.vc}) {
    for (int64_t h = 0; h < c.kv_heads; ++h) {
      for (int64_t p = 0; p < a.total(); ++p) {
        const auto* at = static_cast<const uint8_t*>(pool_part->data()) + pool.row(0, p, h, c.kv_heads) * esize(c);
        cache.insert(cache.end(), at, at + row);
      }
    }
  }
  return {rows, cache};
}

class PagedInvariance : public testing::TestWithParam<Invariance> {};

TEST_P(PagedInvariance, RowsDependOnlyOnTheirOwnSequence) {
  const Invariance& t = GetParam();
  const auto alone = run_chunked(t, {t.fresh}, false, 2);
  ASSERT_EQ(alone.first.size(), static_cast<size_t>(t.fresh * t.c.heads * t.c.hs));
  struct Scenario {
    const char* name;
    std::vector<int64_t> chunks;
    bool with_others;
    int threads;
  };
  std::vector<int64_t> singles(static_cast<size_t>(t.fresh), 1);
  const std::vector<Scenario> scenarios = {
      {"with other sequences", {t.fresh}, true, 2},
      {"one thread", {t.fresh}, true, 1},
      {"chunks 10 + rest", {10, t.fresh - 10}, false, 2},
      {"chunks 3 + 4 + rest, with others", {3, 4, t.fresh - 7}, true, 2},
      {"single-token calls", singles, false, 2},
      {"single-token calls with others, one thread", singles, true, 1},
  };
  for (const Scenario& s : scenarios) {
    const auto got = run_chunked(t, s.chunks, s.with_others, s.threads);
    ASSERT_EQ(got.first.size(), alone.first.size()) << s.name;
    for (size_t i = 0; i < got.first.size(); ++i) {
      ASSERT_EQ(got.first[i], alone.first[i]) << s.name << ": output row " << i / static_cast<size_t>(t.c.heads * t.c.hs);
    }
    ASSERT_EQ(got.second, alone.second) << s.name << ": cache rows";
  }
}

std::vector<Invariance> invariance_cases() {
  std::vector<Invariance> v;
  auto add = [&](Config c, int64_t past, std::vector<Seq> others) {
    Invariance t;
    t.c = std::move(c);
    t.past = past;
    t.others = std::move(others);
    v.push_back(std::move(t));
  };
  add({.name = "f32_rotary_bs16", .rotary = true}, 290, {{0, 20}, {100, 1}, {7, 3}});
  add({.name = "f32_window_softcap_bs12", .block_size = 12, .window = 50, .softcap = 3.0f}, 290, {{260, 5}, {0, 1}});
  add({.name = "f32_sink_packed_no_past", .packed = true, .sink = true}, 0, {{0, 30}, {300, 2}});
  add({.name = "f16_rotary_interleaved", .rotary = true, .interleaved = true, .dtype = DType::kF16}, 290,
      {{5, 12}, {600, 1}});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Cases, PagedInvariance, testing::ValuesIn(invariance_cases()),
                         [](const testing::TestParamInfo<Invariance>& i) { return i.param.c.name; });

// ---- the core's paged slices ----

// Keys cut into runs (of any length, empty ones too) give every level's
// microkernels the bits of one call over the same rows in a row.
TEST(PagedAttentionCore, RunMicrokernelsMatchOneRunBitForBit) {
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (Isa isa : available_isas()) {
    const AttentionTable& t = attention_table(isa);
    for (int64_t heads : {1, 3, 7, 9}) {
      for (int64_t hs : {8, 20, 64, 80, 128}) {
        const int64_t keys = 77, stride = hs + 3, ld = keys + 1;
        std::vector<float> q(static_cast<size_t>(heads * hs)), k(static_cast<size_t>(keys * stride));
        for (float& x : q) x = u(rng);
        for (float& x : k) x = u(rng);
        // The same rows copied apart into runs of 0..12 rows.
        std::vector<float> apart(static_cast<size_t>(2 * keys * stride));
        std::vector<const float*> rows;
        std::vector<int64_t> lengths;
        for (int64_t t0 = 0, at = 0; t0 < keys;) {
          const int64_t n = std::min<int64_t>(keys - t0, std::uniform_int_distribution<int64_t>(0, 12)(rng));
          std::copy_n(k.begin() + t0 * stride, n * stride, apart.begin() + at);
          rows.push_back(apart.data() + at);
          lengths.push_back(n);
          t0 += n;
          at += (n + 1) * stride;
        }
        const KeyRows runs{rows.data(), lengths.data(), static_cast<int64_t>(rows.size()), stride};
        std::vector<float> one(static_cast<size_t>(heads * ld), -5.0f), split(one);
        t.f32_qk(q.data(), hs, heads, k.data(), stride, keys, hs, 0.3f, one.data(), ld);
        t.f32_qk_runs(q.data(), hs, heads, &runs, hs, 0.3f, split.data(), ld);
        ASSERT_EQ(one, split) << isa_name(isa) << " qk heads " << heads << " hs " << hs;
        std::vector<float> acc_one(static_cast<size_t>(heads * (hs + 1)), 0.25f), acc_split(acc_one);
        t.f32_pv(one.data(), ld, heads, k.data(), stride, keys, hs, acc_one.data(), hs + 1);
        t.f32_pv_runs(one.data(), ld, heads, &runs, hs, acc_split.data(), hs + 1);
        ASSERT_EQ(acc_one, acc_split) << isa_name(isa) << " pv heads " << heads << " hs " << hs;
      }
    }
  }
}

// A paged slice reads the same keys as a contiguous one: the same bits on the
// fast path (row-invariant) and in the reference, whatever the block size.
TEST(PagedAttentionCore, PagedSlicesMatchContiguousBitForBit) {
  std::mt19937 rng(4);
  const int64_t heads = 3, hs = 24, keys = 700;
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> k(static_cast<size_t>(keys * hs)), v(k.size());
  for (float& x : k) x = u(rng);
  for (float& x : v) x = u(rng);
  AttentionSpec spec;
  spec.head_size = spec.v_head_size = hs;
  spec.scale = 0.2f;
  spec.row_invariant = true;
  for (int64_t rows : {1, 5, 20}) {
    for (int64_t window : {0, 300}) {
      std::vector<float> q(static_cast<size_t>(rows * heads * hs));
      for (float& x : q) x = u(rng);
      AttentionSlice s;
      s.heads = heads;
      s.rows = rows;
      s.keys = keys;
      s.q = q.data();
      s.q_head_stride = hs;
      s.q_row_stride = heads * hs;
      s.k = k.data();
      s.v = v.data();
      s.k_row_stride = s.v_row_stride = hs;
      s.out_head_stride = hs;
      s.out_row_stride = heads * hs;
      s.causal_end = keys - rows;
      s.window = window;
      std::vector<float> fast(q.size()), ref(q.size());
      s.out = fast.data();
      attend(spec, 1, [&](int64_t) { return s; });
      s.out = ref.data();
      attend_reference(spec, s);
      for (size_t i = 0; i < fast.size(); ++i) ASSERT_NEAR(fast[i], ref[i], 2e-5 + 2e-5 * std::fabs(ref[i]));
      for (int64_t bs : {1, 12, 16, 64}) {
        const int64_t blocks = (keys + bs - 1) / bs + 2;
        std::vector<int32_t> ids(static_cast<size_t>(blocks));
        std::iota(ids.begin(), ids.end(), 0);
        std::shuffle(ids.begin(), ids.end(), rng);
        if (bs == 16) std::sort(ids.begin(), ids.begin() + blocks / 2);  // runs of adjacent blocks, joined
        std::vector<float> pk(static_cast<size_t>(blocks * bs * hs), std::nanf("")), pv(pk.size(), std::nanf(""));
        for (int64_t t = 0; t < keys; ++t) {
          const int64_t at = (ids[static_cast<size_t>(t / bs)] * bs + t % bs) * hs;
          std::copy_n(k.begin() + t * hs, hs, pk.begin() + at);
          std::copy_n(v.begin() + t * hs, hs, pv.begin() + at);
        }
        AttentionSlice p = s;
        p.k = pk.data();
        p.v = pv.data();
        p.blocks = ids.data();
        p.block_rows = bs;
        p.k_block_stride = p.v_block_stride = bs * hs;
        std::vector<float> paged(q.size()), paged_ref(q.size());
        p.out = paged.data();
        attend(spec, 1, [&](int64_t) { return p; });
        ASSERT_EQ(paged, fast) << "block size " << bs << " rows " << rows << " window " << window;
        if (bs == 12) {
          p.out = paged_ref.data();
          attend_reference(spec, p);
          ASSERT_EQ(paged_ref, ref) << "reference, block size " << bs << " rows " << rows << " window " << window;
        }
      }
    }
  }
}

// ---- bad inputs ----

class PagedBadInput : public testing::Test {
 protected:
  // Two sequences: (past 20, 3 new) and (past 0, 2 new), block size 8, 6 blocks.
  Config c{.name = "bad", .heads = 2, .kv_heads = 1, .hs = 8, .block_size = 8, .rotary = true};
  std::mt19937 rng{3};
  Tensor q = random_tensor(c, {1, 5, 2 * 8}, rng);
  Tensor k = random_tensor(c, {1, 5, 8}, rng);
  Tensor v = random_tensor(c, {1, 5, 8}, rng);
  Pool pool = make_pool(c, {{20, 3}, {0, 2}}, rng, 2);  // blocks 0..5
  Rotary rot = make_rotary(c, 23);
  Tensor starts = int_tensor({0, 3, 5});
  Tensor past = int_tensor({20, 0});

  std::string run(const Tensor& st, const Tensor& pl, const Tensor* tables = nullptr, const Tensor* qq = nullptr,
                  bool bind = true, const Config* cc = nullptr) {
    Tensor other_k = pool.kc.clone(), other_v = pool.vc.clone();
    auto r = run_paged(cc ? *cc : c, qq ? *qq : q, &k, &v, pool, st, pl, tables, &rot, nullptr,
                       bind ? nullptr : &other_k, bind ? nullptr : &other_v);
    return r.is_ok() ? std::string() : r.status().to_string();
  }
  Tensor tables_with(int64_t s, int64_t j, int32_t id) {
    Tensor t = pool.tables.clone();
    t.data_as<int32_t>()[s * t.dim(1) + j] = id;
    return t;
  }
};

TEST_F(PagedBadInput, EachErrorNamesTheInput) {
  auto has = [](const std::string& err, const std::string& want) {
    EXPECT_NE(err.find(want), std::string::npos) << "error: '" << err << "', expected it to mention '" << want << "'";
  };
  EXPECT_EQ(run(starts, past), "") << "the valid call";
  Tensor t = tables_with(1, 0, 6);
  has(run(starts, past, &t), "block_tables[1][0] = 6");
  t = tables_with(0, 2, -1);
  has(run(starts, past, &t), "block_tables[0][2] = -1");
  t = tables_with(0, 3, -7);  // past the sequence's last block: never read
  EXPECT_EQ(run(starts, past, &t), "");
  Tensor narrow = Tensor::allocate(DType::kI32, {2, 2});
  std::fill(narrow.data_as<int32_t>(), narrow.data_as<int32_t>() + 4, 0);
  has(run(starts, past, &narrow), "need 3 blocks");
  has(run(int_tensor({0, 3, 4}), past), "query_start[2] = 4");
  has(run(int_tensor({1, 3, 5}), past), "query_start[0] = 1");
  has(run(int_tensor({0, 0, 5}), past), "at least one new token");
  has(run(int_tensor({0, 5, 5}), past), "at least one new token");
  has(run(int_tensor({0, 5}), past), "'query_start'");
  has(run(starts, int_tensor({20, -1})), "past_lens[1] = -1");
  has(run(starts, int_tensor({21, 0})), "position 23 is outside the 23 rows of 'cos_cache'");
  Tensor wide = Tensor::allocate(DType::kI32, {3, 4});
  has(run(starts, past, &wide), "'block_tables'");
  has(run(starts, past, nullptr, nullptr, false), "must be bound to the buffer of input 3");
  const Tensor q2 = random_tensor(c, {2, 5, 16}, rng);
  has(run(starts, past, nullptr, &q2), "'query'");
  const Tensor q3 = random_tensor(c, {1, 5, 15}, rng);
  has(run(starts, past, nullptr, &q3), "not a multiple of 2 heads");
  Config no_rot = c;
  no_rot.rotary = false;
  no_rot.kv_heads = 2;
  has(run(starts, past, nullptr, nullptr, true, &no_rot), "'key'");
}

TEST_F(PagedBadInput, CacheShapesAndDtypesAreChecked) {
  Pool bad = pool;
  bad.kc = random_tensor(c, {6, 1, 8, 4}, rng);  // head size 4
  bad.vc = random_tensor(c, {6, 1, 8, 4}, rng);
  auto r = run_paged(c, q, &k, &v, bad, starts, past, nullptr, &rot, nullptr);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().to_string().find("'key_cache'"), std::string::npos) << r.status().to_string();

  Pool one = pool;
  one.vc = one.kc;  // the same buffer for both
  r = run_paged(c, q, &k, &v, one, starts, past, nullptr, &rot, nullptr);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().to_string().find("one buffer"), std::string::npos) << r.status().to_string();

  Config f16 = c;
  f16.dtype = DType::kF16;
  Pool half = pool;
  half.kc = random_tensor(f16, pool.kc.shape(), rng);
  r = run_paged(c, q, &k, &v, half, starts, past, nullptr, &rot, nullptr);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().to_string().find("float16"), std::string::npos) << r.status().to_string();

  const Tensor wide_starts = test::make_tensor<int64_t>({3}, {0, 3, 5});
  ir::Node node;
  node.op_type = "PagedAttention";
  node.domain = "ember";
  node.opset = 1;
  node.attributes = {test::attr_int("num_heads", 2), test::attr_int("kv_num_heads", 1)};
  const std::vector<const Tensor*> constants(8, nullptr);
  std::vector<DType> dtypes = {DType::kF32, DType::kF32, DType::kF32, DType::kF32,
                               DType::kF32, DType::kI64, DType::kI32, DType::kI32};
  auto kernel = create_kernel(KernelInit{node, dtypes, constants, nullptr});
  ASSERT_FALSE(kernel.is_ok());
  EXPECT_NE(kernel.status().to_string().find("query_start"), std::string::npos) << kernel.status().to_string();
  dtypes[5] = DType::kI32;
  dtypes[3] = DType::kUndefined;
  kernel = create_kernel(KernelInit{node, dtypes, constants, nullptr});
  ASSERT_FALSE(kernel.is_ok());
  EXPECT_NE(kernel.status().to_string().find("key_cache"), std::string::npos) << kernel.status().to_string();
  dtypes[3] = DType::kF32;
  node.attributes.push_back(test::attr_int("qk_output", 1));
  kernel = create_kernel(KernelInit{node, dtypes, constants, nullptr});
  ASSERT_FALSE(kernel.is_ok());
  EXPECT_NE(kernel.status().to_string().find("qk_output"), std::string::npos) << kernel.status().to_string();
}

}  // namespace
}  // namespace ember::kernels::attention
