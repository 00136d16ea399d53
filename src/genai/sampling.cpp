#include "genai/sampling.h"

namespace ember::genai {

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

}  // namespace ember::genai
