// Sampling against hand-computed distributions: logits are ln(weights), so the
// expected probabilities are the weights renormalized over what each filter keeps.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <random>
#include <string>
#include <string_view>

#include "genai/sampling.h"

// Every allocation in this test binary, for the no-allocation-per-step check.
// The whole family is replaced, so no pointer crosses to a sanitizer's own
// operator new; out of line, so GCC does not see free() meet operator new's
// pointer (-Wmismatched-new-delete).
namespace {
std::atomic<int64_t> g_allocations{0};
void* counted_malloc(std::size_t n) {
  ++g_allocations;
  return std::malloc(n == 0 ? 1 : n);
}
}  // namespace
[[gnu::noinline]] void* operator new(std::size_t n) {
  if (void* p = counted_malloc(n)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void* operator new[](std::size_t n) { return operator new(n); }
[[gnu::noinline]] void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_malloc(n); }
[[gnu::noinline]] void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_malloc(n); }
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace ember::genai {
namespace {

int64_t allocations() { return g_allocations.load(); }

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


// ---- Today's behaviour, restated plainly: the oracle for every change to the sampler ----
// Every token sorted once, no heaps, no lazy state, but the same floating-point
// operations in the same order, so tokens, probabilities and the RNG's consumption
// must match bit for bit.
class ReferenceSampler {
 public:
  explicit ReferenceSampler(const SamplingParams& p) : p_(p), rng_(p.seed) {}

  int64_t sample(std::vector<float>& logits, const std::vector<int64_t>& history) {
    candidates.clear();
    const auto vocab = static_cast<int64_t>(logits.size());
    if (p_.repetition_penalty != 1.0f || p_.presence_penalty != 0.0f || p_.frequency_penalty != 0.0f) {
      std::map<int64_t, int> count;
      for (int64_t t : history) ++count[t];
      for (const auto& [t, n] : count) {
        if (t < 0 || t >= vocab) continue;
        float& l = logits[static_cast<size_t>(t)];
        if (p_.repetition_penalty != 1.0f) l = l > 0 ? l / p_.repetition_penalty : l * p_.repetition_penalty;
        l -= p_.presence_penalty + p_.frequency_penalty * static_cast<float>(n);
      }
    }
    const auto first_max = std::max_element(logits.begin(), logits.end()) - logits.begin();
    if (p_.greedy || p_.temperature <= 0.0f || p_.top_k == 1) return first_max;
    const float max = logits[static_cast<size_t>(first_max)];
    const double inv_t = 1.0 / p_.temperature;
    auto weight = [&](float l) { return std::exp((static_cast<double>(l) - max) * inv_t); };
    const bool top_k = p_.top_k > 0 && p_.top_k < vocab;
    if (!top_k && p_.top_p >= 1.0f && p_.min_p <= 0.0f) {  // the whole distribution
      double z = 0;
      for (float l : logits) z += weight(l);
      const double target = uniform() * z;
      double cumulative = 0;
      for (int64_t i = 0; i < vocab; ++i) {
        cumulative += weight(logits[static_cast<size_t>(i)]);
        if (cumulative > target) return i;
      }
      return first_max;
    }
    std::vector<Candidate> sorted;
    for (int64_t i = 0; i < vocab; ++i) {
      if (!std::isnan(logits[static_cast<size_t>(i)])) sorted.push_back({i, logits[static_cast<size_t>(i)]});
    }
    std::stable_sort(sorted.begin(), sorted.end(), [](const Candidate& a, const Candidate& b) { return a.value > b.value; });
    // Top-k renormalizes over its k (Hugging Face's order); top-p measures against that mass.
    double z = 0;
    if (top_k) {
      sorted.resize(static_cast<size_t>(p_.top_k));
      for (const Candidate& c : sorted) z += weight(c.value);
    } else {
      for (float l : logits) z += weight(l);
    }
    size_t keep = sorted.size();
    if (p_.top_p < 1.0f) {
      double mass = 0;
      for (size_t i = 0; i < sorted.size(); ++i) {
        mass += weight(sorted[i].value) / z;
        if (mass >= p_.top_p) {
          keep = i + 1;
          break;
        }
      }
    } else if (!top_k) {
      keep = std::min<size_t>(keep, 64);  // min-p alone: at most the 64 most probable tokens
    }
    const float floor = p_.min_p > 0 ? static_cast<float>(max + p_.temperature * std::log(p_.min_p)) : -INFINITY;
    size_t above = 0;
    while (above < keep && sorted[above].value >= floor) ++above;
    sorted.resize(std::max<size_t>(above, 1));
    double kept = 0;
    for (const Candidate& c : sorted) kept += weight(c.value);
    for (Candidate& c : sorted) c.value = static_cast<float>(weight(c.value) / kept);
    candidates = sorted;
    const double target = uniform();
    double cumulative = 0;
    for (const Candidate& c : sorted) {
      cumulative += c.value;
      if (cumulative > target) return c.token;
    }
    return sorted.back().token;
  }

  std::vector<Candidate> candidates;  // what last_candidates() must hold

 private:
  double uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }
  SamplingParams p_;
  std::mt19937_64 rng_;
};

template <typename T>
T pick(std::mt19937_64& rng, std::initializer_list<T> choices) {
  return choices.begin()[rng() % choices.size()];
}

// Random parameters over every filter and their edges (top-k around 1 and the
// vocabulary, top-p 0 and 1, min-p 1, temperature 0), vocabularies around the
// nucleus gather's 64 x 4^n steps, flat and peaked logits, ties, masked tokens.
struct RandomCase {
  SamplingParams params;
  std::vector<std::vector<float>> steps;  // the logits of each step
  std::vector<int64_t> prompt;
};

RandomCase random_case(std::mt19937_64& rng) {
  RandomCase c;
  const auto vocab = pick<int64_t>(rng, {1, 2, 3, 7, 63, 64, 65, 255, 257, 1000, 1100, 4100});
  SamplingParams& p = c.params;
  p.greedy = rng() % 8 == 0;
  p.temperature = pick(rng, {0.0f, 0.25f, 0.7f, 1.0f, 1.0f, 1.5f, 4.0f});
  p.top_k = static_cast<int>(pick<int64_t>(rng, {0, 0, 0, -1, 1, 2, 3, 10, 50, 100, vocab - 1, vocab, vocab + 5}));
  p.top_p = pick(rng, {1.0f, 1.0f, 0.99f, 0.95f, 0.9f, 0.5f, 0.1f, 0.0f, 1e-7f});
  p.min_p = pick(rng, {0.0f, 0.0f, 1e-6f, 0.02f, 0.1f, 0.5f, 1.0f});
  p.repetition_penalty = pick(rng, {1.0f, 1.0f, 1.3f, 0.8f});
  p.presence_penalty = pick(rng, {0.0f, 0.0f, 0.5f, -0.3f});
  p.frequency_penalty = pick(rng, {0.0f, 0.0f, 0.2f});
  p.seed = rng();
  const float scale = pick(rng, {0.01f, 0.3f, 1.0f, 3.0f, 12.0f});
  const bool ties = rng() % 4 == 0;
  const bool masked = rng() % 4 == 0;
  std::normal_distribution<float> normal(0.0f, scale);
  for (int s = 0; s < 4; ++s) {
    std::vector<float> l(static_cast<size_t>(vocab));
    for (float& x : l) x = ties ? std::round(normal(rng) * 2) / 2 : normal(rng);
    if (masked) {
      for (size_t i = 1; i < l.size(); ++i) {
        if (rng() % 3 == 0) l[i] = -INFINITY;  // token 0 stays, so the distribution is never empty
      }
    }
    c.steps.push_back(std::move(l));
  }
  const size_t prompt = rng() % 12;
  for (size_t i = 0; i < prompt; ++i) c.prompt.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(vocab + 2)) - 1);
  return c;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Each case runs four steps on one sampler, so the RNG's consumption is compared too.
