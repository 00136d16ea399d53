// Sampling against hand-computed distributions: logits are ln(weights), so the
// expected probabilities are the weights renormalized over what each filter keeps.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "genai/sampling.h"

namespace ember::genai {
namespace {

std::vector<float> log_weights(std::vector<double> w) {
  std::vector<float> l;
  for (double x : w) l.push_back(static_cast<float>(std::log(x)));
  return l;
}

SamplingParams sampled(uint64_t seed = 1) {
  SamplingParams p;
  p.greedy = false;
  p.seed = seed;
  return p;
}

// The candidates of one draw as token -> probability.
std::map<int64_t, double> candidates(SamplingParams p, std::vector<float> logits) {
  Sampler s(p);
  s.sample(logits, {});
  std::map<int64_t, double> out;
  for (const Candidate& c : s.last_candidates()) out[c.token] = c.value;
  return out;
}

void expect_distribution(const std::map<int64_t, double>& got, const std::map<int64_t, double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [token, p] : want) {
    ASSERT_TRUE(got.count(token)) << "token " << token;
    EXPECT_NEAR(got.at(token), p, 1e-6) << "token " << token;
  }
}

TEST(Sampling, GreedyIsFirstArgmax) {
  std::vector<float> l = {0.5f, 3.0f, -1.0f, 3.0f};
  Sampler s(SamplingParams{});
  EXPECT_EQ(s.sample(l, {}), 1);
  EXPECT_EQ(argmax(l), 1);
}

TEST(Sampling, TemperatureZeroAndTopKOneAreGreedy) {
  const auto l = log_weights({0.1, 0.2, 0.3, 0.4});
  for (int seed = 0; seed < 20; ++seed) {
    SamplingParams p = sampled(static_cast<uint64_t>(seed));
    p.temperature = 0.0f;
    auto copy = l;
    EXPECT_EQ(Sampler(p).sample(copy, {}), 3);
    p.temperature = 1.0f;
    p.top_k = 1;
    EXPECT_EQ(Sampler(p).sample(copy, {}), 3);
  }
}

TEST(Sampling, TopK) {
  SamplingParams p = sampled();
  p.top_k = 2;
  expect_distribution(candidates(p, log_weights({0.1, 0.2, 0.3, 0.4})), {{3, 0.4 / 0.7}, {2, 0.3 / 0.7}});
}

TEST(Sampling, TopP) {
  SamplingParams p = sampled();
  p.top_p = 0.7f;  // 0.5 + 0.3 reaches it
  expect_distribution(candidates(p, log_weights({0.05, 0.15, 0.5, 0.3})), {{2, 0.5 / 0.8}, {3, 0.3 / 0.8}});
  p.top_p = 0.45f;
  expect_distribution(candidates(p, log_weights({0.05, 0.15, 0.5, 0.3})), {{2, 1.0}});
}

// Past the first guess of 64 candidates: a flat distribution over 1000 tokens needs 501 for 0.5005.
TEST(Sampling, TopPGrowsPastFirstGuess) {
  SamplingParams p = sampled();
  p.top_p = 0.5005f;
  auto got = candidates(p, std::vector<float>(1000, 0.0f));
  ASSERT_EQ(got.size(), 501u);
  EXPECT_EQ(got.rbegin()->first, 500);  // ties keep the lowest ids
  EXPECT_NEAR(got.begin()->second, 1.0 / 501, 1e-7);
}

// As Hugging Face's warpers: top-p measures mass within the top k.
TEST(Sampling, TopKThenTopP) {
  SamplingParams p = sampled();
  p.top_k = 3;  // 0.2 0.3 0.4 -> 0.222 0.333 0.444: two reach 0.75 (over the whole vocabulary they would not)
  p.top_p = 0.75f;
  expect_distribution(candidates(p, log_weights({0.1, 0.2, 0.3, 0.4})), {{3, 0.4 / 0.7}, {2, 0.3 / 0.7}});
}

TEST(Sampling, MinP) {
  SamplingParams p = sampled();
  p.min_p = 0.6f;  // keeps p >= 0.24
  expect_distribution(candidates(p, log_weights({0.1, 0.2, 0.3, 0.4})), {{3, 0.4 / 0.7}, {2, 0.3 / 0.7}});
}

TEST(Sampling, Temperature) {
  SamplingParams p = sampled();
  p.temperature = 2.0f;  // p ~ sqrt(w)
  p.min_p = 1e-6f;       // a restriction that keeps every token, so the candidates are visible
  const double z = std::sqrt(0.1) + std::sqrt(0.2) + std::sqrt(0.3) + std::sqrt(0.4);
  std::map<int64_t, double> want;
  for (int t = 0; t < 4; ++t) want[t] = std::sqrt(0.1 * (t + 1)) / z;
  expect_distribution(candidates(p, log_weights({0.1, 0.2, 0.3, 0.4})), want);
}

// Draw frequencies on the unrestricted path (one cumulative scan) and the candidate path.
TEST(Sampling, FrequenciesFollowTheDistribution) {
  const auto l = log_weights({0.1, 0.2, 0.3, 0.4});
  constexpr int kDraws = 40000;
  for (int top_k : {0, 2}) {
    SamplingParams p = sampled(7);
    p.top_k = top_k;
    Sampler s(p);
    std::vector<int> counts(4);
    for (int i = 0; i < kDraws; ++i) {
      auto copy = l;
      ++counts[static_cast<size_t>(s.sample(copy, {}))];
    }
    const std::vector<double> want = top_k == 0 ? std::vector<double>{0.1, 0.2, 0.3, 0.4}
                                                : std::vector<double>{0, 0, 0.3 / 0.7, 0.4 / 0.7};
    for (size_t t = 0; t < 4; ++t) {
      // 4 standard deviations of a binomial frequency at n = 40000 is at most 0.01.
      EXPECT_NEAR(counts[t] / static_cast<double>(kDraws), want[t], 0.01) << "top_k " << top_k << " token " << t;
    }
  }
}

TEST(Sampling, SeedReproducibility) {
  const auto l = log_weights({0.1, 0.2, 0.3, 0.4, 0.25, 0.05});
  auto draws = [&](uint64_t seed, float top_p) {
    SamplingParams p = sampled(seed);
    p.top_p = top_p;
    Sampler s(p);
    std::vector<int64_t> out;
    for (int i = 0; i < 64; ++i) {
      auto copy = l;
      out.push_back(s.sample(copy, {}));
    }
    return out;
  };
  for (float top_p : {1.0f, 0.9f}) {
    EXPECT_EQ(draws(42, top_p), draws(42, top_p));
    EXPECT_NE(draws(42, top_p), draws(43, top_p));
  }
}

TEST(Sampling, Penalties) {
  std::vector<float> l = {2.0f, -2.0f, 1.0f, 0.5f};
  SamplingParams p;
  p.repetition_penalty = 2.0f;  // 2 -> 1, -2 -> -4
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  const int64_t history[] = {1, 0, 1, 99};  // 99: outside the vocabulary, ignored
  Sampler s(p);
  EXPECT_EQ(s.sample(l, history), 2);
  EXPECT_FLOAT_EQ(l[0], 1.0f - 0.5f - 0.25f);
  EXPECT_FLOAT_EQ(l[1], -4.0f - 0.5f - 0.5f);
  EXPECT_FLOAT_EQ(l[2], 1.0f);
  EXPECT_FLOAT_EQ(l[3], 0.5f);
}

TEST(Sampling, NeverDrawsMaskedTokens) {
  std::vector<float> l = {-INFINITY, 0.0f, -INFINITY, 0.0f};
  Sampler s(sampled(3));
  for (int i = 0; i < 200; ++i) {
    auto copy = l;
    const int64_t t = s.sample(copy, {});
    EXPECT_TRUE(t == 1 || t == 3) << t;
  }
}

}  // namespace
}  // namespace ember::genai
