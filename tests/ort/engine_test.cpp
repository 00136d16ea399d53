// The serving engine on the decoder fixtures (tools/make_decoder_fixtures.py):
// greedy output against ONNX Runtime; a request's tokens the same whether it
// runs alone or with others, chunked or not, preempted or not, from the prefix
// cache or computed; and every KV block back in the pool at the end.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "base/buffer.h"
#include "failing_processor.h"
#include "genai/engine.h"
#include "greedy_reference.h"

namespace ember {
namespace {

using fixtures::DecoderFixtureSpec;
using genai::Engine;
using genai::EngineOptions;
using genai::EngineRequest;
using genai::FinishedRequest;
using genai::RequestId;
using genai::StopReason;

DecoderFixtureSpec spec(const char* family, const char* weights, const char* attention = "gqa") {
  DecoderFixtureSpec s;
  s.family = family;
  s.weights = weights;
  s.attention = attention;
  s.max_length = 256;
  return s;
}

std::unique_ptr<Engine> load(const std::string& dir, EngineOptions options = {}) {
  auto e = Engine::load(dir, options);
  EXPECT_TRUE(e.is_ok()) << e.status().to_string();
  return e.is_ok() ? std::move(*e) : nullptr;
}

EngineRequest greedy(std::vector<int64_t> prompt, int new_tokens) {
  EngineRequest r;
  r.prompt = std::move(prompt);
  r.params.max_new_tokens = new_tokens;
  return r;
}

EngineRequest sampled(std::vector<int64_t> prompt, int new_tokens, uint64_t seed) {
  EngineRequest r = greedy(std::move(prompt), new_tokens);
  r.params.sampling.greedy = false;
  r.params.sampling.temperature = 0.9f;
  r.params.sampling.top_k = 20;
  r.params.sampling.seed = seed;
  return r;
}

// Steps until idle; the finished requests by id.
std::map<RequestId, FinishedRequest> drain(Engine& e) {
  std::map<RequestId, FinishedRequest> done;
  for (int steps = 0; !e.idle() && steps < 100000; ++steps) {
    const Status st = e.step();
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    if (!st.is_ok()) break;
    for (FinishedRequest& f : e.take_finished()) done[f.id] = std::move(f);
  }
  for (FinishedRequest& f : e.take_finished()) done[f.id] = std::move(f);
  EXPECT_TRUE(e.idle());
  return done;
}

// Each request alone in a fresh engine (no prefix cache, whole prompt in one run).
std::vector<std::vector<int64_t>> run_alone(const std::string& dir, const std::vector<EngineRequest>& requests) {
  std::vector<std::vector<int64_t>> out;
  for (const EngineRequest& r : requests) {
    EngineOptions options;
    options.prefix_caching = false;
    auto e = load(dir, options);
    if (!e) return {};
    auto id = e->add(r);
    EXPECT_TRUE(id.is_ok()) << id.status().to_string();
    auto done = drain(*e);
    out.push_back(done[*id].result.tokens);
  }
  return out;
}

void expect_pool_empty(const Engine& e) {
  const genai::EngineStats s = e.stats();
  EXPECT_EQ(s.pool.referenced_blocks, 0);
  EXPECT_EQ(s.running, 0);
  EXPECT_EQ(s.waiting, 0);
}

TEST(Engine, GreedyMatchesOrt) {
  for (const auto& s : {spec("qwen2", "int4"), spec("gemma2", "fp32"), spec("mistral", "int4")}) {
    const std::string dir = fixtures::make_test_fixture(s);
    auto e = load(dir);
    ASSERT_TRUE(e);
    const auto prompt = fixtures::prompt_tokens(12, e->config().vocab_size, 0);
    auto id = e->add(greedy(prompt, 64));
    ASSERT_TRUE(id.is_ok());
    auto done = drain(*e);
    ASSERT_EQ(done.count(*id), 1u);
    fixtures::expect_ort_greedy(s, dir, prompt, 64, done[*id].result.tokens, e->config(), fixtures::fixture_name(s));
    expect_pool_empty(*e);
  }
}

// Requests of mixed lengths, two sharing a prefix, greedy and seeded; they
// arrive over several steps and prompts are chunked by a small step budget.
std::vector<EngineRequest> mixed_requests(int vocab) {
  const auto shared = fixtures::prompt_tokens(37, vocab, 9);
  auto extended = shared;
  for (int64_t t : fixtures::prompt_tokens(5, vocab, 3)) extended.push_back(t);
  return {greedy(fixtures::prompt_tokens(5, vocab, 1), 30),  greedy(shared, 24),
          greedy(fixtures::prompt_tokens(70, vocab, 2), 20), sampled(fixtures::prompt_tokens(9, vocab, 4), 25, 11),
          greedy(extended, 18),                              sampled(shared, 22, 5),
          greedy(fixtures::prompt_tokens(1, vocab, 6), 12)};
}

void check_concurrent_equals_alone(const DecoderFixtureSpec& s) {
  const std::string dir = fixtures::make_test_fixture(s);
  EngineOptions options;
  options.block_size = 8;
  options.step_tokens = 24;
  auto e = load(dir, options);
  ASSERT_TRUE(e);
  const auto requests = mixed_requests(e->config().vocab_size);
  const auto alone = run_alone(dir, requests);
  ASSERT_EQ(alone.size(), requests.size());
  std::vector<RequestId> ids;
  std::map<RequestId, FinishedRequest> done;
  for (size_t i = 0; i < requests.size(); ++i) {
    auto id = e->add(requests[i]);
    ASSERT_TRUE(id.is_ok()) << id.status().to_string();
    ids.push_back(*id);
    // Later requests join while earlier ones are running.
    for (int k = 0; k < 3; ++k) ASSERT_TRUE(e->step().is_ok());
    for (FinishedRequest& f : e->take_finished()) done[f.id] = std::move(f);
  }
  for (auto& [id, f] : drain(*e)) done[id] = std::move(f);
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(done[ids[i]].result.tokens, alone[i]) << "request " << i;
  }
  // The second request with the shared prefix reused its full blocks.
  EXPECT_EQ(done[ids[5]].result.stats.reused_tokens, 32);
  EXPECT_GT(e->stats().prefix_tokens_reused, 0);
  expect_pool_empty(*e);
}

TEST(Engine, ConcurrentEqualsAloneQwen2Int4) { check_concurrent_equals_alone(spec("qwen2", "int4")); }
TEST(Engine, ConcurrentEqualsAloneGemma2Fp32) { check_concurrent_equals_alone(spec("gemma2", "fp32")); }

// At Qwen2.5-0.5B's widths the kernels take their blocked paths (GEMM panels
// for many rows, GEMV for one), which must give a row the same bits either way.
DecoderFixtureSpec real_widths(const char* weights) {
  DecoderFixtureSpec s = spec("qwen2", weights);
  s.shape = "qwen2.5-0.5b";
  s.layers = 2;
  s.vocab = 8192;
  return s;
}
TEST(Engine, ConcurrentEqualsAloneRealWidthsInt4) { check_concurrent_equals_alone(real_widths("int4")); }
TEST(Engine, ConcurrentEqualsAloneRealWidthsFp32) { check_concurrent_equals_alone(real_widths("fp32")); }

TEST(Engine, PreemptionLosesNothing) {
  const std::string dir = fixtures::make_test_fixture(spec("qwen2", "int4"));
  EngineOptions options;
  options.block_size = 4;
  options.kv_tokens = 64;  // 16 blocks for four requests that grow to 30 tokens each
  auto e = load(dir, options);
  ASSERT_TRUE(e);
  const int vocab = e->config().vocab_size;
  std::vector<EngineRequest> requests;
  for (int i = 0; i < 4; ++i) requests.push_back(greedy(fixtures::prompt_tokens(10, vocab, 20 + i), 20));
  const auto alone = run_alone(dir, requests);
  std::vector<RequestId> ids;
  for (const auto& r : requests) ids.push_back(*e->add(r));
  auto done = drain(*e);
  int64_t preemptions = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(done[ids[i]].result.tokens, alone[i]) << "request " << i;
    EXPECT_EQ(done[ids[i]].result.stop, StopReason::kMaxNewTokens);
    preemptions += done[ids[i]].preemptions;
  }
  EXPECT_GT(preemptions, 0);
  EXPECT_EQ(e->stats().preemptions, preemptions);
  expect_pool_empty(*e);
}

