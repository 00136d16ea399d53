// Whole decoder models against ONNX Runtime: each fixture family of
// tools/make_decoder_fixtures.py prefills a 12-token prompt and then decodes 32
// tokens greedily; at every step Ember's logits must match ONNX Runtime's within
// the tolerance below and pick the same token (or, at a near-tie of ORT's own
// logits, one the tolerance allows). ONNX Runtime's token is fed back to both,
// and each runtime carries its own present.* into its next past_key_values.*.
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

// Largest |Ember - ORT| over a step's logits, relative to the RMS of ORT's
// logits, within decoder_logits_tolerance() (compare.h says why).

struct StepResult {
  double error = 0;  // relative to the RMS of ORT's logits
  double rms = 0;
  std::vector<int64_t> ort_tokens;
  std::vector<int64_t> ember_tokens;
};

// Argmax of each row's last position of logits [B, S, V].
std::vector<int64_t> last_argmax(const Tensor& logits) {
  int64_t b = logits.dim(0), s = logits.dim(1), v = logits.dim(2);
  std::vector<int64_t> tokens;
  for (int64_t row = 0; row < b; ++row) {
    const float* p = logits.data_as<float>() + (row * s + s - 1) * v;
    tokens.push_back(std::max_element(p, p + v) - p);
  }
  return tokens;
}

StepResult compare_logits(const Tensor& ember, const Tensor& ort) {
  StepResult r;
  double sum_sq = 0, max_diff = 0;
  for (int64_t i = 0; i < ort.numel(); ++i) {
    double e = ember.data_as<float>()[i], o = ort.data_as<float>()[i];
    sum_sq += o * o;
    double diff = std::isnan(e) ? INFINITY : std::abs(e - o);
    max_diff = std::max(max_diff, diff);
  }
  double rms = std::sqrt(sum_sq / static_cast<double>(std::max<int64_t>(ort.numel(), 1)));
  r.rms = rms;
  r.error = max_diff / std::max(rms, 1e-30);
  r.ort_tokens = last_argmax(ort);
  r.ember_tokens = last_argmax(ember);
  return r;
}

std::string tokens_text(const std::vector<int64_t>& tokens) {
  std::string s;
  for (int64_t t : tokens) s += (s.empty() ? "" : ",") + std::to_string(t);
  return s;
}

void check_parity(const DecoderFixtureSpec& spec, int batch) {
  std::string name = fixtures::fixture_name(spec) + (batch > 1 ? "-b" + std::to_string(batch) : "");
  fs::path dir = fs::path(EMBER_BINARY_DIR) / "decoder_fixtures" / name;
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
  DecoderFeeds ember_feeds(*config, prompt), ort_feeds(*config, prompt);
  double tolerance = ortref::decoder_logits_tolerance(spec.weights == "int4");
  double worst = 0;
  int worst_step = 0;
  std::vector<int64_t> fed;
  int near_ties = 0;
  for (int step = 0; step <= kDecodeSteps; ++step) {
    std::vector<runtime::NamedInput> ember_in;
    for (const auto& in : ember_feeds.inputs()) ember_in.push_back({in.name, in.tensor});
    std::vector<ortref::OrtInput> ort_in;
    for (const auto& in : ort_feeds.inputs()) ort_in.push_back({in.name, in.tensor});
    auto ember_out = (*ember)->run(ember_in);
    ASSERT_TRUE(ember_out.is_ok()) << name << " step " << step << ": " << ember_out.status().to_string();
    auto ort_out = (*ort)->run(ort_in);
    ASSERT_TRUE(ort_out.is_ok()) << name << " step " << step << ": " << ort_out.status().to_string();
    ASSERT_EQ(ember_out->size(), ort_out->size()) << name;
    const Tensor& logits = ort_out->front();
    ASSERT_EQ(ember_out->front().shape(), logits.shape()) << name << " step " << step << ": logits shape";
    StepResult r = compare_logits(ember_out->front(), logits);
    std::string at = name + " step " + std::to_string(step) + " (past " + std::to_string(ort_feeds.past_length()) +
                     ", input " + (step == 0 ? "the prompt" : "token " + tokens_text(fed)) + ")";
    EXPECT_LE(r.error, tolerance) << at << ": max logit error " << r.error << " x RMS";
    // The same token, unless ORT's logits for the two tokens are within twice the
    // tolerance of each other (a near-tie that the allowed error may reorder).
    for (size_t b = 0; b < r.ort_tokens.size(); ++b) {
      if (r.ember_tokens[b] == r.ort_tokens[b]) continue;
      const float* row = logits.data_as<float>() + (static_cast<int64_t>(b) * logits.dim(1) + logits.dim(1) - 1) *
                                                        logits.dim(2);
      double gap = row[r.ort_tokens[b]] - row[r.ember_tokens[b]];
      EXPECT_LE(gap, 2 * tolerance * r.rms)
          << at << " row " << b << ": Ember picks token " << r.ember_tokens[b] << ", ONNX Runtime "
          << r.ort_tokens[b] << " (ORT's logits differ by " << gap / r.rms << " x RMS)";
      ++near_ties;
    }
    if (r.error > worst) worst = r.error, worst_step = step;
    if (::testing::Test::HasFailure()) return;
    std::vector<Tensor> ember_presents(std::make_move_iterator(ember_out->begin() + 1),
                                       std::make_move_iterator(ember_out->end()));
    std::vector<Tensor> ort_presents(std::make_move_iterator(ort_out->begin() + 1),
                                     std::make_move_iterator(ort_out->end()));
    fed = r.ort_tokens;
    ember_feeds.advance(r.ort_tokens, std::move(ember_presents));
    ort_feeds.advance(r.ort_tokens, std::move(ort_presents));
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