TEST(Sampling, MatchesThePlainRestatementBitForBit) {
  std::mt19937_64 rng(2024);
  for (int n = 0; n < 3000; ++n) {
    const RandomCase c = random_case(rng);
    Sampler sampler(c.params);
    ReferenceSampler reference(c.params);
    std::vector<int64_t> history = c.prompt;
    for (size_t s = 0; s < c.steps.size(); ++s) {
      std::vector<float> got = c.steps[s], want = c.steps[s];
      const int64_t token = sampler.sample(got, history);
      ASSERT_EQ(token, reference.sample(want, history)) << "case " << n << " step " << s;
      for (size_t i = 0; i < got.size(); ++i) ASSERT_TRUE(same_bits(got[i], want[i])) << "case " << n << " logit " << i;
      const auto candidates = sampler.last_candidates();
      ASSERT_EQ(candidates.size(), reference.candidates.size()) << "case " << n << " step " << s;
      for (size_t i = 0; i < candidates.size(); ++i) {
        ASSERT_EQ(candidates[i].token, reference.candidates[i].token) << "case " << n << " candidate " << i;
        ASSERT_TRUE(same_bits(candidates[i].value, reference.candidates[i].value)) << "case " << n << " candidate " << i;
      }
      history.push_back(token);
    }
  }
}


// ---- Each processor on its own ----

// One step over `logits` and `history`, with its own candidate buffer.
struct Step {
  explicit Step(std::vector<float> l, std::vector<int64_t> h = {}) : logits(std::move(l)), history(std::move(h)) {}
  std::vector<float> logits;
  std::vector<int64_t> history;
  std::vector<TokenData> buffer;
  SamplingStep step{logits, history, buffer};
};

