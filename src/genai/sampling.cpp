#include "genai/sampling.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

namespace ember::genai {
namespace {

using Ranked = std::pair<int64_t, float>;

// The order of token_logprobs' list: the higher logit first, ties to the lower id.
bool ranks_higher(const Ranked& a, const Ranked& b) {
  return a.second > b.second || (a.second == b.second && a.first < b.first);
}

// A NaN logit counts as -inf.
float rank_value(float logit) { return std::isnan(logit) ? -INFINITY : logit; }

}  // namespace

SamplerChain& SamplerChain::append(std::unique_ptr<LogitsProcessor> processor) {
  processors_.push_back(std::move(processor));
  return *this;
}

SamplerChain& SamplerChain::prepend(std::unique_ptr<LogitsProcessor> processor) {
  processors_.insert(processors_.begin(), std::move(processor));
  return *this;
}

int64_t SamplerChain::apply(std::span<float> logits, std::span<const int64_t> history) {
  SamplingStep step(logits, history, list_);
  for (const auto& p : processors_) p->apply(step);
  return step.selected() >= 0 ? step.selected() : step.most_probable();
}

void SamplerChain::accept(int64_t token) {
  for (const auto& p : processors_) p->accept(token);
}

int64_t SamplerChain::sample(std::span<float> logits, std::span<const int64_t> history) {
  const int64_t token = apply(logits, history);
  accept(token);
  return token;
}

void SamplerChain::reset() {
  for (const auto& p : processors_) p->reset();
}

std::string SamplerChain::failure() {
  for (const auto& p : processors_) {
    if (std::string why = p->failure(); !why.empty()) return why;
  }
  return {};
}

std::vector<std::string_view> SamplerChain::names() const {
  std::vector<std::string_view> out;
  for (const auto& p : processors_) out.push_back(p->name());
  return out;
}

SamplerChain make_sampler_chain(const SamplingParams& params) {
  const SamplingParams& p = params;
  SamplerChain chain;
  if (p.repetition_penalty != 1.0f || p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f) {
    chain.append(std::make_unique<Penalties>(p.repetition_penalty, p.presence_penalty, p.frequency_penalty));
  }
  if (p.greedy || p.temperature <= 0.0f || p.top_k == 1) {
    chain.append(std::make_unique<GreedySelector>());
    return chain;
  }
  chain.append(std::make_unique<Temperature>(p.temperature));
  if (p.top_k > 0) chain.append(std::make_unique<TopK>(p.top_k));
  if (p.min_p > 0.0f) chain.append(std::make_unique<MinP>(p.min_p));
  if (p.top_p < 1.0f) chain.append(std::make_unique<TopP>(p.top_p));
  chain.append(std::make_unique<DrawSelector>(p.seed));
  return chain;
}

Sampler::Sampler(const SamplingParams& params) : params_(params), chain_(make_sampler_chain(params)) {}

std::span<const Candidate> Sampler::last_candidates() const {
  candidates_.clear();
  for (const TokenData& c : chain_.candidates()) candidates_.push_back({c.token, c.p});
  return candidates_;
}

void token_logprobs(std::span<const float> logits, int64_t chosen, int top, TokenLogprobs& out,
                    float temperature) {
  assert(chosen >= 0 && static_cast<size_t>(chosen) < logits.size());
  assert(temperature > 0);
  const double inv_t = 1.0 / static_cast<double>(temperature);
  const size_t n = std::min(static_cast<size_t>(std::max(top, 0)), logits.size());
  // The n highest as a min-heap under ranks_higher (its front the weakest kept),
  // logits until the end, where they become logprobs; and the maximum.
  std::vector<Ranked>& heap = out.top;
  heap.clear();
  float max = -INFINITY;
  for (size_t i = 0; i < logits.size(); ++i) {
    const float v = rank_value(logits[i]);
    max = std::max(max, v);
    if (n == 0 || (heap.size() == n && v < heap.front().second)) continue;
    const Ranked c{static_cast<int64_t>(i), v};
    if (heap.size() < n) {
      heap.push_back(c);
      std::push_heap(heap.begin(), heap.end(), ranks_higher);
    } else if (ranks_higher(c, heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), ranks_higher);
      heap.back() = c;
      std::push_heap(heap.begin(), heap.end(), ranks_higher);
    }
  }
  std::sort_heap(heap.begin(), heap.end(), ranks_higher);

  // logprob = (l - max) / T - log sum exp((l - max) / T): subtracting max
  // first keeps -log z for the top logit even where max + log z would round to
  // max (3e38).
  double log_sum = 0;
  double infinite = 0;  // how many logits are +inf, when max is
  if (max == INFINITY) {
    for (float v : logits) infinite += v == INFINITY ? 1 : 0;
  } else if (max > -INFINITY) {
    double z = 0;
    for (float v : logits) z += std::isnan(v) ? 0.0 : std::exp((static_cast<double>(v) - max) * inv_t);
    log_sum = std::log(z);
  }
  auto logprob = [&](float logit) -> float {
    const float v = rank_value(logit);
    if (infinite > 0) return v == INFINITY ? static_cast<float>(-std::log(infinite)) : -INFINITY;
    if (v == -INFINITY) return -INFINITY;  // also when every logit is
    const double lp = (static_cast<double>(v) - max) * inv_t - log_sum;
    // Below float's range (two logits 6e38 apart) is -inf, not an overflowing cast.
    return lp < -std::numeric_limits<float>::max() ? -INFINITY : static_cast<float>(lp);
  };
  for (Ranked& r : heap) r.second = logprob(r.second);
  out.token = chosen;
  out.logprob = logprob(logits[static_cast<size_t>(chosen)]);
}

int64_t sample_with_logprobs(Sampler& sampler, std::span<float> logits, std::span<const int64_t> history, int top,
                             TokenLogprobs& out) {
  const int64_t token = sampler.sample(logits, history);
  if (top < 0) return token;
  const SamplingParams& p = sampler.params();
  const bool greedy = p.greedy || p.temperature <= 0 || p.top_k == 1;
  token_logprobs(logits, token, top, out, greedy ? 1.0f : p.temperature);
  return token;
}

}  // namespace ember::genai