TEST(Engine, CancellationFreesBlocksAtOnce) {
  const std::string dir = fixtures::make_test_fixture(spec("qwen2", "int4"));
  EngineOptions options;
  options.block_size = 4;
  options.prefix_caching = false;
  auto e = load(dir, options);
  ASSERT_TRUE(e);
  const int vocab = e->config().vocab_size;
  const auto keep = greedy(fixtures::prompt_tokens(9, vocab, 1), 20);
  const RequestId a = *e->add(keep);
  const RequestId b = *e->add(greedy(fixtures::prompt_tokens(30, vocab, 2), 20));
  const RequestId c = *e->add(greedy(fixtures::prompt_tokens(6, vocab, 3), 20));
  for (int k = 0; k < 3; ++k) ASSERT_TRUE(e->step().is_ok());
  const int64_t before = e->stats().pool.referenced_blocks;
  ASSERT_TRUE(e->cancel(b));
  // b held (30 prompt + 2 decoded positions) / 4 = 8 blocks.
  EXPECT_EQ(e->stats().pool.referenced_blocks, before - 8);
  EXPECT_FALSE(e->cancel(b));
  EXPECT_FALSE(e->cancel(12345));
  ASSERT_TRUE(e->cancel(c));
  auto done = drain(*e);
  EXPECT_EQ(done[b].result.stop, StopReason::kCancelled);
  EXPECT_EQ(done[c].result.stop, StopReason::kCancelled);
  EXPECT_EQ(done[a].result.tokens, run_alone(dir, {keep}).front());
  expect_pool_empty(*e);
  // A callback returning false cancels too.
  EngineRequest stop_early = greedy(fixtures::prompt_tokens(4, vocab, 7), 20);
  int seen = 0;
  stop_early.params.on_token = [&seen](int64_t) { return ++seen < 3; };
  const RequestId d = *e->add(stop_early);
  done = drain(*e);
  EXPECT_EQ(done[d].result.stop, StopReason::kCallback);
  EXPECT_EQ(done[d].result.tokens.size(), 3u);
  expect_pool_empty(*e);
}