std::vector<int64_t> listed_tokens(SamplingStep& step) {
  std::vector<int64_t> out;
  for (const TokenData& c : step.list()) out.push_back(c.token);
  return out;
}

TEST(LogitsProcessors, Penalties) {
  Step s({2.0f, -2.0f, 1.0f, 0.5f}, {1, 0, 1, 99, -1});  // 99 and -1: outside the vocabulary, ignored
  Penalties(2.0f, 0.5f, 0.25f).apply(s.step);
  EXPECT_EQ(s.logits, (std::vector<float>{1.0f - 0.5f - 0.25f, -4.0f - 0.5f - 0.5f, 1.0f, 0.5f}));
  Step neutral({2.0f, -2.0f}, {0, 1});
  Penalties(1.0f, 0.0f, 0.0f).apply(neutral.step);
  EXPECT_EQ(neutral.logits, (std::vector<float>{2.0f, -2.0f}));
}

TEST(LogitsProcessors, BanTokensWhileFewerAccepted) {
  BanTokens ban({1, 3, 7, -2}, 2);  // 7 and -2: outside the vocabulary, ignored
  const std::vector<float> l = {0.0f, 5.0f, 1.0f, 2.0f};
  for (int accepted = 0; accepted < 4; ++accepted) {
    Step s(l);
    ban.apply(s.step);
    if (accepted < 2) {
      EXPECT_EQ(s.logits, (std::vector<float>{0.0f, -INFINITY, 1.0f, -INFINITY})) << accepted;
    } else {
      EXPECT_EQ(s.logits, l) << accepted;
    }
    ban.accept(0);
  }
  ban.reset();
  Step s(l);
  ban.apply(s.step);
  EXPECT_EQ(s.logits[1], -INFINITY);
}

TEST(LogitsProcessors, TemperatureScalesWeightsNotLogits) {
  const auto l = log_weights({0.1, 0.2, 0.3, 0.4});
  Step s(l);
  Temperature(2.0f).apply(s.step);
  EXPECT_EQ(s.logits, l);
  EXPECT_FALSE(s.step.restricted());
  EXPECT_NEAR(s.step.weight(l[0]), std::sqrt(0.1 / 0.4), 1e-7);
  EXPECT_NEAR(s.step.mass(), (std::sqrt(0.1) + std::sqrt(0.2) + std::sqrt(0.3) + std::sqrt(0.4)) / std::sqrt(0.4), 1e-6);
  Step zero(l);
  Temperature(0.0f).apply(zero.step);  // only the most probable token is left
  EXPECT_EQ(listed_tokens(zero.step), (std::vector<int64_t>{3}));
}

TEST(LogitsProcessors, TopKListsAndRenormalizes) {
  const auto l = log_weights({0.1, 0.2, 0.3, 0.4});
  Step s(l);
  TopK(2).apply(s.step);
  ASSERT_TRUE(s.step.listed());
  EXPECT_EQ(listed_tokens(s.step), (std::vector<int64_t>{3, 2}));
  EXPECT_NEAR(s.step.mass(), (0.4 + 0.3) / 0.4, 1e-6);  // weights are relative to the top token
  TopK(1).apply(s.step);  // on a list: its first k
  EXPECT_EQ(listed_tokens(s.step), (std::vector<int64_t>{3}));
  for (int k : {0, -1, 4, 5}) {  // no limit, or no fewer than the vocabulary: the whole distribution
    Step all(l);
    TopK(k).apply(all.step);
    EXPECT_FALSE(all.step.restricted()) << k;
    EXPECT_NEAR(all.step.mass(), 1.0 / 0.4, 1e-6) << k;
  }
}

TEST(LogitsProcessors, TopPKeepsTheSmallestPrefixReachingP) {
  const auto l = log_weights({0.05, 0.15, 0.5, 0.3});
  const std::vector<std::pair<float, std::vector<int64_t>>> cases = {
      {0.49f, {2}}, {0.51f, {2, 3}}, {0.79f, {2, 3}}, {0.81f, {2, 3, 1}}, {0.999f, {2, 3, 1, 0}}, {0.0f, {2}}};
  for (const auto& [p, want] : cases) {
    Step s(l);
    TopP(p).apply(s.step);
    EXPECT_EQ(listed_tokens(s.step), want) << "p " << p;
  }
  Step off(l);
  TopP(1.0f).apply(off.step);
  EXPECT_FALSE(off.step.restricted());
  // After top-k, mass within the k: 0.5 / 0.8 >= 0.6.
  Step after_k(l);
  TopK(2).apply(after_k.step);
  TopP(0.6f).apply(after_k.step);
  EXPECT_EQ(listed_tokens(after_k.step), (std::vector<int64_t>{2}));
  // Flat over 1000 tokens: past the first gather of 64 and its growth to 256, 301 tokens reach 0.3005.
  Step flat(std::vector<float>(1000, 0.0f));
  TopP(0.3005f).apply(flat.step);
  EXPECT_EQ(flat.step.list().size(), 301u);
}

