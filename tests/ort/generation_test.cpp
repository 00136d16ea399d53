// The generation engine against an ONNX Runtime-driven greedy loop over the
// same decoder fixture (tools/make_decoder_fixtures.py): 64 new tokens must be
// identical token for token, on the shared-buffer GroupQueryAttention path and
// on the two-buffer path of Concat exports; a follow-up turn that reuses the
// cached prefix must give what a fresh prefill of the whole conversation gives.
// int4 fixtures (int8 activations) may part from ORT at a near-tie in ORT's own
// logits, and only there (expect_ort_greedy).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "decoder_fixture.h"
#include "failing_processor.h"
#include "genai/generator.h"
#include "greedy_reference.h"

namespace fs = std::filesystem;

namespace ember {
namespace {

using fixtures::DecoderFixtureSpec;
using fixtures::expect_ort_greedy;
using fixtures::make_test_fixture;
using fixtures::load_generator;
using fixtures::prompt_tokens;
using fixtures::spec;

constexpr int kNewTokens = 64;

genai::GenerationParams greedy(int n = kNewTokens) {
  genai::GenerationParams p;
  p.max_new_tokens = n;
  return p;
}

void check_greedy(const DecoderFixtureSpec& s, bool expect_shared) {
  const std::string dir = make_test_fixture(s);
  auto g = load_generator(dir);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->shares_kv_buffer(), expect_shared);
  EXPECT_TRUE(g->gathered_logits());  // every fixture's LM head is recognized
  const auto prompt = prompt_tokens(12, g->config().vocab_size, 0);
  auto result = g->generate(prompt, greedy());
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  expect_ort_greedy(s, dir, prompt, kNewTokens, result->tokens, g->config(), fixtures::fixture_name(s));
  EXPECT_EQ(result->stats.generated_tokens, static_cast<int64_t>(result->tokens.size()));
  EXPECT_GT(result->stats.decode_tokens_per_s(), 0.0);
}

TEST(Generation, Qwen2Int4SharedBuffer) { check_greedy(spec("qwen2", "int4"), true); }
TEST(Generation, LlamaFp32SharedBuffer) { check_greedy(spec("llama", "fp32"), true); }
TEST(Generation, Qwen3Int4SharedBuffer) { check_greedy(spec("qwen3", "int4"), true); }
// 12 + 64 tokens cross original_length 32: phi3 switches to its long rotary caches.
// (In int4, new token 55 is a near-tie in ONNX Runtime's own logits, top two
// 0.006 apart, and both cache paths take the other token: fp32 here.)
TEST(Generation, Phi3Fp32SharedBuffer) { check_greedy(spec("phi3", "fp32"), true); }
TEST(Generation, Gemma2Fp32SharedBuffer) { check_greedy(spec("gemma2", "fp32"), true); }
TEST(Generation, MistralInt4SharedBuffer) { check_greedy(spec("mistral", "int4"), true); }
TEST(Generation, OptimumFp32TwoBuffers) { check_greedy(spec("optimum", "fp32"), false); }
TEST(Generation, Qwen2Fp32MultiHeadAttentionTwoBuffers) { check_greedy(spec("qwen2", "fp32", "mha"), false); }

// Rows of different lengths decode together; each row must give what it gives alone.
void check_batch(const DecoderFixtureSpec& s) {
  const std::string dir = make_test_fixture(s);
  genai::GeneratorOptions options;
  options.max_length = 128;
  options.max_batch = 3;
  auto g = load_generator(dir, options);
  ASSERT_TRUE(g);
  const int vocab = g->config().vocab_size;
  const std::vector<std::vector<int64_t>> prompts = {prompt_tokens(5, vocab, 4), prompt_tokens(12, vocab, 0),
                                                     prompt_tokens(9, vocab, 5)};
  genai::GenerationParams p = greedy(40);
  auto results = g->generate_batch(prompts, p);
  ASSERT_TRUE(results.is_ok()) << results.status().to_string();
  for (size_t r = 0; r < prompts.size(); ++r) {
    expect_ort_greedy(s, dir, prompts[r], 40, (*results)[r].tokens, g->config(),
                      fixtures::fixture_name(s) + " row " + std::to_string(r));
  }
  // The single-sequence path still works after a batch.
  auto single = g->generate(prompts[1], greedy(40));
  ASSERT_TRUE(single.is_ok()) << single.status().to_string();
  EXPECT_EQ(single->tokens, (*results)[1].tokens);
}

// The model builder's Mistral export names its window in genai_config.json
// only (its GroupQueryAttention nodes have none): Ember applies it, and gives
// ORT's tokens for the same decoder with the window in the graph.
TEST(Generation, SlidingWindowFromGenaiConfig) {
  DecoderFixtureSpec windowless = spec("mistral", "fp32");
  windowless.window = -1;
  const std::string dir = make_test_fixture(windowless);
  const fs::path config_path = fs::path(dir) / "genai_config.json";
  nlohmann::json config = nlohmann::json::parse(std::ifstream(config_path));
  config["model"]["decoder"]["sliding_window"] = {{"window_size", 8}, {"slide_key_value_cache", false},
                                                  {"slide_inputs", false}, {"layers", nlohmann::json::array()}};
  std::ofstream(config_path) << config.dump(2);
  auto g = load_generator(dir);
  ASSERT_TRUE(g);
  const auto prompt = prompt_tokens(12, g->config().vocab_size, 0);
  auto result = g->generate(prompt, greedy());
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  const DecoderFixtureSpec windowed = spec("mistral", "fp32");  // local_window_size 8 in the graph
  expect_ort_greedy(windowed, make_test_fixture(windowed), prompt, kNewTokens, result->tokens, g->config(),
                    "window from genai_config.json");
}

TEST(Generation, Qwen2Int4Batch3) { check_batch(spec("qwen2", "int4")); }
// Sliding-window layers (window 8) with rows at different lengths.
TEST(Generation, Gemma2Fp32Batch3) { check_batch(spec("gemma2", "fp32")); }

TEST(Generation, BatchNeedsSharedBufferAndCapacity) {
  auto two_buffers = load_generator(make_test_fixture(spec("optimum", "fp32")));
  ASSERT_TRUE(two_buffers);
  const std::vector<std::vector<int64_t>> prompts = {{1, 2, 3}};
  auto refused = two_buffers->generate_batch(prompts, greedy());
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("shared-buffer"), std::string::npos);
  auto g = load_generator(make_test_fixture(spec("qwen2", "int4")));
  ASSERT_TRUE(g);
  const std::vector<std::vector<int64_t>> two = {{1, 2}, {3}};
  auto too_many = g->generate_batch(two, greedy());
  ASSERT_FALSE(too_many.is_ok());
  EXPECT_NE(too_many.status().message().find("max_batch"), std::string::npos);
}