TEST(Engine, PrefixCacheHitsAndCopyOnWrite) {
  const std::string dir = fixtures::make_test_fixture(spec("qwen2", "int4"));
  EngineOptions options;
  options.block_size = 8;
  auto e = load(dir, options);
  ASSERT_TRUE(e);
  const int vocab = e->config().vocab_size;
  const auto system = fixtures::prompt_tokens(48, vocab, 30);  // six full blocks
  auto first = greedy(system, 10);
  auto longer = system;
  longer.push_back(17);
  const std::vector<EngineRequest> requests = {first, greedy(longer, 10), greedy(system, 10)};
  const auto alone = run_alone(dir, requests);
  std::vector<FinishedRequest> got;
  for (const auto& r : requests) {
    const RequestId id = *e->add(r);
    got.push_back(std::move(drain(*e)[id]));
  }
  EXPECT_EQ(got[0].result.stats.reused_tokens, 0);
  EXPECT_EQ(got[1].result.stats.reused_tokens, 48);
  // The whole prompt is cached: its last token is recomputed in a private copy of the last block.
  EXPECT_EQ(got[2].result.stats.reused_tokens, 47);
  for (size_t i = 0; i < requests.size(); ++i) EXPECT_EQ(got[i].result.tokens, alone[i]) << "request " << i;
  const genai::EngineStats s = e->stats();
  EXPECT_EQ(s.prefix_tokens_reused, 95);
  EXPECT_GE(s.pool.cached_blocks, 6);
  expect_pool_empty(*e);
}