TEST(LogitsProcessors, MinPIsAFloorOnTheVocabularyAndACutOnAList) {
  const auto l = log_weights({0.1, 0.2, 0.3, 0.4});
  Step s(l);
  MinP(0.6f).apply(s.step);  // keeps p >= 0.24
  EXPECT_FALSE(s.step.listed());
  EXPECT_TRUE(s.step.restricted());
  EXPECT_NEAR(s.step.floor(), std::log(0.4 * 0.6), 1e-6);
  s.step.list_top(4);
  EXPECT_EQ(listed_tokens(s.step), (std::vector<int64_t>{3, 2}));

  Step list(l);
  TopK(3).apply(list.step);
  const double top_k_mass = list.step.mass();
  MinP(0.6f).apply(list.step);
  EXPECT_EQ(listed_tokens(list.step), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(list.step.mass(), top_k_mass);  // no renormalization

  Step above_one(l);
  MinP(2.0f).apply(above_one.step);  // acts as 1: the top token alone
  above_one.step.list_top(4);
  EXPECT_EQ(listed_tokens(above_one.step), (std::vector<int64_t>{3}));
  Step off(l);
  MinP(0.0f).apply(off.step);
  EXPECT_FALSE(off.step.restricted());
}

// Neither top-p nor min-p renormalizes, so they keep the same tokens in either order.
TEST(LogitsProcessors, TopPAndMinPCommute) {
  std::mt19937_64 rng(5);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (int n = 0; n < 200; ++n) {
    std::vector<float> l(1 + rng() % 300);
    for (float& x : l) x = normal(rng);
    const float top_p = std::uniform_real_distribution<float>(0.05f, 1.0f)(rng);
    const float min_p = std::uniform_real_distribution<float>(0.0f, 0.5f)(rng);
    Step a(l), b(l);
    MinP(min_p).apply(a.step);
    TopP(top_p).apply(a.step);
    TopP(top_p).apply(b.step);
    MinP(min_p).apply(b.step);
    if (!a.step.listed()) a.step.list_top(l.size());
    if (!b.step.listed()) b.step.list_top(l.size());
    EXPECT_EQ(listed_tokens(a.step), listed_tokens(b.step)) << n;
  }
}

TEST(LogitsProcessors, GreedySelectsTheArgmaxWithoutAList) {
  Step s({0.5f, 3.0f, -1.0f, 3.0f});
  GreedySelector().apply(s.step);
  EXPECT_EQ(s.step.selected(), 1);
  EXPECT_FALSE(s.step.listed());
  Step listed({0.5f, 3.0f, -1.0f, 2.0f});
  listed.step.list_top(4);
  listed.step.list().erase(listed.step.list().begin());  // a processor dropped token 1
  GreedySelector().apply(listed.step);
  EXPECT_EQ(listed.step.selected(), 3);
}

TEST(LogitsProcessors, DrawNormalizesTheListAndReseedsOnReset) {
  const auto l = log_weights({0.1, 0.2, 0.3, 0.4});
  DrawSelector draw(9);
  std::vector<int64_t> first, again;
  for (std::vector<int64_t>* out : {&first, &again}) {
    for (int i = 0; i < 32; ++i) {
      Step s(l);
      TopK(2).apply(s.step);
      draw.apply(s.step);
      out->push_back(s.step.selected());
      ASSERT_EQ(s.step.list().size(), 2u);
      EXPECT_NEAR(s.step.list()[0].p, 0.4 / 0.7, 1e-6);
      EXPECT_NEAR(s.step.list()[1].p, 0.3 / 0.7, 1e-6);
    }
    draw.reset();
  }
  EXPECT_EQ(first, again);
  EXPECT_TRUE(std::count(first.begin(), first.end(), 2) > 0 && std::count(first.begin(), first.end(), 3) > 0);
  Step whole(l);
  draw.apply(whole.step);  // the whole distribution: a scan, no list
  EXPECT_FALSE(whole.step.listed());
  EXPECT_GE(whole.step.selected(), 0);
}

// ---- The chain ----

TEST(SamplerChain, OrderFromParams) {
  using Names = std::vector<std::string_view>;
  SamplingParams p;
  EXPECT_EQ(make_sampler_chain(p).names(), Names{"greedy"});
  p.repetition_penalty = 1.2f;
  EXPECT_EQ(make_sampler_chain(p).names(), (Names{"penalties", "greedy"}));
  p.greedy = false;
  EXPECT_EQ(make_sampler_chain(p).names(), (Names{"penalties", "temperature", "draw"}));
  p.top_k = 40;
  p.top_p = 0.9f;
  p.min_p = 0.05f;
  EXPECT_EQ(make_sampler_chain(p).names(), (Names{"penalties", "temperature", "top-k", "min-p", "top-p", "draw"}));
  p.top_k = 1;
  EXPECT_EQ(make_sampler_chain(p).names(), (Names{"penalties", "greedy"}));
  p.top_k = 40;
  p.temperature = 0.0f;
  EXPECT_EQ(make_sampler_chain(p).names(), (Names{"penalties", "greedy"}));
}

// Counts what the chain tells it; keeps the candidates as they are.
class Probe final : public LogitsProcessor {
 public:
  std::string_view name() const override { return "probe"; }
  void apply(SamplingStep& step) override { ++applied; }
  void accept(int64_t token) override { accepted.push_back(token); }
  void reset() override { accepted.clear(); }
  int applied = 0;
  std::vector<int64_t> accepted;
};

TEST(SamplerChain, ApplyChoosesSampleAlsoAccepts) {
  SamplerChain chain;
  auto probe = std::make_unique<Probe>();
  Probe* seen = probe.get();
  chain.append(std::move(probe));
  std::vector<float> l = {0.0f, 2.0f, 1.0f};
  EXPECT_EQ(chain.apply(l, {}), 1);  // no selector: the most probable
  EXPECT_TRUE(seen->accepted.empty());
  chain.append(std::make_unique<GreedySelector>());
  EXPECT_EQ(chain.sample(l, {}), 1);
  EXPECT_EQ(seen->applied, 2);
  EXPECT_EQ(seen->accepted, (std::vector<int64_t>{1}));
  chain.reset();
  EXPECT_TRUE(seen->accepted.empty());
}

// A ban put ahead of the chain is what the generator did by hand before: -inf
// at the EOS ids before sampling while fewer than min_new_tokens were generated.
TEST(SamplerChain, BanAheadOfTheChainMatchesMaskingByHand) {
  std::mt19937_64 rng(11);
  const std::vector<int64_t> eos = {1, 5};
  for (int n = 0; n < 300; ++n) {
    RandomCase c = random_case(rng);
    const int64_t min_new = static_cast<int64_t>(rng() % 4);
    Sampler by_hand(c.params), banned(c.params);
    banned.chain().prepend(std::make_unique<BanTokens>(eos, min_new));
    EXPECT_EQ(banned.chain().names().front(), "ban");
    std::vector<int64_t> history = c.prompt;
    for (size_t s = 0; s < c.steps.size(); ++s) {
      std::vector<float> a = c.steps[s], b = c.steps[s];
      if (static_cast<int64_t>(s) < min_new) {
        for (int64_t t : eos) {
          if (t < static_cast<int64_t>(a.size())) a[static_cast<size_t>(t)] = -INFINITY;
        }
      }
      const int64_t token = by_hand.sample(a, history);
      ASSERT_EQ(banned.sample(b, history), token) << "case " << n << " step " << s;
      ASSERT_EQ(a, b);
      history.push_back(token);
    }
  }
}

TEST(SamplerChain, NoAllocationPerStepOnceWarmed) {
  std::mt19937_64 rng(3);
  std::normal_distribution<float> normal(0.0f, 0.05f);  // flat: top-p gathers past its first guess
  std::vector<std::vector<float>> steps(8, std::vector<float>(5000));
  for (auto& l : steps) {
    for (float& x : l) x = normal(rng);
  }
  std::vector<int64_t> history(300);
  for (int64_t& t : history) t = static_cast<int64_t>(rng() % 5000);
  SamplingParams greedy;
  greedy.repetition_penalty = 1.3f;
  SamplingParams nucleus = sampled(4);
  nucleus.top_p = 0.9f;
  nucleus.min_p = 0.5f;
  nucleus.presence_penalty = 0.2f;
  SamplingParams top_k = sampled(5);
  top_k.top_k = 50;
  top_k.top_p = 0.95f;
  for (const SamplingParams& p : {greedy, nucleus, top_k, sampled(6)}) {
    Sampler sampler(p);
    sampler.chain().prepend(std::make_unique<BanTokens>(std::vector<int64_t>{1, 2}, 4));
    std::vector<float> logits(5000);
    auto run = [&] {
      for (const auto& l : steps) {
        std::copy(l.begin(), l.end(), logits.begin());
        sampler.sample(logits, history);
        (void)sampler.last_candidates();
      }
    };
    run();  // warm
    const int64_t before = allocations();
    run();
    EXPECT_EQ(allocations() - before, 0) << sampler.chain().names().size() << " processors";
  }
}

// ---- token_logprobs ----

// log p_i = l_i / T - log sum_j exp(l_j / T) by the definition, in long double
// with no shift by the maximum (exact enough for |l / T| below ~11000), a NaN
// as -inf; and
// every token ranked by a full stable sort. Nothing shared with the heap and
// the double log-sum-exp of token_logprobs.
struct ReferenceLogprobs {
  std::vector<long double> logprob;  // by token id
  std::vector<int64_t> ranked;       // every token, most likely first, ties by id
};

ReferenceLogprobs reference_logprobs(const std::vector<float>& logits, float temperature = 1.0f) {
  ReferenceLogprobs r;
  const long double t = temperature;
  long double z = 0;
  for (float l : logits) {
    if (!std::isnan(l)) z += std::exp(static_cast<long double>(l) / t);
  }
  const long double log_z = std::log(z);
  for (float l : logits) r.logprob.push_back(std::isnan(l) ? -INFINITY : static_cast<long double>(l) / t - log_z);
  r.ranked.resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) r.ranked[i] = static_cast<int64_t>(i);
  std::stable_sort(r.ranked.begin(), r.ranked.end(),
                   [&](int64_t a, int64_t b) { return r.logprob[size_t(a)] > r.logprob[size_t(b)]; });
  return r;
}