// Beam search reorders KV rows between beams (a parent's row passes to its
// first child, other children copy it): every returned hypothesis' score must
// be what one fresh run over the prompt and its tokens gives, in float64.
void check_beam_scores(const DecoderFixtureSpec& s) {
  genai::GeneratorOptions options;
  options.max_length = 128;
  options.max_batch = 4;
  auto g = load_generator(make_test_fixture(s), options);
  auto fresh = load_generator(make_test_fixture(s));
  ASSERT_TRUE(g && fresh);
  const std::vector<int64_t> prompt = prompt_tokens(12, g->config().vocab_size, 3);
  genai::BeamParams beam;
  beam.num_beams = 4;
  beam.num_return_sequences = 4;
  auto results = g->beam_search(prompt, greedy(24), beam);
  ASSERT_TRUE(results.is_ok()) << results.status().to_string();
  ASSERT_EQ(results->size(), 4u);
  for (const genai::GenerationResult& r : *results) {
    std::vector<int64_t> run = prompt;
    run.insert(run.end(), r.tokens.begin(), r.tokens.end() - 1);
    fresh->reset();
    ASSERT_TRUE(fresh->append(run, static_cast<int64_t>(r.tokens.size())).is_ok());
    double sum = 0;
    for (size_t k = 0; k < r.tokens.size(); ++k) {
      std::span<float> row = fresh->logits(static_cast<int64_t>(k));
      double total = 0;
      const float max = *std::max_element(row.begin(), row.end());
      for (float x : row) total += std::exp(static_cast<double>(x) - max);
      sum += row[static_cast<size_t>(r.tokens[k])] - max - std::log(total);
    }
    const auto length = static_cast<double>(prompt.size() + r.tokens.size() - (r.stop == genai::StopReason::kEos));
    EXPECT_NEAR(r.score, sum / length, 1e-3 * std::abs(sum / length)) << "tokens " << ::testing::PrintToString(r.tokens);
  }
}