TEST(Engine, MemoryFollowsTheTokensHeld) {
  const std::string dir = fixtures::make_test_fixture(spec("qwen2", "int4"));
  EngineOptions options;
  options.block_size = 16;
  options.prefix_caching = false;
  options.kv_tokens = 16 * 256;
  auto e = load(dir, options);
  ASSERT_TRUE(e);
  const int vocab = e->config().vocab_size;
  for (int i = 0; i < 16; ++i) ASSERT_TRUE(e->add(greedy(fixtures::prompt_tokens(3 + 11 * i, vocab, i), 40)).is_ok());
  int64_t checked = 0;
  while (!e->idle()) {
    ASSERT_TRUE(e->step().is_ok());
    const genai::EngineStats s = e->stats();
    // Whole blocks over the positions held: at most one partial block per sequence.
    EXPECT_LE(s.pool.referenced_blocks * s.block_size, s.tokens_held + s.running * s.block_size);
    checked += s.running > 1;
    e->take_finished();
  }
  EXPECT_GT(checked, 0);
  expect_pool_empty(*e);
}

TEST(Engine, OversizedAndBadRequestsAreRefused) {
  const std::string dir = fixtures::make_test_fixture(spec("qwen2", "int4"));
  EngineOptions options;
  options.block_size = 4;
  options.kv_tokens = 32;
  auto e = load(dir, options);
  ASSERT_TRUE(e);
  const int vocab = e->config().vocab_size;
  EXPECT_FALSE(e->add(greedy({}, 4)).is_ok());
  EXPECT_FALSE(e->add(greedy({1, vocab}, 4)).is_ok());
  EXPECT_FALSE(e->add(greedy({1, -1}, 4)).is_ok());
  EXPECT_FALSE(e->add(greedy({1, 2}, 0)).is_ok());
  const auto too_long = e->add(greedy(fixtures::prompt_tokens(32, vocab, 1), 4));
  ASSERT_FALSE(too_long.is_ok());
  EXPECT_NE(too_long.status().to_string().find("KV pool of 32 tokens"), std::string::npos)
      << too_long.status().to_string();
  // A request that outgrows the whole pool alone stops there, its tokens kept.
  const RequestId id = *e->add(greedy(fixtures::prompt_tokens(20, vocab, 2), 40));
  auto done = drain(*e);
  EXPECT_EQ(done[id].result.stop, StopReason::kContextFull);
  EXPECT_EQ(done[id].result.tokens.size(), 13u);  // 20 + 12 positions fill 32; the 13th token has no room
  expect_pool_empty(*e);
}

void* failing_allocate(size_t, size_t) { return nullptr; }

// The memory a step needs cannot be had (the allocator fails, as at the
// memory limit): step() says so, the server's loop fails what runs with that
// error (Engine::fail), and
// the engine serves the next requests as before, every block given back.
TEST(Engine, AFailedAllocationFailsTheStepAndTheEngineServesOn) {
  const std::string dir = fixtures::make_test_fixture(spec("qwen2", "int4"));
  EngineOptions options;
  options.block_size = 4;
  options.prefix_caching = false;
  auto e = load(dir, options);
  ASSERT_TRUE(e);
  const int vocab = e->config().vocab_size;
  const RequestId a = *e->add(greedy(fixtures::prompt_tokens(40, vocab, 1), 8));
  const RequestId b = *e->add(greedy(fixtures::prompt_tokens(7, vocab, 2), 8));
  set_allocate_hook(failing_allocate);
  const Status failed = e->step();
  set_allocate_hook(nullptr);
  ASSERT_FALSE(failed.is_ok()) << "the first step allocates its activations";
  EXPECT_NE(failed.message().find("out of memory"), std::string::npos) << failed.to_string();
  EXPECT_TRUE(e->fail(a, failed.message()));
  EXPECT_TRUE(e->cancel(b));
  EXPECT_FALSE(e->fail(a, "again")) << "a finished request";
  auto ended = drain(*e);
  EXPECT_EQ(ended[a].result.stop, StopReason::kError);
  EXPECT_EQ(ended[a].result.error, failed.message());
  EXPECT_EQ(ended[b].result.stop, StopReason::kCancelled);
  EXPECT_EQ(ended[b].result.error, "");
  expect_pool_empty(*e);
  const auto next = greedy(fixtures::prompt_tokens(40, vocab, 3), 8);
  const RequestId c = *e->add(next);
  auto done = drain(*e);
  EXPECT_EQ(done[c].result.tokens, run_alone(dir, {next}).front());
  expect_pool_empty(*e);
}