// A float logprob against the reference: rounding to float (half an ulp,
// 6e-8 relative) and double's log near z = 1, nothing more. A sum in float
// over 150k tokens is off by 3e-7 to 8e-7 relative and fails it.
void expect_logprob(float got, long double want, const std::string& what) {
  if (std::isinf(want)) {
    EXPECT_EQ(got, static_cast<float>(want)) << what;
    return;
  }
  const double w = static_cast<double>(want);
  EXPECT_NEAR(got, w, 2.5e-7 * std::fabs(w) + 1e-13) << what;
}

// token_logprobs(logits, chosen, top, temperature) against reference_logprobs.
void expect_matches_reference(const std::vector<float>& logits, int64_t chosen, int top, float temperature = 1.0f) {
  const ReferenceLogprobs ref = reference_logprobs(logits, temperature);
  TokenLogprobs got;
  token_logprobs(logits, chosen, top, got, temperature);
  const std::string where = "vocab " + std::to_string(logits.size()) + " top " + std::to_string(top) + " T " +
                            std::to_string(temperature);
  EXPECT_EQ(got.token, chosen) << where;
  expect_logprob(got.logprob, ref.logprob[size_t(chosen)], where + " chosen " + std::to_string(chosen));
  const size_t n = std::min(static_cast<size_t>(std::max(top, 0)), logits.size());
  ASSERT_EQ(got.top.size(), n) << where;
  for (size_t k = 0; k < n; ++k) {
    EXPECT_EQ(got.top[k].first, ref.ranked[k]) << where << " rank " << k;
    expect_logprob(got.top[k].second, ref.logprob[size_t(ref.ranked[k])], where + " rank " + std::to_string(k));
    if (k > 0) {
      EXPECT_LE(got.top[k].second, got.top[k - 1].second) << where << " rank " << k;
    }
  }
}

