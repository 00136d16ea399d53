// Decoder-shaped graphs at the graph level: the fusions the optimizer makes on
// onnxruntime-genai and optimum exports, decode steps whose shapes change every
// step without heap allocation, and outputs bound to the caller's buffers.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <random>

#include "graph_builder.h"
#include "op_test_util.h"
#include "runtime/session.h"
#include "threading/thread_pool.h"

// Every heap allocation of the process (operator new goes through malloc) is
// counted while `g_counting` is set. Sanitizers own malloc: the counting tests
// skip under them.
#if defined(EMBER_SANITIZED)
#define EMBER_COUNT_ALLOCATIONS 0
#else
#define EMBER_COUNT_ALLOCATIONS 1
namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};
void count() {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void* malloc(size_t n) {
  count();
  return __libc_malloc(n);
}
void* calloc(size_t n, size_t size) {
  count();
  return __libc_calloc(n, size);
}
void* realloc(void* p, size_t n) {
  count();
  return __libc_realloc(p, n);
}
void* memalign(size_t alignment, size_t n) {
  count();
  return __libc_memalign(alignment, n);
}
void* aligned_alloc(size_t alignment, size_t n) {
  count();
  return __libc_memalign(alignment, n);
}
int posix_memalign(void** p, size_t alignment, size_t n) {
  count();
  *p = __libc_memalign(alignment, n);
  return *p ? 0 : 12;  // ENOMEM
}
}
#endif