// A request whose logits processor fails (a grammar matcher past its budget)
// ends at that token with its error; the request beside it is untouched.
TEST(Engine, AFailedLogitsProcessorEndsItsRequestWithItsError) {
  const std::string dir = fixtures::make_test_fixture(spec("qwen2", "int4"));
  auto e = load(dir);
  ASSERT_TRUE(e);
  const int vocab = e->config().vocab_size;
  EngineRequest failing = greedy(fixtures::prompt_tokens(12, vocab, 1), 8);
  const std::vector<int64_t> plain = run_alone(dir, {failing}).front();
  failing.params.make_constraint = test::fails_after(3);
  const EngineRequest other = greedy(fixtures::prompt_tokens(9, vocab, 2), 8);
  const RequestId a = *e->add(failing);
  const RequestId b = *e->add(other);
  auto done = drain(*e);
  EXPECT_EQ(done[a].result.stop, StopReason::kError);
  EXPECT_EQ(done[a].result.error, test::FailsAfter::message(3));
  EXPECT_EQ(done[a].result.tokens, std::vector<int64_t>(plain.begin(), plain.begin() + 3));
  EXPECT_EQ(done[b].result.stop, StopReason::kMaxNewTokens);
  EXPECT_EQ(done[b].result.tokens, run_alone(dir, {other}).front());
  expect_pool_empty(*e);
}