TEST(TokenLogprobs, MatchesADoublePrecisionReferenceOnRandomRows) {
  std::mt19937_64 rng(7);
  for (size_t vocab : {1, 2, 3, 21, 1000, 151936}) {  // the last Qwen2.5's
    for (float scale : {0.01f, 1.0f, 8.0f, 30.0f}) {
      std::normal_distribution<float> normal(0.5f, scale);
      std::vector<float> logits(vocab);
      for (float& l : logits) l = normal(rng);
      for (int top : {0, 1, 5, 20}) {
        const auto chosen = static_cast<int64_t>(rng() % vocab);
        expect_matches_reference(logits, chosen, top);
        expect_matches_reference(logits, chosen, top, 0.6f);
        expect_matches_reference(logits, chosen, top, 1.7f);
        // The most likely token, as a greedy choice: its logprob is top[0]'s.
        TokenLogprobs best;
        token_logprobs(logits, argmax(logits), top, best);
        if (top > 0) {
          EXPECT_EQ(best.logprob, best.top[0].second);
        }
        EXPECT_LE(best.logprob, 0.0f);
      }
    }
  }
}

TEST(TokenLogprobs, TiesAreListedByTokenId) {
  // Nine tokens share the highest logit, four the next; top 20 takes all of them.
  std::vector<float> logits(30, -5.0f);
  for (int64_t t : {28, 3, 17, 9, 0, 22, 11, 5, 29}) logits[size_t(t)] = 2.0f;
  for (int64_t t : {26, 1, 14, 7}) logits[size_t(t)] = 1.0f;
  TokenLogprobs got;
  token_logprobs(logits, 22, 20, got);
  const std::vector<int64_t> want = {0, 3, 5, 9, 11, 17, 22, 28, 29, 1, 7, 14, 26, 2, 4, 6, 8, 10, 12, 13};
  ASSERT_EQ(got.top.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) EXPECT_EQ(got.top[k].first, want[k]) << "rank " << k;
  EXPECT_EQ(got.top[0].second, got.top[8].second);
  EXPECT_EQ(got.logprob, got.top[0].second);
  // Ties cut by the top-n boundary keep the lowest ids.
  token_logprobs(logits, 22, 4, got);
  ASSERT_EQ(got.top.size(), 4u);
  for (size_t k = 0; k < 4; ++k) EXPECT_EQ(got.top[k].first, want[k]);
  expect_matches_reference(logits, 22, 20);
  expect_matches_reference(logits, 2, 13);
}