TEST(Generation, BeamSearchRowsQwen2Int4) { check_beam_scores(spec("qwen2", "int4")); }
TEST(Generation, BeamSearchRowsGemma2Fp32) { check_beam_scores(spec("gemma2", "fp32")); }

TEST(Generation, BeamSearchNeedsSharedBufferAndRows) {
  const std::vector<int64_t> prompt = {1, 2, 3};
  genai::BeamParams beam;
  beam.num_beams = 2;
  auto two_buffers = load_generator(make_test_fixture(spec("optimum", "fp32")));
  ASSERT_TRUE(two_buffers);
  auto refused = two_buffers->beam_search(prompt, greedy(), beam);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("shared-buffer"), std::string::npos);
  auto g = load_generator(make_test_fixture(spec("qwen2", "int4")));  // max_batch 1
  ASSERT_TRUE(g);
  auto too_few_rows = g->beam_search(prompt, greedy(), beam);
  ASSERT_FALSE(too_few_rows.is_ok());
  EXPECT_NE(too_few_rows.status().message().find("max_batch"), std::string::npos);
  genai::GenerationParams sampled = greedy();
  sampled.sampling.greedy = false;
  auto sampling = g->beam_search(prompt, sampled, beam);
  ASSERT_FALSE(sampling.is_ok());
  EXPECT_NE(sampling.status().message().find("sampling"), std::string::npos);
}

// Turn 2 = turn 1's prompt and answer, then new tokens: only the new part is prefilled.
void check_follow_up(const DecoderFixtureSpec& s) {
  const std::string dir = make_test_fixture(s);
  auto chat = load_generator(dir);
  auto fresh = load_generator(dir);
  ASSERT_TRUE(chat && fresh);
  std::vector<int64_t> conversation = prompt_tokens(10, chat->config().vocab_size, 1);
  auto first = chat->generate(conversation, greedy(20));
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  conversation.insert(conversation.end(), first->tokens.begin(), first->tokens.end());
  const auto turn = prompt_tokens(7, chat->config().vocab_size, 2);
  conversation.insert(conversation.end(), turn.begin(), turn.end());
  auto second = chat->generate(conversation, greedy(30));
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  EXPECT_EQ(second->stats.reused_tokens, 10 + 20 - 1);  // the last answer token never ran
  auto reference = fresh->generate(conversation, greedy(30));
  ASSERT_TRUE(reference.is_ok()) << reference.status().to_string();
  EXPECT_EQ(reference->stats.reused_tokens, 0);
  EXPECT_EQ(second->tokens, reference->tokens);
  expect_ort_greedy(s, dir, conversation, 30, second->tokens, chat->config(), "turn 2");

  // A conversation that diverges inside the cached part (an edited turn) keeps only the common prefix.
  std::vector<int64_t> edited(conversation.begin(), conversation.begin() + 5);
  edited.push_back((conversation[5] + 1) % 500);
  auto third = chat->generate(edited, greedy(10));
  ASSERT_TRUE(third.is_ok()) << third.status().to_string();
  EXPECT_EQ(third->stats.reused_tokens, 5);
  expect_ort_greedy(s, dir, edited, 10, third->tokens, chat->config(), "edited turn");
}