namespace ember {
namespace {

using test::attr_int;
using test::attr_ints;
using test::GraphBuilder;

#if EMBER_COUNT_ALLOCATIONS
// Heap allocations made by `f`.
template <typename F>
long allocations_in(F&& f) {
  g_allocations.store(0);
  g_counting.store(true);
  f();
  g_counting.store(false);
  return g_allocations.load();
}
#endif

Tensor random_f32(Shape shape, uint32_t seed, float scale = 1.0f) {
  Tensor t = Tensor::allocate(DType::kF32, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = dist(rng);
  return t;
}

Tensor random_u8(Shape shape, uint32_t seed) {
  Tensor t = Tensor::allocate(DType::kU8, shape);
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<uint8_t>()[i] = static_cast<uint8_t>(rng());
  return t;
}

Tensor i64_tensor(std::vector<int64_t> v) { return test::make_tensor<int64_t>({static_cast<int64_t>(v.size())}, v); }

struct DecoderConfig {
  int layers = 2;
  int64_t hidden = 64, heads = 4, head_size = 16, intermediate = 128, vocab = 96;
  bool qkv_bias = true;
};

// An onnxruntime-genai-shaped decoder without GroupQueryAttention: int4
// MatMulNBits projections (packed QKV with its bias Add), Add +
// SimplifiedLayerNormalization residuals, Sigmoid*Mul*Mul SiLU-up, and
// attention spelled in plain ops over Concat-ed caches with an
// attention_mask-derived additive mask. Inputs: input_ids [1,S],
// attention_mask [1,T], past_key_values.{i}.key/.value [1,heads,P,head_size];
// outputs: logits, present.{i}.key/.value.
class DecoderBuilder {
 public:
  explicit DecoderBuilder(DecoderConfig c) : c_(c), gb_(21) { gb_.raw()->opsets["com.microsoft"] = 1; }

  std::shared_ptr<ir::Graph> build() {
    gb_.input("input_ids", DType::kI64, {1, -1}).input("attention_mask", DType::kI64, {1, -1});
    for (int i = 0; i < c_.layers; ++i) {
      for (const char* kv : {"key", "value"}) {
        gb_.input(name("past_key_values", i, kv), DType::kF32, {1, c_.heads, -1, c_.head_size});
      }
    }
    // Symbolic dims: S and T from the builder's d<i> naming are per-position,
    // so give the caches' P its own name.
    for (ir::ValueId id : gb_.raw()->inputs) {
      ir::Value& v = gb_.raw()->value(id);
      if (v.name.starts_with("past")) v.shape[2].symbol = "past";
      if (v.name == "attention_mask") v.shape[1].symbol = "total";
    }
    gb_.constant("embed", random_f32({c_.vocab, c_.hidden}, 1));
    gb_.node("Gather", {"embed", "input_ids"}, {"h_0"});
    mask();
    std::string h = "h_0";
    for (int i = 0; i < c_.layers; ++i) h = layer(i, h);
    norm(h, "final_norm", "final_normed");
    nbits("final_normed", "lm_head", c_.hidden, c_.vocab, "logits");
    gb_.output("logits");
    for (int i = 0; i < c_.layers; ++i) gb_.output(name("present", i, "key")).output(name("present", i, "value"));
    return gb_.build();
  }

 private:
  static std::string name(const char* base, int i, const char* kv) {
    return std::string(base) + "." + std::to_string(i) + "." + kv;
  }
  std::string fresh(const std::string& base) { return base + "_" + std::to_string(next_++); }

  void ms_node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
               std::vector<ir::Attribute> attrs = {}) {
    gb_.node(op, std::move(in), std::move(out), std::move(attrs));
    gb_.raw()->nodes.back().domain = "com.microsoft";
    gb_.raw()->nodes.back().opset = 1;
  }

  void nbits(const std::string& a, const std::string& w, int64_t k, int64_t n, const std::string& y) {
    const int64_t blocks = k / 32;
    gb_.constant(w + ".B", random_u8({n, blocks, 16}, seed_++));
    gb_.constant(w + ".scales", random_f32({n * blocks}, seed_++, 0.05f));
    ms_node("MatMulNBits", {a, w + ".B", w + ".scales"}, {y},
            {attr_int("K", k), attr_int("N", n), attr_int("bits", 4), attr_int("block_size", 32),
             attr_int("accuracy_level", 4)});
  }

  void norm(const std::string& x, const std::string& w, const std::string& y) {
    Tensor gamma = random_f32({c_.hidden}, seed_++, 0.5f);
    for (int64_t i = 0; i < gamma.numel(); ++i) gamma.data_as<float>()[i] += 1.0f;
    gb_.constant(w, std::move(gamma));
    gb_.node("SimplifiedLayerNormalization", {x, w}, {y}, {test::attr_float("epsilon", 1e-6f)});
  }

  // mask_bias [1,1,1,T] = (attention_mask - 1) * 1e9 as f32.
  void mask() {
    gb_.constant("one_i64", test::make_tensor<int64_t>({}, {1}));
    gb_.constant("mask_scale", test::make_tensor<float>({}, {1e9f}));
    gb_.constant("mask_shape", i64_tensor({1, 1, 1, -1}));
    gb_.node("Sub", {"attention_mask", "one_i64"}, {"mask_m1"});
    gb_.node("Cast", {"mask_m1"}, {"mask_f"}, {attr_int("to", static_cast<int64_t>(DType::kF32))});
    gb_.node("Mul", {"mask_f", "mask_scale"}, {"mask_scaled"});
    gb_.node("Reshape", {"mask_scaled", "mask_shape"}, {"mask_bias"});
  }

  // [1,S,hidden] -> [1,heads,S,head_size]
  std::string to_heads(const std::string& x) {
    const std::string r = fresh("heads_r"), t = fresh("heads_t");
    gb_.node("Reshape", {x, "heads_shape"}, {r});
    gb_.node("Transpose", {r}, {t}, {attr_ints("perm", {0, 2, 1, 3})});
    return t;
  }

  std::string attention(int i, const std::string& normed) {
    const std::string p = "l" + std::to_string(i) + ".";
    nbits(normed, p + "qkv", c_.hidden, 3 * c_.hidden, p + "qkv_mm");
    std::string qkv = p + "qkv_mm";
    if (c_.qkv_bias) {
      gb_.constant(p + "qkv_bias", random_f32({3 * c_.hidden}, seed_++));
      gb_.node("Add", {qkv, p + "qkv_bias"}, {p + "qkv"});
      qkv = p + "qkv";
    }
    if (i == 0) {
      gb_.constant("heads_shape", i64_tensor({0, 0, c_.heads, c_.head_size}));
      gb_.constant("merge_shape", i64_tensor({0, 0, -1}));
      gb_.constant("attn_scale", test::make_tensor<float>({}, {0.25f}));
    }
    gb_.node("Split", {qkv}, {p + "q", p + "k", p + "v"}, {attr_int("axis", -1), attr_int("num_outputs", 3)});
    const std::string q = to_heads(p + "q"), k = to_heads(p + "k"), v = to_heads(p + "v");
    const std::string pk = name("present", i, "key"), pv = name("present", i, "value");
    gb_.node("Concat", {name("past_key_values", i, "key"), k}, {pk}, {attr_int("axis", 2)});
    gb_.node("Concat", {name("past_key_values", i, "value"), v}, {pv}, {attr_int("axis", 2)});
    gb_.node("Transpose", {pk}, {p + "kt"}, {attr_ints("perm", {0, 1, 3, 2})});
    gb_.node("MatMul", {q, p + "kt"}, {p + "scores"});
    gb_.node("Mul", {p + "scores", "attn_scale"}, {p + "scaled"});
    gb_.node("Add", {p + "scaled", "mask_bias"}, {p + "masked"});
    gb_.node("Softmax", {p + "masked"}, {p + "probs"}, {attr_int("axis", -1)});
    gb_.node("MatMul", {p + "probs", pv}, {p + "ctx"});
    gb_.node("Transpose", {p + "ctx"}, {p + "ctx_t"}, {attr_ints("perm", {0, 2, 1, 3})});
    gb_.node("Reshape", {p + "ctx_t", "merge_shape"}, {p + "ctx_m"});
    nbits(p + "ctx_m", p + "o_proj", c_.hidden, c_.hidden, p + "attn_out");
    return p + "attn_out";
  }

  std::string layer(int i, const std::string& h) {
    const std::string p = "l" + std::to_string(i) + ".";
    norm(h, p + "ln1", p + "normed1");
    const std::string attn = attention(i, p + "normed1");
    gb_.node("Add", {h, attn}, {p + "h_mid"});
    norm(p + "h_mid", p + "ln2", p + "normed2");
    nbits(p + "normed2", p + "gate", c_.hidden, c_.intermediate, p + "gate_out");
    nbits(p + "normed2", p + "up", c_.hidden, c_.intermediate, p + "up_out");
    gb_.node("Sigmoid", {p + "gate_out"}, {p + "gate_sig"});
    gb_.node("Mul", {p + "gate_out", p + "gate_sig"}, {p + "silu"});
    gb_.node("Mul", {p + "silu", p + "up_out"}, {p + "act"});
    nbits(p + "act", p + "down", c_.intermediate, c_.hidden, p + "mlp_out");
    const std::string next = "h_" + std::to_string(i + 1);
    gb_.node("Add", {p + "h_mid", p + "mlp_out"}, {next});
    return next;
  }

  DecoderConfig c_;
  GraphBuilder gb_;
  uint32_t seed_ = 100;
  int next_ = 0;
};

// One step's inputs: S new tokens after a cache of P.
struct StepInputs {
  Tensor ids, mask;
  std::vector<Tensor> past;
  std::vector<const Tensor*> ptrs;
};

StepInputs step_inputs(const DecoderConfig& c, int64_t s, int64_t p, uint32_t seed) {
  StepInputs in;
  std::vector<int64_t> ids(static_cast<size_t>(s));
  for (int64_t i = 0; i < s; ++i) ids[static_cast<size_t>(i)] = (seed * 7 + i * 13) % c.vocab;
  in.ids = test::make_tensor<int64_t>({1, s}, ids);
  in.mask = test::make_tensor<int64_t>({1, p + s}, std::vector<int64_t>(static_cast<size_t>(p + s), 1));
  for (int i = 0; i < 2 * c.layers; ++i) in.past.push_back(random_f32({1, c.heads, p, c.head_size}, seed + i));
  in.ptrs = {&in.ids, &in.mask};
  for (const Tensor& t : in.past) in.ptrs.push_back(&t);
  return in;
}

#if EMBER_COUNT_ALLOCATIONS
// Decode steps with the positional run(): the caller keeps one outputs vector
// and one set of input tensors sized for the longest cache, viewing a growing
// prefix of them each step, as a generation loop does.
TEST(DecodeSteps, PlainRunAllocations) {
  DecoderConfig c;
  auto session = test::make_session(DecoderBuilder(c).build(), true);
  ASSERT_TRUE(session);
  constexpr int64_t kSteps = 40, kMaxT = kSteps + 1;
  StepInputs full = step_inputs(c, 1, kMaxT, 5);
  std::vector<Tensor> outputs;
  std::vector<long> counts;
  for (int64_t p = 0; p < kSteps; ++p) {
    std::vector<Tensor> past;
    Tensor mask(DType::kI64, {1, p + 1}, full.mask.data());
    StepInputs in;
    in.ptrs = {&full.ids, &mask};
    // Views over the full caches: leading dims are 1, so a prefix of heads*P*D
    // is not the [1,heads,P,D] layout, but the values only need to be finite.
    for (Tensor& t : full.past) past.emplace_back(DType::kF32, Shape{1, c.heads, p, c.head_size}, t.data());
    for (const Tensor& t : past) in.ptrs.push_back(&t);
    Status st;
    counts.push_back(allocations_in([&] { st = session->run(in.ptrs, outputs); }));
    ASSERT_TRUE(st.is_ok()) << st.to_string();
  }
  long after_warmup = 0;
  for (int64_t p = 16; p < kSteps; ++p) after_warmup += counts[static_cast<size_t>(p)];
  std::printf("plain run(): allocations per decode step after warm-up: %.1f (first step %ld)\n",
              static_cast<double>(after_warmup) / static_cast<double>(kSteps - 16), counts[0]);
}
// Decode steps with run_bound(): the caller owns every output buffer, sized for
// the longest cache, and alternates two cache buffers per layer (present of
// step t is past of step t+1), as onnxruntime-genai does without a shared
// buffer. After warm-up (the plan cache full) a step allocates nothing but,
// rarely, a run state's arena outgrown by the cache.
TEST(DecodeSteps, BoundRunIsAllocationFree) {
  DecoderConfig c;
  auto session = test::make_session(DecoderBuilder(c).build(), true);
  ASSERT_TRUE(session);
  constexpr int64_t kSteps = 48, kWarmup = 16, kMaxT = kSteps + 1;
  StepInputs full = step_inputs(c, 1, kMaxT, 5);
  const size_t caches = full.past.size();
  std::vector<Tensor> ping, pong;
  for (size_t i = 0; i < caches; ++i) {
    ping.push_back(random_f32({1, c.heads, kMaxT, c.head_size}, 40 + static_cast<uint32_t>(i)));
    pong.push_back(Tensor::allocate(DType::kF32, {1, c.heads, kMaxT, c.head_size}));
  }
  Tensor logits = Tensor::allocate(DType::kF32, {1, 1, c.vocab});
  std::vector<Tensor> past(caches), present(caches);
  std::vector<const Tensor*> in_ptrs(2 + caches);
  std::vector<Tensor*> out_ptrs(1 + caches);
  // Kernels keep thread-local scratch sized to the largest shape they have
  // seen (sgemm's packed B grows with the cache length): one run at the
  // longest length first sizes it, as a long prompt's prefill would.
  {
    StepInputs longest = step_inputs(c, 1, kMaxT, 6);
    std::vector<Tensor> outputs;
    ASSERT_TRUE(session->run(longest.ptrs, outputs).is_ok());
  }
  std::vector<long> counts;
  for (int64_t p = 0; p < kSteps; ++p) {
    Tensor mask(DType::kI64, {1, p + 1}, full.mask.data());
    std::vector<Tensor>& from = p % 2 == 0 ? ping : pong;
    std::vector<Tensor>& to = p % 2 == 0 ? pong : ping;
    in_ptrs[0] = &full.ids;
    in_ptrs[1] = &mask;
    out_ptrs[0] = &logits;
    for (size_t i = 0; i < caches; ++i) {
      past[i] = Tensor(DType::kF32, {1, c.heads, p, c.head_size}, from[i].data());
      present[i] = Tensor(DType::kF32, {1, c.heads, p + 1, c.head_size}, to[i].data());
      in_ptrs[2 + i] = &past[i];
      out_ptrs[1 + i] = &present[i];
    }
    Status st;
    counts.push_back(allocations_in([&] { st = session->run_bound(in_ptrs, out_ptrs); }));
    ASSERT_TRUE(st.is_ok()) << st.to_string();
  }
  long after_warmup = 0;
  for (int64_t p = kWarmup; p < kSteps; ++p) after_warmup += counts[static_cast<size_t>(p)];
  const runtime::ExecutorStats stats = session->stats();
  std::printf("run_bound(): allocations in %ld steps after warm-up: %ld (first step %ld); plans built %zu, "
              "rebuilt in place %zu, planning %.1f us per plan\n",
              static_cast<long>(kSteps - kWarmup), after_warmup, counts[0], stats.plans_built, stats.plans_rebuilt,
              static_cast<double>(stats.planning_ns) / 1e3 / static_cast<double>(stats.plans_built));
  // The only allocations left are run-state arenas outgrown by the cache
  // length: each of the kMaxCachedPlans (8) states grows by half again when
  // outgrown, so over T = 17..49 each grows at most ceil(log1.5(49 / 17)) = 3
  // times, and never twice in a step. The old planner allocated ~57 per step.
  for (int64_t p = kWarmup; p < kSteps; ++p) EXPECT_LE(counts[static_cast<size_t>(p)], 1) << "step " << p;
  EXPECT_LE(after_warmup, 8 * 3);
  EXPECT_EQ(stats.plans_built, static_cast<size_t>(kSteps + 1));
}

// Planning cost per decode step of a 24-layer decoder (every step is a new
// input-shape signature).
TEST(DecodeSteps, PlanningCostOf24Layers) {
  DecoderConfig c;
  c.layers = 24;
  auto session = test::make_session(DecoderBuilder(c).build(), true);
  ASSERT_TRUE(session);
  constexpr int64_t kSteps = 40;
  std::vector<Tensor> outputs;
  size_t last_ns = 0;
  double steady_ns = 0;
  for (int64_t p = 0; p < kSteps; ++p) {
    StepInputs in = step_inputs(c, 1, p, 7);
    Status st = session->run(in.ptrs, outputs);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    const size_t ns = session->stats().planning_ns;
    if (p >= 16) steady_ns += static_cast<double>(ns - last_ns);
    last_ns = ns;
  }
  std::printf("24 layers, %zu nodes: planning %.1f us per decode step (steady state)\n", session->graph().nodes.size(),
              steady_ns / 1e3 / static_cast<double>(kSteps - 16));
}
#endif

size_t count_ops(const runtime::Session& s, const std::string& op) {
  size_t n = 0;
  for (const ir::Node& node : s.graph().nodes) n += node.op_type == op ? 1 : 0;
  return n;
}

void expect_close(const Tensor& got, const Tensor& want, double tolerance, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const float* g = got.data_as<float>();
  const float* w = want.data_as<float>();
  for (int64_t i = 0; i < got.numel(); ++i) {
    if (std::isnan(w[i])) {
      ASSERT_TRUE(std::isnan(g[i])) << what << " element " << i;
      continue;
    }
    ASSERT_NEAR(g[i], w[i], tolerance * (1.0 + std::fabs(w[i]))) << what << " element " << i;
  }
}

// The decoder after fusion: per layer one MatMulNBits with the QKV bias in
// input 5, Skip norms where a residual Add fed a norm, one FusedElementwise
// for Sigmoid*Mul*Mul; and the same logits and caches as the plain graph, at
// 1 and 2 threads, on a prompt and then a decode step.
TEST(DecoderFusion, FusedDecoderMatchesPlain) {
  DecoderConfig c;
  auto fused = test::make_session(DecoderBuilder(c).build(), true);
  auto plain = test::make_session(DecoderBuilder(c).build(), false);
  ASSERT_TRUE(fused && plain);
  EXPECT_EQ(count_ops(*plain, "Add"), static_cast<size_t>(3 * c.layers + c.layers + 0));
  EXPECT_EQ(count_ops(*fused, "SkipSimplifiedLayerNormalization"), static_cast<size_t>(2 * c.layers));
  EXPECT_EQ(count_ops(*fused, "SimplifiedLayerNormalization"), 1u);  // layer 0's first norm
  EXPECT_EQ(count_ops(*fused, "FusedElementwise"), static_cast<size_t>(c.layers));
  size_t with_bias = 0;
  for (const ir::Node& n : fused->graph().nodes) {
    if (n.op_type == "MatMulNBits" && n.inputs.size() == 6 && n.inputs[5] != ir::kNoValue) ++with_bias;
    if (n.op_type != "FusedElementwise") continue;
    std::vector<std::string> body;
    for (const ir::Node& m : n.find_attr("body")->g->nodes) body.push_back(m.op_type);
    EXPECT_EQ(body, (std::vector<std::string>{"Sigmoid", "Mul", "Mul"}));
  }
  EXPECT_EQ(with_bias, static_cast<size_t>(c.layers));
  for (int64_t p : {0, 5}) {
    StepInputs in = step_inputs(c, p == 0 ? 4 : 1, p, 11);
    std::vector<Tensor> want, got;
    ASSERT_TRUE(plain->run(in.ptrs, want).is_ok());
    for (int threads : {1, 2}) {
      threading::ScopedThreadLimit limit(threads);
      Status st = fused->run(in.ptrs, got);
      ASSERT_TRUE(st.is_ok()) << st.to_string();
      // The fused norms sum and normalize in one f32 pass like the unfused ops;
      // accuracy_level 4 quantizes the norm outputs to int8, so a last-bit
      // difference there can move one quantization step.
      for (size_t k = 0; k < want.size(); ++k) expect_close(got[k], want[k], 2e-2, "output " + std::to_string(k));
    }
  }
}

// --- RMS norm from primitive ops --------------------------------------------

enum class RmsSpelling { kReciprocal, kDivOne, kDivX, kSquareByMul, kOpset18 };

struct RmsOptions {
  RmsSpelling spelling = RmsSpelling::kReciprocal;
  float exponent = 2.0f;
  std::vector<int64_t> axes = {-1};
  int64_t keepdims = 1;
  Shape gamma_shape = {8};
  bool eps_is_input = false;
  bool expose_mean = false;  // the ReduceMean output is also a graph output
};

std::shared_ptr<ir::Graph> rms_graph(const RmsOptions& o) {
  const bool opset18 = o.spelling == RmsSpelling::kOpset18;
  GraphBuilder gb(opset18 ? 18 : 17);
  gb.input("x", DType::kF32, {-1, 8});
  gb.constant("two", test::make_tensor<float>({}, {o.exponent}));
  gb.constant("one", test::make_tensor<float>({}, {1.0f}));
  gb.constant("gamma", random_f32(o.gamma_shape, 3));
  if (o.eps_is_input) {
    gb.input("eps", DType::kF32, {});
  } else {
    gb.constant("eps", test::make_tensor<float>({}, {1e-5f}));
  }
  if (o.spelling == RmsSpelling::kSquareByMul) {
    gb.node("Mul", {"x", "x"}, {"sq"});
  } else {
    gb.node("Pow", {"x", "two"}, {"sq"});
  }
  if (opset18) {
    gb.constant("axes", i64_tensor(o.axes));
    gb.node("ReduceMean", {"sq", "axes"}, {"mean"}, {attr_int("keepdims", o.keepdims)});
  } else {
    gb.node("ReduceMean", {"sq"}, {"mean"}, {attr_ints("axes", o.axes), attr_int("keepdims", o.keepdims)});
  }
  gb.node("Add", {"mean", "eps"}, {"var"});
  gb.node("Sqrt", {"var"}, {"root"});
  switch (o.spelling) {
    case RmsSpelling::kDivX:
      gb.node("Div", {"x", "root"}, {"normed"});
      break;
    case RmsSpelling::kDivOne:
      gb.node("Div", {"one", "root"}, {"inv"});
      gb.node("Mul", {"inv", "x"}, {"normed"});
      break;
    default:
      gb.node("Reciprocal", {"root"}, {"inv"});
      gb.node("Mul", {"x", "inv"}, {"normed"});
  }
  gb.node("Mul", {"gamma", "normed"}, {"y"});
  gb.output("y");
  if (o.expose_mean) gb.output("mean");
  return gb.build();
}

void expect_rms(const RmsOptions& o, bool fuses) {
  auto fused = test::make_session(rms_graph(o), true);
  auto plain = test::make_session(rms_graph(o), false);
  ASSERT_TRUE(fused && plain);
  if (fuses) {
    EXPECT_EQ(test::op_types(*fused), std::vector<std::string>{"SimplifiedLayerNormalization"});
  } else {
    EXPECT_EQ(count_ops(*fused, "SimplifiedLayerNormalization"), 0u);
  }
  Tensor x = random_f32({5, 8}, 9, 3.0f);
  x.data_as<float>()[8] = 0.0f;  // row 1 starts with a zero and a denormal
  x.data_as<float>()[9] = 1e-40f;
  Tensor eps = test::make_tensor<float>({}, {1e-5f});
  std::vector<const Tensor*> in = {&x};
  if (o.eps_is_input) in.push_back(&eps);
  std::vector<Tensor> want, got;
  ASSERT_TRUE(plain->run(in, want).is_ok());
  Status st = fused->run(in, got);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  expect_close(got[0], want[0], 1e-6, "y");
}

TEST(RmsNormFusion, EverySpellingFuses) {
  for (RmsSpelling s : {RmsSpelling::kReciprocal, RmsSpelling::kDivOne, RmsSpelling::kDivX, RmsSpelling::kSquareByMul,
                        RmsSpelling::kOpset18}) {
    SCOPED_TRACE(static_cast<int>(s));
    RmsOptions o;
    o.spelling = s;
    expect_rms(o, true);
  }
  RmsOptions last_axis_by_index;
  last_axis_by_index.axes = {1};
  expect_rms(last_axis_by_index, true);
}

TEST(RmsNormFusion, NearMissesDoNotFuse) {
  RmsOptions cube;
  cube.exponent = 3.0f;
  expect_rms(cube, false);
  RmsOptions first_axis;
  first_axis.axes = {0};
  expect_rms(first_axis, false);
  RmsOptions row_gamma;
  row_gamma.gamma_shape = {1, 8};
  expect_rms(row_gamma, false);
  RmsOptions runtime_eps;
  runtime_eps.eps_is_input = true;
  expect_rms(runtime_eps, false);
  RmsOptions mean_used;
  mean_used.expose_mean = true;
  expect_rms(mean_used, false);
  RmsOptions opset18_first_axis;
  opset18_first_axis.spelling = RmsSpelling::kOpset18;
  opset18_first_axis.axes = {0};
  expect_rms(opset18_first_axis, false);
}

// --- Add + SimplifiedLayerNormalization -> SkipSimplifiedLayerNormalization ---

std::shared_ptr<ir::Graph> skip_graph(bool sum_is_output, bool use_inv_std, Shape b_shape) {
  GraphBuilder gb(17);
  gb.input("a", DType::kF32, {2, -1, 16});
  std::vector<int64_t> bdims(b_shape.begin(), b_shape.end());
  gb.input("b", DType::kF32, bdims);
  gb.raw()->value(gb.raw()->find_value("b")).shape[1].symbol = bdims[1] < 0 ? "d1" : "";
  gb.constant("gamma", random_f32({16}, 4));
  gb.node("Add", {"a", "b"}, {"sum"});
  gb.node("SimplifiedLayerNormalization", {"sum", "gamma"}, {"y", use_inv_std ? "inv" : ""},
          {test::attr_float("epsilon", 1e-6f)});
  gb.output("y");
  if (sum_is_output) gb.output("sum");
  if (use_inv_std) gb.output("inv");
  return gb.build();
}

TEST(SkipNormFusion, AddThenNormFusesKeepingTheSum) {
  for (bool sum_is_output : {false, true}) {
    auto fused = test::make_session(skip_graph(sum_is_output, false, {2, -1, 16}), true);
    auto plain = test::make_session(skip_graph(sum_is_output, false, {2, -1, 16}), false);
    ASSERT_TRUE(fused && plain);
    EXPECT_EQ(test::op_types(*fused), std::vector<std::string>{"SkipSimplifiedLayerNormalization"});
    const ir::Node& skip = fused->graph().nodes[0];
    EXPECT_EQ(skip.outputs.size(), 4u);
    EXPECT_EQ(skip.outputs[3] != ir::kNoValue, sum_is_output);
    Tensor a = random_f32({2, 3, 16}, 1, 2.0f), b = random_f32({2, 3, 16}, 2, 2.0f);
    std::vector<const Tensor*> in = {&a, &b};
    std::vector<Tensor> want, got;
    ASSERT_TRUE(plain->run(in, want).is_ok());
    ASSERT_TRUE(fused->run(in, got).is_ok());
    for (size_t k = 0; k < want.size(); ++k) expect_close(got[k], want[k], 1e-6, "output " + std::to_string(k));
  }
}

TEST(SkipNormFusion, NearMissesDoNotFuse) {
  // The norm's inverse standard deviation is read: the Skip op does not write it.
  auto inv_used = test::make_session(skip_graph(false, true, {2, -1, 16}), true);
  ASSERT_TRUE(inv_used);
  EXPECT_EQ(count_ops(*inv_used, "SkipSimplifiedLayerNormalization"), 0u);
  // A broadcast addend.
  auto broadcast = test::make_session(skip_graph(false, false, {1, 1, 16}), true);
  ASSERT_TRUE(broadcast);
  EXPECT_EQ(count_ops(*broadcast, "SkipSimplifiedLayerNormalization"), 0u);
}

// --- MatMulNBits + bias Add ----------------------------------------------------

std::shared_ptr<ir::Graph> nbits_bias_graph(Shape bias_shape, bool bias_is_input, bool y_read_twice) {
  GraphBuilder gb(21);
  gb.raw()->opsets["com.microsoft"] = 1;
  gb.input("a", DType::kF32, {-1, 64});
  gb.constant("B", random_u8({24, 2, 16}, 5)).constant("scales", random_f32({48}, 6, 0.1f));
  std::vector<int64_t> bdims(bias_shape.begin(), bias_shape.end());
  if (bias_is_input) {
    gb.input("bias", DType::kF32, bdims);
  } else {
    gb.constant("bias", random_f32(bias_shape, 7));
  }
  gb.node("MatMulNBits", {"a", "B", "scales"}, {"y"},
          {attr_int("K", 64), attr_int("N", 24), attr_int("bits", 4), attr_int("block_size", 32)});
  gb.raw()->nodes.back().domain = "com.microsoft";
  gb.raw()->nodes.back().opset = 1;
  gb.node("Add", {"bias", "y"}, {"z"});
  gb.output("z");
  if (y_read_twice) gb.node("Relu", {"y"}, {"r"}).output("r");
  return gb.build();
}

TEST(NBitsBiasFusion, ConstantBiasFoldsIntoInput5) {
  for (Shape bias_shape : {Shape{24}, Shape{1, 24}}) {
    auto fused = test::make_session(nbits_bias_graph(bias_shape, false, false), true);
    auto plain = test::make_session(nbits_bias_graph(bias_shape, false, false), false);
    ASSERT_TRUE(fused && plain);
    ASSERT_EQ(test::op_types(*fused), std::vector<std::string>{"MatMulNBits"});
    const ir::Node& mm = fused->graph().nodes[0];
    ASSERT_EQ(mm.inputs.size(), 6u);
    EXPECT_EQ(fused->graph().value(mm.inputs[5]).constant->shape(), Shape{24});
    Tensor a = random_f32({3, 64}, 8);
    std::vector<const Tensor*> in = {&a};
    std::vector<Tensor> want, got;
    ASSERT_TRUE(plain->run(in, want).is_ok());
    ASSERT_TRUE(fused->run(in, got).is_ok());
    expect_close(got[0], want[0], 1e-5, "z");
  }
}

TEST(NBitsBiasFusion, NearMissesDoNotFuse) {
  struct Miss {
    Shape bias_shape;
    bool bias_is_input, y_read_twice;
  };
  for (const Miss& m : {Miss{{24}, true, false}, Miss{{2, 24}, false, false}, Miss{{24}, false, true},
                        Miss{{1}, false, false}}) {
    auto fused = test::make_session(nbits_bias_graph(m.bias_shape, m.bias_is_input, m.y_read_twice), true);
    ASSERT_TRUE(fused);
    EXPECT_EQ(count_ops(*fused, "Add"), 1u) << shape_to_string(m.bias_shape);
  }
}

// --- Caller-bound outputs -------------------------------------------------------

std::shared_ptr<ir::Graph> relu_graph() {
  GraphBuilder gb(17);
  gb.input("x", DType::kF32, {-1});
  gb.node("Relu", {"x"}, {"y"}).output("y");
  gb.node("Shape", {"x"}, {"n"}).output("n");
  gb.output("x");
  return gb.build();
}

TEST(BoundOutputs, OutputMayBeTheInputBuffer) {
  auto session = test::make_session(relu_graph(), true);
  ASSERT_TRUE(session);
  Tensor x = test::make_tensor<float>({4}, {-1.0f, 2.0f, -3.0f, 4.0f});
  Tensor y(DType::kF32, {4}, x.data());  // written over its own input
  Tensor n = Tensor::allocate(DType::kI64, {1});
  const Tensor* in[] = {&x};
  Tensor* out[] = {&y, &n, nullptr};
  Status st = session->run_bound(in, out);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(y.data(), x.data());
  EXPECT_EQ(test::values_of<float>(x), (std::vector<float>{0.0f, 2.0f, 0.0f, 4.0f}));
  EXPECT_EQ(test::values_of<int64_t>(n), std::vector<int64_t>{4});
}

// Writing y over x is wrong when another node still reads x, or when y's kernel
// cannot compute in place over x: both are refused, naming the output.
TEST(BoundOutputs, UnsafeSharingIsRefused) {
  GraphBuilder gb(17);
  gb.input("x", DType::kF32, {4});
  gb.node("Relu", {"x"}, {"y"}).output("y");
  gb.node("Neg", {"x"}, {"z"}).output("z");
  auto two_readers = test::make_session(gb.build(), true);
  ASSERT_TRUE(two_readers);
  Tensor x = test::make_tensor<float>({4}, {-1.0f, 2.0f, -3.0f, 4.0f});
  Tensor y(DType::kF32, {4}, x.data());
  const Tensor* in[] = {&x};
  Tensor* out[] = {&y, nullptr};
  Status st = two_readers->run_bound(in, out);
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("'y'"), std::string::npos) << st.to_string();
  EXPECT_EQ(test::values_of<float>(x), (std::vector<float>{-1.0f, 2.0f, -3.0f, 4.0f})) << "x must be untouched";