TEST(TokenLogprobs, NegativeInfinityHasNoMass) {
  std::vector<float> logits = {1.0f, -INFINITY, 0.5f, -INFINITY, -2.0f};
  expect_matches_reference(logits, 1, 5);
  TokenLogprobs got;
  token_logprobs(logits, 3, 5, got);
  EXPECT_EQ(got.logprob, -INFINITY);
  // The banned tokens come last, by id, and the others share all the mass.
  ASSERT_EQ(got.top.size(), 5u);
  EXPECT_EQ(got.top[3].first, 1);
  EXPECT_EQ(got.top[4].first, 3);
  EXPECT_EQ(got.top[4].second, -INFINITY);
  double mass = 0;
  for (const auto& [token, lp] : got.top) mass += std::exp(double{lp});
  EXPECT_NEAR(mass, 1.0, 1e-6);
}

TEST(TokenLogprobs, LargeMagnitudesAreStable) {
  // exp(10000) overflows a double: only a shifted log-sum-exp gets these right.
  std::vector<float> big = {10000.0f, 9999.0f, 9990.0f, -10000.0f, 9999.5f};
  for (int64_t chosen = 0; chosen < 5; ++chosen) expect_matches_reference(big, chosen, 5);
  for (float& l : big) l = -l;
  for (int64_t chosen = 0; chosen < 5; ++chosen) expect_matches_reference(big, chosen, 5);
  // At the ends of float's range: two tokens at the top share the mass, the
  // third is below float's range (-6e38 rounds to -inf).
  const std::vector<float> extreme = {3e38f, -3e38f, 3e38f};
  TokenLogprobs got;
  token_logprobs(extreme, 2, 3, got);
  EXPECT_NEAR(got.logprob, -std::log(2.0), 1e-7);
  ASSERT_EQ(got.top.size(), 3u);
  EXPECT_EQ(got.top[0].first, 0);
  EXPECT_EQ(got.top[1].first, 2);
  EXPECT_EQ(got.top[0].second, got.logprob);
  EXPECT_EQ(got.top[2].second, -INFINITY);
}

TEST(TokenLogprobs, NonFiniteLogitsAreDefined) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // A NaN counts as -inf: no mass, listed after every finite logit.
  std::vector<float> logits = {nan, 1.0f, nan, 3.0f, -1.0f};
  expect_matches_reference(logits, 3, 5);
  TokenLogprobs got;
  token_logprobs(logits, 0, 5, got);
  EXPECT_EQ(got.logprob, -INFINITY);
  ASSERT_EQ(got.top.size(), 5u);
  EXPECT_EQ(got.top[0].first, 3);
  EXPECT_EQ(got.top[3].first, 0);
  EXPECT_EQ(got.top[4].first, 2);
  for (const auto& [token, lp] : got.top) EXPECT_FALSE(std::isnan(lp)) << "token " << token;
  // Nothing above -inf: every logprob is -inf.
  const std::vector<float> none = {nan, -INFINITY, nan};
  token_logprobs(none, 1, 3, got);
  EXPECT_EQ(got.logprob, -INFINITY);
  ASSERT_EQ(got.top.size(), 3u);
  for (const auto& [token, lp] : got.top) EXPECT_EQ(lp, -INFINITY) << "token " << token;
  EXPECT_EQ(got.top[0].first, 0);  // all tied at -inf: by id
  // +inf logits share the whole mass.
  const std::vector<float> infinite = {INFINITY, 2.0f, nan, INFINITY, INFINITY, -INFINITY};
  token_logprobs(infinite, 3, 6, got);
  EXPECT_NEAR(got.logprob, -std::log(3.0), 1e-7);
  ASSERT_EQ(got.top.size(), 6u);
  const std::vector<int64_t> order = {0, 3, 4, 1, 2, 5};
  for (size_t k = 0; k < order.size(); ++k) {
    EXPECT_EQ(got.top[k].first, order[k]) << "rank " << k;
    EXPECT_EQ(got.top[k].second, k < 3 ? got.logprob : -INFINITY) << "rank " << k;
  }
  token_logprobs(infinite, 1, 0, got);
  EXPECT_EQ(got.logprob, -INFINITY);
}