// A 40-token prompt prefilled 7 tokens per run (the last chunk shorter) must
// continue as ONNX Runtime's one-run prefill does: each chunk is a subsequent
// prompt over the cache the earlier ones wrote, across gemma2's window of 8 too.
void check_chunked_prefill(const DecoderFixtureSpec& s) {
  const std::string dir = make_test_fixture(s);
  genai::GeneratorOptions options;
  options.max_length = 128;
  options.prefill_chunk = 7;
  auto g = load_generator(dir, options);
  ASSERT_TRUE(g);
  const auto prompt = prompt_tokens(40, g->config().vocab_size, 6);
  auto result = g->generate(prompt, greedy(24));
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  expect_ort_greedy(s, dir, prompt, 24, result->tokens, g->config(), fixtures::fixture_name(s) + " chunked");
}

TEST(Generation, ChunkedPrefillSharedBuffer) { check_chunked_prefill(spec("qwen2", "int4")); }
TEST(Generation, ChunkedPrefillSlidingWindow) { check_chunked_prefill(spec("gemma2", "fp32")); }
TEST(Generation, ChunkedPrefillTwoBuffers) { check_chunked_prefill(spec("optimum", "fp32")); }

TEST(Generation, FollowUpTurnSharedBuffer) { check_follow_up(spec("qwen2", "int4")); }
TEST(Generation, FollowUpTurnTwoBuffers) { check_follow_up(spec("optimum", "fp32")); }

TEST(Generation, StopsOnEosAndCallback) {
  const std::string dir = make_test_fixture(spec("qwen2", "int4"));
  auto g = load_generator(dir);
  ASSERT_TRUE(g);
  const auto prompt = prompt_tokens(12, g->config().vocab_size, 0);
  auto plain = g->generate(prompt, greedy(8));
  ASSERT_TRUE(plain.is_ok());
  // Declare the fourth greedy token an EOS id: generation ends there, EOS included.
  genai::GenaiConfig config = g->config();
  config.eos_token_ids.push_back(plain->tokens[3]);
  genai::GeneratorOptions options;
  options.max_length = 128;
  auto with_eos = genai::Generator::create(config, options);
  ASSERT_TRUE(with_eos.is_ok());
  auto stopped = (*with_eos)->generate(prompt, greedy(8));
  ASSERT_TRUE(stopped.is_ok());
  const auto first_eos =
      std::find(plain->tokens.begin(), plain->tokens.end(), plain->tokens[3]) - plain->tokens.begin();
  EXPECT_EQ(stopped->stop, genai::StopReason::kEos);
  EXPECT_EQ(stopped->tokens, std::vector<int64_t>(plain->tokens.begin(), plain->tokens.begin() + first_eos + 1));

  std::vector<int64_t> streamed;
  genai::GenerationParams p = greedy(8);
  p.on_token = [&](int64_t t) {
    streamed.push_back(t);
    return streamed.size() < 5;
  };
  auto cut = g->generate(prompt, p);
  ASSERT_TRUE(cut.is_ok());
  EXPECT_EQ(cut->stop, genai::StopReason::kCallback);
  EXPECT_EQ(streamed, std::vector<int64_t>(plain->tokens.begin(), plain->tokens.begin() + 5));
  EXPECT_EQ(cut->tokens, streamed);
}