  GraphBuilder mm(17);
  mm.input("a", DType::kF32, {2, 2});
  mm.input("b", DType::kF32, {2, 2});
  mm.node("MatMul", {"a", "b"}, {"c"}).output("c");
  auto matmul = test::make_session(mm.build(), true);
  ASSERT_TRUE(matmul);
  Tensor a = test::make_tensor<float>({2, 2}, {1.0f, 2.0f, 3.0f, 4.0f});
  Tensor b = test::make_tensor<float>({2, 2}, {1.0f, 0.0f, 0.0f, 1.0f});
  Tensor c(DType::kF32, {2, 2}, a.data());
  const Tensor* mm_in[] = {&a, &b};
  Tensor* mm_out[] = {&c};
  EXPECT_FALSE(matmul->run_bound(mm_in, mm_out).is_ok()) << "MatMul cannot write over its own input";
}

TEST(BoundOutputs, UnboundOutputsAreDroppedAndInputsCopied) {
  auto session = test::make_session(relu_graph(), true);
  ASSERT_TRUE(session);
  Tensor x = test::make_tensor<float>({3}, {-1.0f, 5.0f, 0.5f});
  Tensor x_copy = Tensor::allocate(DType::kF32, {3});
  const Tensor* in[] = {&x};
  Tensor* out[] = {nullptr, nullptr, &x_copy};
  ASSERT_TRUE(session->run_bound(in, out).is_ok());
  EXPECT_EQ(test::values_of<float>(x_copy), test::values_of<float>(x));
}

TEST(BoundOutputs, MismatchesNameTheOutput) {
  auto session = test::make_session(relu_graph(), true);
  ASSERT_TRUE(session);
  Tensor x = test::make_tensor<float>({3}, {1.0f, 2.0f, 3.0f});
  const Tensor* in[] = {&x};
  Tensor wrong_shape = Tensor::allocate(DType::kF32, {4});
  Tensor wrong_dtype = Tensor::allocate(DType::kF16, {3});
  Tensor wrong_rank = Tensor::allocate(DType::kI64, {1, 1});
  Tensor* shape_case[] = {&wrong_shape, nullptr, nullptr};
  Status st = session->run_bound(in, shape_case);
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.to_string().find("output 'y' is bound to float32[4]"), std::string::npos) << st.to_string();
  Tensor* dtype_case[] = {&wrong_dtype, nullptr, nullptr};
  st = session->run_bound(in, dtype_case);
  EXPECT_NE(st.to_string().find("output 'y'"), std::string::npos) << st.to_string();
  Tensor* rank_case[] = {nullptr, &wrong_rank, nullptr};
  st = session->run_bound(in, rank_case);
  EXPECT_NE(st.to_string().find("output 'n'"), std::string::npos) << st.to_string();
  Tensor* too_few[] = {nullptr};
  st = session->run_bound(in, too_few);
  EXPECT_NE(st.to_string().find("3 outputs, 1 were given"), std::string::npos) << st.to_string();
  // The session still runs after the errors.
  Tensor y = Tensor::allocate(DType::kF32, {3});
  Tensor* ok[] = {&y, nullptr, nullptr};
  ASSERT_TRUE(session->run_bound(in, ok).is_ok());
  EXPECT_EQ(test::values_of<float>(y), (std::vector<float>{1.0f, 2.0f, 3.0f}));
}

}  // namespace
}  // namespace ember