TEST(TokenLogprobs, TopIsClampedToTheVocabulary) {
  const std::vector<float> logits = {0.25f, -1.0f, 2.0f};
  TokenLogprobs got;
  token_logprobs(logits, 1, 0, got);
  EXPECT_TRUE(got.top.empty());
  expect_matches_reference(logits, 1, 0);
  token_logprobs(logits, 1, -3, got);
  EXPECT_TRUE(got.top.empty());
  token_logprobs(logits, 1, 20, got);
  ASSERT_EQ(got.top.size(), 3u);
  expect_matches_reference(logits, 1, 20);
  // The list is rebuilt, not appended to, by a reused TokenLogprobs.
  token_logprobs(logits, 0, 2, got);
  ASSERT_EQ(got.top.size(), 2u);
  EXPECT_EQ(got.top[0].first, 2);
  EXPECT_EQ(got.top[1].first, 0);
}

TEST(TokenLogprobs, SampleWithLogprobsReadsTheRowAfterPenaltiesAtTheSamplingTemperature) {
  // The repetition penalty demotes token 2, the raw argmax: greedy then takes
  // token 0, and the logprobs are the penalized row's (at temperature 1).
  const std::vector<float> raw = {2.0f, -1.0f, 3.0f, 0.5f};
  SamplingParams p;
  p.repetition_penalty = 4.0f;
  const std::vector<int64_t> history = {2};
  const std::vector<float> penalized = {2.0f, -1.0f, 0.75f, 0.5f};
  Sampler sampler(p);
  std::vector<float> logits = raw;
  TokenLogprobs got;
  const int64_t token = sample_with_logprobs(sampler, logits, history, 2, got);
  EXPECT_EQ(token, 0);
  EXPECT_EQ(logits, penalized);
  const ReferenceLogprobs ref = reference_logprobs(penalized);
  EXPECT_EQ(got.token, 0);
  expect_logprob(got.logprob, ref.logprob[0], "chosen");
  ASSERT_EQ(got.top.size(), 2u);
  EXPECT_EQ(got.top[0].first, 0);
  EXPECT_EQ(got.top[1].first, 2);
  expect_logprob(got.top[1].second, ref.logprob[2], "rank 1");
  // Sampling at T = 0.5 with top-k 2: the logprobs are the tempered
  // distribution's, before truncation (tokens 1 and 3, outside the top 2,
  // keep their finite logprobs).
  SamplingParams hot = p;
  hot.greedy = false;
  hot.temperature = 0.5f;
  hot.top_k = 2;
  hot.seed = 3;
  Sampler sampled(hot);
  logits = raw;
  const int64_t drawn = sample_with_logprobs(sampled, logits, history, 4, got);
  EXPECT_TRUE(drawn == 0 || drawn == 2) << drawn;
  const ReferenceLogprobs tempered = reference_logprobs(penalized, 0.5f);
  expect_logprob(got.logprob, tempered.logprob[size_t(drawn)], "drawn");
  ASSERT_EQ(got.top.size(), 4u);
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(got.top[k].first, tempered.ranked[k]) << "rank " << k;
    expect_logprob(got.top[k].second, tempered.logprob[size_t(tempered.ranked[k])], "rank " + std::to_string(k));
  }
  // top < 0: sample() alone, nothing reported.
  Sampler plain(p);
  TokenLogprobs untouched;
  logits = raw;
  EXPECT_EQ(sample_with_logprobs(plain, logits, history, -1, untouched), 0);
  EXPECT_EQ(untouched.token, -1);
}

TEST(TokenLogprobs, NoAllocationOnceWarmed) {
  std::mt19937_64 rng(11);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> row(5000);
  for (float& l : row) l = normal(rng);
  SamplingParams p = sampled(3);
  p.top_k = 40;
  p.frequency_penalty = 0.5f;
  Sampler sampler(p);
  std::vector<float> logits(row.size());
  std::vector<int64_t> history = {1, 2, 3};
  TokenLogprobs out;
  auto run = [&] {
    for (int step = 0; step < 4; ++step) {
      std::copy(row.begin(), row.end(), logits.begin());
      sample_with_logprobs(sampler, logits, history, kMaxTopLogprobs, out);
    }
  };
  run();
  const int64_t before = allocations();
  run();
  EXPECT_EQ(allocations() - before, 0);
}

}  // namespace
}  // namespace ember::genai