// Greedy with top_logprobs = 5: each token's logprob is its list's first
// (greedy takes the most likely), the list is five values <= 0, sorted; and
// Generator, on its contiguous cache, reports the same tokens and logprobs.
TEST(Engine, LogprobsOfGreedyTokensMatchGenerator) {
  const std::string dir = fixtures::make_test_fixture(spec("qwen2", "int4"));
  auto e = load(dir);
  ASSERT_TRUE(e);
  const auto prompt = fixtures::prompt_tokens(12, e->config().vocab_size, 0);
  constexpr int kTokens = 24;
  // Records each token's logprobs and checks they arrive just before the token.
  struct Stream {
    std::vector<genai::TokenLogprobs> logprobs;
    std::vector<int64_t> tokens;
    void attach(genai::GenerationParams& p) {
      p.top_logprobs = 5;
      p.on_logprobs = [this](const genai::TokenLogprobs& lp) {
        EXPECT_EQ(logprobs.size(), tokens.size());
        logprobs.push_back(lp);
      };
      p.on_token = [this](int64_t token) {
        EXPECT_EQ(logprobs.size(), tokens.size() + 1);
        if (!logprobs.empty()) {
          EXPECT_EQ(logprobs.back().token, token);
        }
        tokens.push_back(token);
        return true;
      };
    }
  };
  Stream engine;
  EngineRequest request = greedy(prompt, kTokens);
  engine.attach(request.params);
  const RequestId id = *e->add(request);
  auto done = drain(*e);
  ASSERT_EQ(done[id].result.tokens.size(), size_t{kTokens});
  EXPECT_EQ(engine.tokens, done[id].result.tokens);
  ASSERT_EQ(engine.logprobs.size(), engine.tokens.size());
  for (size_t i = 0; i < engine.logprobs.size(); ++i) {
    const genai::TokenLogprobs& lp = engine.logprobs[i];
    ASSERT_EQ(lp.top.size(), 5u) << "token " << i;
    EXPECT_EQ(lp.top[0].first, lp.token) << "token " << i;
    EXPECT_EQ(lp.logprob, lp.top[0].second) << "token " << i;
    for (size_t k = 0; k < lp.top.size(); ++k) {
      EXPECT_LE(lp.top[k].second, 0.0f) << "token " << i << " rank " << k;
      EXPECT_TRUE(std::isfinite(lp.top[k].second)) << "token " << i << " rank " << k;
      if (k > 0) {
        EXPECT_LE(lp.top[k].second, lp.top[k - 1].second) << "token " << i << " rank " << k;
      }
    }
  }
  expect_pool_empty(*e);

  auto g = genai::Generator::load(dir);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  Stream generator;
  genai::GenerationParams params;
  params.max_new_tokens = kTokens;
  generator.attach(params);
  auto result = (*g)->generate(prompt, params);
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  EXPECT_EQ(result->tokens, engine.tokens);
  ASSERT_EQ(generator.logprobs.size(), engine.logprobs.size());
  for (size_t i = 0; i < engine.logprobs.size(); ++i) {
    const genai::TokenLogprobs &want = engine.logprobs[i], &got = generator.logprobs[i];
    EXPECT_EQ(got.token, want.token) << "token " << i;
    EXPECT_NEAR(got.logprob, want.logprob, 1e-5) << "token " << i;
    ASSERT_EQ(got.top.size(), want.top.size()) << "token " << i;
    for (size_t k = 0; k < want.top.size(); ++k) {
      EXPECT_EQ(got.top[k].first, want.top[k].first) << "token " << i << " rank " << k;
      EXPECT_NEAR(got.top[k].second, want.top[k].second, 1e-5) << "token " << i << " rank " << k;
    }
  }
}

TEST(Engine, TopLogprobsAboveTwentyIsRefused) {
  const std::string dir = fixtures::make_test_fixture(spec("qwen2", "int4"));
  auto e = load(dir);
  ASSERT_TRUE(e);
  const auto prompt = fixtures::prompt_tokens(4, e->config().vocab_size, 1);
  EngineRequest request = greedy(prompt, 2);
  request.params.top_logprobs = genai::kMaxTopLogprobs + 1;
  const auto refused = e->add(request);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().to_string().find("top_logprobs 21"), std::string::npos) << refused.status().to_string();
  request.params.top_logprobs = genai::kMaxTopLogprobs;
  EXPECT_TRUE(e->add(request).is_ok());
  drain(*e);

  genai::GeneratorOptions options;
  options.max_batch = 2;
  auto g = genai::Generator::load(dir, options);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  genai::GenerationParams params;
  params.max_new_tokens = 2;
  params.top_logprobs = genai::kMaxTopLogprobs + 1;
  const auto too_many = (*g)->generate(prompt, params);
  ASSERT_FALSE(too_many.is_ok());
  EXPECT_NE(too_many.status().to_string().find("top_logprobs 21"), std::string::npos) << too_many.status().to_string();
  // generate_batch reports no logprobs, and says so rather than ignoring the field.
  params.top_logprobs = 0;
  const std::vector<std::vector<int64_t>> prompts = {prompt, prompt};
  const auto batch = (*g)->generate_batch(prompts, params);
  ASSERT_FALSE(batch.is_ok());
  EXPECT_NE(batch.status().to_string().find("top_logprobs"), std::string::npos) << batch.status().to_string();
}

TEST(Engine, NonGqaExportsAreRefusedByName) {
  const std::string dir = fixtures::make_test_fixture(spec("optimum", "fp32"));
  auto e = Engine::load(dir);
  ASSERT_FALSE(e.is_ok());
  EXPECT_NE(e.status().to_string().find("GroupQueryAttention"), std::string::npos) << e.status().to_string();
}

}  // namespace
}  // namespace ember