// A logits processor that fails (a grammar matcher past its budget) ends the
// sequence at that token with its error, in generate() and in each row of
// generate_batch().
TEST(Generation, AFailedLogitsProcessorEndsTheSequenceWithItsError) {
  const std::string dir = make_test_fixture(spec("qwen2", "int4"));
  genai::GeneratorOptions options;
  options.max_length = 128;
  options.max_batch = 2;
  auto g = load_generator(dir, options);
  ASSERT_TRUE(g);
  const int vocab = g->config().vocab_size;
  const std::vector<std::vector<int64_t>> prompts = {prompt_tokens(12, vocab, 0), prompt_tokens(7, vocab, 3)};
  auto plain = g->generate_batch(prompts, greedy(8));
  ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
  genai::GenerationParams p = greedy(8);
  p.make_constraint = test::fails_after(3);
  auto failed = g->generate(prompts[0], p);
  ASSERT_TRUE(failed.is_ok()) << failed.status().to_string();
  EXPECT_EQ(failed->stop, genai::StopReason::kError);
  EXPECT_EQ(failed->error, test::FailsAfter::message(3));
  const std::vector<int64_t>& first = (*plain)[0].tokens;
  EXPECT_EQ(failed->tokens, std::vector<int64_t>(first.begin(), first.begin() + 3));
  auto rows = g->generate_batch(prompts, p);
  ASSERT_TRUE(rows.is_ok()) << rows.status().to_string();
  for (size_t r = 0; r < prompts.size(); ++r) {
    const std::vector<int64_t>& tokens = (*plain)[r].tokens;
    EXPECT_EQ((*rows)[r].stop, genai::StopReason::kError) << "row " << r;
    EXPECT_EQ((*rows)[r].error, test::FailsAfter::message(3)) << "row " << r;
    EXPECT_EQ((*rows)[r].tokens, std::vector<int64_t>(tokens.begin(), tokens.begin() + 3)) << "row " << r;
  }
}

TEST(Generation, ContextLimits) {
  const std::string dir = make_test_fixture(spec("qwen2", "int4"));
  auto g = load_generator(dir, 16);
  ASSERT_TRUE(g);
  auto too_long = g->generate(prompt_tokens(16, g->config().vocab_size, 0), greedy());
  ASSERT_FALSE(too_long.is_ok());
  EXPECT_NE(too_long.status().message().find("16 tokens"), std::string::npos) << too_long.status().to_string();
  auto full = g->generate(prompt_tokens(12, g->config().vocab_size, 0), greedy());
  ASSERT_TRUE(full.is_ok()) << full.status().to_string();
  EXPECT_EQ(full->stop, genai::StopReason::kContextFull);
  EXPECT_EQ(full->tokens.size(), 5u);  // 12 prompt tokens + 4 run ones fill 16; the 5th is chosen, never run
  const int64_t bad[] = {g->config().vocab_size};
  auto out_of_vocab = g->generate(bad, greedy());
  ASSERT_FALSE(out_of_vocab.is_ok());
  EXPECT_NE(out_of_vocab.status().message().find("outside the vocabulary"), std::string::npos);
  genai::GeneratorOptions options;
  options.max_length = 1 << 20;
  auto huge = genai::Generator::load(dir, options);
  ASSERT_FALSE(huge.is_ok());
  EXPECT_NE(huge.status().message().find("context_length"), std::string::npos);
  auto missing = genai::Generator::load(dir + "/no-such-folder");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("genai_config.json"), std::string::npos);
}

// Threads split kernels across independent outputs only: the same tokens at 1 and 2 threads,
// and a seeded sampled generation repeats.
TEST(Generation, ThreadsAndSeedReproducible) {
  const std::string dir = make_test_fixture(spec("qwen2", "int4"));
  genai::GenerationParams p = greedy(24);
  p.sampling.greedy = false;
  p.sampling.temperature = 1.5f;  // flat enough that a different seed picks differently
  p.sampling.seed = 9;
  const auto prompt = prompt_tokens(12, 512, 3);
  std::vector<std::vector<int64_t>> runs;
  for (int threads : {1, 2, 2}) {
    genai::GeneratorOptions options;
    options.max_length = 128;
    options.num_threads = threads;
    auto g = load_generator(dir, options);
    ASSERT_TRUE(g);
    auto r = g->generate(prompt, p);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    runs.push_back(r->tokens);
  }
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_EQ(runs[1], runs[2]);
  auto g = load_generator(dir);
  p.sampling.seed = 10;
  auto other = g->generate(prompt, p);
  ASSERT_TRUE(other.is_ok());
  EXPECT_NE(other->tokens, runs[0]);
}

}  // namespace
}  // namespace ember
