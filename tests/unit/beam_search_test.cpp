// BeamSearch's bookkeeping on hand-made logits, with the numbers worked out
// from onnxruntime-genai's rules (beam_search.h): which EOS closes a
// hypothesis, the length its score is divided by, when the search is done.
#include "genai/beam_search.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace ember::genai {
namespace {

constexpr int64_t kEos = 5;

// One step with every beam given `rows[b]` (copied: step() overwrites its input).
void step(BeamSearch& search, std::vector<std::vector<float>> rows) {
  std::vector<std::span<float>> spans;
  for (auto& r : rows) spans.emplace_back(r);
  search.step(spans);
}

double log_softmax(const std::vector<float>& row, size_t i) {
  double sum = 0;
  for (float x : row) sum += std::exp(x);
  return row[i] - std::log(sum);
}

TEST(BeamSearch, EosBelowTheFirstNumBeamsClosesNothing) {
  BeamParams p;
  p.num_beams = 2;
  p.num_return_sequences = 2;
  p.length_penalty = 0;  // raw sums
  BeamSearch search(p, 1, {kEos});
  const std::vector<float> first = {2, 1.9f, 0, 0, 0, 0};
  step(search, {first, first});
  EXPECT_EQ(std::vector<int32_t>(search.parents().begin(), search.parents().end()), (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(std::vector<int64_t>(search.tokens().begin(), search.tokens().end()), (std::vector<int64_t>{0, 1}));
  // Ranked: beam 1's EOS (closes a hypothesis), beam 0's token 0 (a beam),
  // beam 0's EOS (rank 2 = num_beams: closes nothing), beam 1's token 0.
  const std::vector<float> row0 = {4, 0, 0, 0, 0, 3.95f}, row1 = {0, 0, 0, 0, 0, 4};
  step(search, {row0, row1});
  EXPECT_EQ(std::vector<int32_t>(search.parents().begin(), search.parents().end()), (std::vector<int32_t>{0, 1}));
  EXPECT_FALSE(search.done());  // one hypothesis of two
  const std::vector<BeamHypothesis> best = search.finish();
  ASSERT_EQ(best.size(), 2u);
  EXPECT_EQ(best[0].eos, kEos);
  EXPECT_EQ(best[0].tokens, (std::vector<int64_t>{1}));
  EXPECT_NEAR(best[0].score, log_softmax(first, 1) + log_softmax(row1, 5), 1e-5);
  EXPECT_EQ(best[1].eos, -1);
  EXPECT_EQ(best[1].tokens, (std::vector<int64_t>{0, 0}));
  EXPECT_NEAR(best[1].score, log_softmax(first, 0) + log_softmax(row0, 0), 1e-5);
}

TEST(BeamSearch, HypothesisLengthCountsThePromptNotTheEos) {
  BeamParams p;
  p.num_beams = 2;
  p.length_penalty = 2;
  p.early_stopping = true;
  BeamSearch search(p, 4, {kEos});
  const std::vector<float> first = {2, 1, 0, 0, 0, 0};
  step(search, {first, first});
  const std::vector<float> eos_first = {0, 0, 0, 0, 0, 4};
  step(search, {eos_first, eos_first});  // both beams' EOS lead: two hypotheses after one token each
  EXPECT_TRUE(search.done());  // early stopping: num_beams hypotheses
  const std::vector<BeamHypothesis> best = search.finish();
  ASSERT_EQ(best.size(), 1u);
  EXPECT_EQ(best[0].eos, kEos);
  EXPECT_EQ(best[0].tokens, (std::vector<int64_t>{0}));
  // 4 prompt tokens + 1 generated; the EOS does not count.
  EXPECT_NEAR(best[0].score, (log_softmax(first, 0) + log_softmax(eos_first, 5)) / std::pow(5.0, 2.0), 1e-5);
}

// Two hypotheses after step 1 (both beams' EOS rank first and second); the
// worse one is 1 below the best candidate, so without early stopping an open
// beam could still win, until step 2 leaves every open candidate below it.
bool done_after(bool early_stopping, int steps) {
  BeamParams p;
  p.num_beams = 2;
  p.length_penalty = 0;
  p.early_stopping = early_stopping;
  BeamSearch search(p, 4, {kEos});
  step(search, {{2, 1, 0, 0, 0, 0}, {2, 1, 0, 0, 0, 0}});
  step(search, {{0, 0, 0, 0, 0, 4}, {0, 0, 0, 0, 0, 4}});
  if (steps == 2) return search.done();
  step(search, {{-20, -20, -20, -20, 0, -20}, {-20, -20, -20, -20, 0, -20}});
  return search.done();
}

TEST(BeamSearch, EarlyStoppingStopsAtNumBeamsHypotheses) {
  EXPECT_TRUE(done_after(true, 2));
  EXPECT_FALSE(done_after(false, 2));
  EXPECT_TRUE(done_after(false, 3));
}

TEST(BeamSearch, RefusesBadParams) {
  BeamParams p;
  p.num_beams = 1;
  EXPECT_NE(check_beam_params(p).message().find("num_beams 1"), std::string::npos);
  p.num_beams = 3;
  p.num_return_sequences = 4;
  EXPECT_NE(check_beam_params(p).message().find("num_return_sequences 4"), std::string::npos);
  p.num_return_sequences = 3;
  p.length_penalty = NAN;
  EXPECT_FALSE(check_beam_params(p).is_ok());
}

}  // namespace
}  // namespace ember::genai
