#pragma once
// Greedy generation on the decoder fixtures against ONNX Runtime, for the
// generation and serving-engine suites (test translation units only: it needs
// EMBER_BINARY_DIR and EMBER_SOURCE_DIR).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "compare.h"
#include "decoder_fixture.h"
#include "genai/genai_config.h"
#include "genai/generator.h"
#include "genai/sampling.h"
#include "ort_reference.h"

namespace ember::fixtures {

// A fixture folder of its own for the running test: ctest runs every test in
// its own process, in parallel, and two tests of one fixture must not write the same files.
inline std::string make_test_fixture(const DecoderFixtureSpec& s) {
  const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::filesystem::path dir = std::filesystem::path(EMBER_BINARY_DIR) / "generation_fixtures" / (fixture_name(s) + "-" + test);
  Status made = make_decoder_fixture(s, EMBER_SOURCE_DIR "/tools/make_decoder_fixtures.py", dir.string());
  EXPECT_TRUE(made.is_ok()) << made.to_string();
  return dir.string();
}

// A fixture of `family` with `weights` (int4, fp32) and `attention` (gqa, mha), the rest the preset's.
inline DecoderFixtureSpec spec(const char* family, const char* weights, const char* attention = "gqa") {
  DecoderFixtureSpec s;
  s.family = family;
  s.weights = weights;
  s.attention = attention;
  return s;
}

// Generator::load, failing the test (and returning null) when it fails.
inline std::unique_ptr<genai::Generator> load_generator(const std::string& dir, const genai::GeneratorOptions& options) {
  auto g = genai::Generator::load(dir, options);
  EXPECT_TRUE(g.is_ok()) << g.status().to_string();
  return g.is_ok() ? std::move(*g) : nullptr;
}

inline std::unique_ptr<genai::Generator> load_generator(const std::string& dir, int max_length = 128) {
  genai::GeneratorOptions options;
  options.max_length = max_length;
  return load_generator(dir, options);
}

inline std::vector<int64_t> prompt_tokens(int length, int vocab, int salt) {
  std::vector<int64_t> p;
  for (int i = 0; i < length; ++i) p.push_back((7 + 31 * i + 101 * salt) % (vocab - 3));
  return p;
}

// ONNX Runtime's greedy choices and, per step, its second choice and the gap
// between its top two logits, x the RMS of the step's logits.
struct OrtGreedy {
  std::vector<int64_t> tokens, second;
  std::vector<double> gap;
};

// Greedy generation with ONNX Runtime running the graph's own past P -> present P + S contract.
inline OrtGreedy ort_greedy(const std::string& dir, const std::vector<int64_t>& prompt, int steps,
                     const genai::GenaiConfig& config) {
  auto decoder = read_decoder_config(dir);
  EXPECT_TRUE(decoder.is_ok()) << decoder.status().to_string();
  auto ort = ortref::OrtSession::load(dir + "/model.onnx");
  EXPECT_TRUE(ort.is_ok()) << ort.status().to_string();
  OrtGreedy out;
  if (!decoder.is_ok() || !ort.is_ok()) return out;
  DecoderFeeds feeds(*decoder, {prompt});
  while (static_cast<int>(out.tokens.size()) < steps) {
    std::vector<ortref::OrtInput> in;
    for (const auto& i : feeds.inputs()) in.push_back({i.name, i.tensor});
    auto result = (*ort)->run(in);
    EXPECT_TRUE(result.is_ok()) << result.status().to_string();
    if (!result.is_ok()) return out;
    const Tensor& logits = result->front();
    const int64_t s = logits.dim(1), v = logits.dim(2);
    std::vector<float> last(logits.data_as<float>() + (s - 1) * v, logits.data_as<float>() + s * v);
    const int64_t token = genai::argmax(last);
    double sum_sq = 0;
    for (float x : last) sum_sq += double{x} * x;
    const float top = last[static_cast<size_t>(token)];
    last[static_cast<size_t>(token)] = -INFINITY;
    const int64_t second = genai::argmax(last);
    out.tokens.push_back(token);
    out.second.push_back(second);
    out.gap.push_back((top - last[static_cast<size_t>(second)]) / std::sqrt(sum_sq / static_cast<double>(v)));
    if (config.is_eos(token)) break;
    std::vector<Tensor> presents(std::make_move_iterator(result->begin() + 1), std::make_move_iterator(result->end()));
    feeds.advance({token}, std::move(presents));
  }
  return out;
}

// Ember's greedy tokens `got` for `prompt` must be ORT's, up to `steps` new
// tokens. With int8 activations (int4 fixtures) both runtimes quantize, and
// inputs a few ulp apart flip codes (decoder_logits_tolerance says how far
// logits move); where ORT's own top two are closer than twice that, the pick is
// a coin toss whose side depends on the host's kernels. The sequences may part
// there, and only there, if Ember took ORT's second choice.
inline void expect_ort_greedy(const DecoderFixtureSpec& s, const std::string& dir, const std::vector<int64_t>& prompt,
                       int steps, const std::vector<int64_t>& got, const genai::GenaiConfig& config,
                       const std::string& what) {
  const OrtGreedy ort = ort_greedy(dir, prompt, steps, config);
  const auto [mine, theirs] = std::mismatch(got.begin(), got.end(), ort.tokens.begin(), ort.tokens.end());
  if (mine == got.end() && theirs == ort.tokens.end()) return;
  const size_t k = static_cast<size_t>(mine - got.begin());
  const bool int8 = s.weights == "int4";
  const double tie = 2 * ortref::decoder_logits_tolerance(int8, config.decoder.num_hidden_layers);
  if (int8 && mine != got.end() && theirs != ort.tokens.end() && *mine == ort.second[k] && ort.gap[k] < tie) {
    std::cout << what << ": " << k << " tokens identical, then a near-tie in ORT (top two " << ort.gap[k]
              << " x RMS apart, under " << tie << "); Ember took the second\n";
    return;
  }
  ADD_FAILURE() << what << ": first difference with ONNX Runtime at new token " << k << " of " << got.size() << " / "
                << ort.tokens.size() << (k < ort.gap.size() ? " (ORT's top two " + std::to_string(ort.gap[k]) +
                                                                   " x RMS apart)" : std::string());
}

}  // namespace ember::fixtures
