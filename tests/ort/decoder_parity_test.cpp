// Whole decoder models against ONNX Runtime: each fixture family of
// tools/make_decoder_fixtures.py prefills a 12-token prompt and then decodes 32
// tokens greedily; at every step Ember's logits must match ONNX Runtime's within
// the tolerance below and pick the same token (or, at a near-tie of ORT's own
// logits, one the tolerance allows). ONNX Runtime's token is fed back to both,
// and each runtime carries its own present.* into its next past_key_values.*.
// ctest: emulated CPUs, gtest filter DecoderParity.Qwen2Int4
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>

#include "compare.h"
#include "decoder_fixture.h"
#include "ort_reference.h"
#include "runtime/session.h"

namespace fs = std::filesystem;

namespace ember {
namespace {

using fixtures::DecoderFeeds;
using fixtures::DecoderFixtureSpec;

constexpr int kPromptLength = 12;
constexpr int kDecodeSteps = 32;

// Argmax of each row's last position of logits [B, S, V]: the tokens fed back.
std::vector<int64_t> last_argmax(const Tensor& logits) {
  int64_t b = logits.dim(0), s = logits.dim(1), v = logits.dim(2);
  std::vector<int64_t> tokens;
  for (int64_t row = 0; row < b; ++row) {
    const float* p = logits.data_as<float>() + (row * s + s - 1) * v;
    tokens.push_back(std::max_element(p, p + v) - p);
  }
  return tokens;
}

std::string tokens_text(const std::vector<int64_t>& tokens) {
  std::string s;
  for (int64_t t : tokens) s += (s.empty() ? "" : ",") + std::to_string(t);
  return s;
}

// Ember's outputs for one step: run() with its own presents, or, with a shared
// cache, run_bound() with present.* written in place into the past buffers.
Result<std::vector<Tensor>> run_ember(const runtime::Session& session, DecoderFeeds& feeds, bool shared,
                                      const std::vector<int64_t>& logits_shape) {
  std::vector<runtime::NamedInput> named;
  for (const auto& in : feeds.inputs()) named.push_back({in.name, in.tensor});
  if (!shared) return session.run(named);
  std::vector<const Tensor*> positional;
  for (const runtime::IoInfo& info : session.inputs()) {
    auto it = std::find_if(named.begin(), named.end(), [&](const auto& n) { return n.name == info.name; });
    positional.push_back(it == named.end() ? nullptr : it->tensor);
  }
  std::vector<Tensor> outputs;
  outputs.push_back(Tensor::allocate(DType::kF32, Shape(std::span<const int64_t>(logits_shape))));
  std::vector<Tensor*> bound = {&outputs[0]};
  for (Tensor* t : feeds.shared_presents()) bound.push_back(t);
  EMBER_RETURN_IF_ERROR(session.run_bound(positional, bound));
  return outputs;
}

// `shared`: Ember appends to max-length caches in place (past_present_share_buffer,
// how onnxruntime-genai runs GroupQueryAttention models) while ORT runs the
// graph's plain past P -> present P + S contract; the logits must agree as well.
void check_parity(const DecoderFixtureSpec& spec, int batch, bool shared = false) {
  std::string name = fixtures::fixture_name(spec) + (batch > 1 ? "-b" + std::to_string(batch) : "") +
                     (shared ? "-shared" : "");
  fs::path dir = fs::path(EMBER_BINARY_DIR) / "decoder_fixtures" / name;  // one folder per test: ctest runs them in parallel
  Status made = fixtures::make_decoder_fixture(spec, EMBER_SOURCE_DIR "/tools/make_decoder_fixtures.py", dir.string());
  ASSERT_TRUE(made.is_ok()) << made.to_string();
  auto config = fixtures::read_decoder_config(dir.string());
  ASSERT_TRUE(config.is_ok()) << config.status().to_string();
  std::string model = (dir / "model.onnx").string();
  auto ember = runtime::Session::load(model);
  ASSERT_TRUE(ember.is_ok()) << name << ": Ember cannot load the fixture: " << ember.status().to_string();
  auto ort = ortref::OrtSession::load(model);
  ASSERT_TRUE(ort.is_ok()) << name << ": ONNX Runtime cannot load the fixture: " << ort.status().to_string();

  std::vector<std::vector<int64_t>> prompt(static_cast<size_t>(batch));
  for (int b = 0; b < batch; ++b) {
    for (int i = 0; i < kPromptLength; ++i) prompt[b].push_back((7 + 31 * i + 101 * b) % (config->vocab - 3));
  }
  DecoderFeeds ember_feeds(*config, prompt, shared ? spec.max_length : 0), ort_feeds(*config, prompt);
  const double tolerance = ortref::decoder_logits_tolerance(spec.weights == "int4", config->layers);
  double worst = 0;
  int worst_step = 0;
  std::vector<int64_t> fed;
  int near_ties = 0;
  for (int step = 0; step <= kDecodeSteps; ++step) {
    std::vector<ortref::OrtInput> ort_in;
    for (const auto& in : ort_feeds.inputs()) ort_in.push_back({in.name, in.tensor});
    auto ort_out = (*ort)->run(ort_in);
    ASSERT_TRUE(ort_out.is_ok()) << name << " step " << step << ": " << ort_out.status().to_string();
    const Tensor& logits = ort_out->front();
    auto ember_out = run_ember(**ember, ember_feeds, shared, std::vector<int64_t>(logits.shape().begin(), logits.shape().end()));
    ASSERT_TRUE(ember_out.is_ok()) << name << " step " << step << ": " << ember_out.status().to_string();
    ASSERT_EQ(ember_out->front().shape(), logits.shape()) << name << " step " << step << ": logits shape";
    const ortref::LogitsAgreement a = ortref::compare_logits(ember_out->front(), logits);
    const std::string at = name + " step " + std::to_string(step) + " (past " + std::to_string(ort_feeds.past_length()) +
                           ", input " + (step == 0 ? "the prompt" : "token " + tokens_text(fed)) + ")";
    const Status agree = ortref::check_logits(a, tolerance);
    ASSERT_TRUE(agree.is_ok()) << at << ": " << agree.to_string();
    if (a.worst_row >= 0) ++near_ties;
    if (a.error > worst) worst = a.error, worst_step = step;
    fed = last_argmax(logits);
    std::vector<Tensor> ember_presents;
    if (!shared) {
      ember_presents.assign(std::make_move_iterator(ember_out->begin() + 1), std::make_move_iterator(ember_out->end()));
    }
    std::vector<Tensor> ort_presents(std::make_move_iterator(ort_out->begin() + 1),
                                     std::make_move_iterator(ort_out->end()));
    ember_feeds.advance(fed, std::move(ember_presents));
    ort_feeds.advance(fed, std::move(ort_presents));
  }
  std::cout << name << ": " << kDecodeSteps + 1 << " steps, max logit error " << worst << " x RMS (step " << worst_step
            << "), tolerance " << tolerance << ", near-tie tokens " << near_ties << "\n";
}

DecoderFixtureSpec spec(const char* family, const char* weights) {
  DecoderFixtureSpec s;
  s.family = family;
  s.weights = weights;
  return s;
}

TEST(DecoderParity, LlamaInt4) { check_parity(spec("llama", "int4"), 1); }
TEST(DecoderParity, LlamaFp32) { check_parity(spec("llama", "fp32"), 1); }
TEST(DecoderParity, Qwen2Int4) { check_parity(spec("qwen2", "int4"), 1); }
TEST(DecoderParity, Qwen2Fp32) { check_parity(spec("qwen2", "fp32"), 1); }
TEST(DecoderParity, Qwen3Int4) { check_parity(spec("qwen3", "int4"), 1); }
TEST(DecoderParity, Qwen3Fp32) { check_parity(spec("qwen3", "fp32"), 1); }
// 12 + 32 tokens cross original_length 32: the If switches to the long caches.
TEST(DecoderParity, Phi3Int4) { check_parity(spec("phi3", "int4"), 1); }
TEST(DecoderParity, Phi3Fp32) { check_parity(spec("phi3", "fp32"), 1); }
// Window 8 on the even layers, softcap 50 in attention, logit cap 30.
TEST(DecoderParity, Gemma2Int4) { check_parity(spec("gemma2", "int4"), 1); }
TEST(DecoderParity, Gemma2Fp32) { check_parity(spec("gemma2", "fp32"), 1); }
TEST(DecoderParity, MistralInt4) { check_parity(spec("mistral", "int4"), 1); }
TEST(DecoderParity, MistralFp32) { check_parity(spec("mistral", "fp32"), 1); }
TEST(DecoderParity, OptimumFp32) { check_parity(spec("optimum", "fp32"), 1); }
TEST(DecoderParity, Qwen2Int4Batch2) { check_parity(spec("qwen2", "int4"), 2); }
TEST(DecoderParity, OptimumFp32Batch2) { check_parity(spec("optimum", "fp32"), 2); }
// The older export: RotaryEmbedding on Q and K, then MultiHeadAttention.
DecoderFixtureSpec mha(const char* family, const char* weights) {
  DecoderFixtureSpec s = spec(family, weights);
  s.attention = "mha";
  return s;
}
TEST(DecoderParity, LlamaFp32MultiHeadAttention) { check_parity(mha("llama", "fp32"), 1); }
TEST(DecoderParity, Qwen2Int4MultiHeadAttention) { check_parity(mha("qwen2", "int4"), 1); }
// The rotary caches come from phi3's If.
TEST(DecoderParity, Phi3Fp32MultiHeadAttentionBatch2) { check_parity(mha("phi3", "fp32"), 2); }
// Ember writing present KV in place into max-length past buffers.
TEST(DecoderParity, LlamaInt4SharedCache) { check_parity(spec("llama", "int4"), 1, true); }
TEST(DecoderParity, Gemma2Fp32SharedCache) { check_parity(spec("gemma2", "fp32"), 1, true); }
TEST(DecoderParity, Qwen2Fp32Batch2SharedCache) { check_parity(spec("qwen2", "fp32"), 2, true); }

// Real head shapes (Qwen2.5-0.5B: 14/2 heads of 64, hidden 896, intermediate
// 4864; Llama-3.2-1B: 32/8 heads of 64, hidden 2048) with 2 and 1 layers and a
// reduced vocabulary, so the suite stays within a couple of minutes.
TEST(DecoderParity, Qwen25HalfBShapeInt4) {
  DecoderFixtureSpec s = spec("qwen2", "int4");
  s.shape = "qwen2.5-0.5b";
  s.layers = 2;
  s.vocab = 8192;
  check_parity(s, 1);
}
TEST(DecoderParity, Llama32OneBShapeInt4) {
  DecoderFixtureSpec s = spec("llama", "int4");
  s.shape = "llama-3.2-1b";
  s.layers = 1;
  s.vocab = 8192;
  check_parity(s, 1);
}

}  // namespace
}  // namespace ember
