#include "genai/sampling.h"

#include <algorithm>
#include <cmath>

namespace ember::genai {
namespace {

// Nucleus candidates are gathered by a bounded heap of this many tokens first
// and four times more while their mass stays below top_p: peaked LLM
// distributions reach top_p = 0.9 within a few dozen tokens, so the vocabulary
// (150k for Qwen) is scanned once or twice and never copied or sorted whole.
constexpr size_t kFirstNucleusGuess = 64;

bool higher(const Candidate& a, const Candidate& b) {
  return a.value > b.value || (a.value == b.value && a.token < b.token);
}

// The `n` highest logits at or above `floor`, sorted descending, into `out`.
void top_n(std::span<const float> logits, size_t n, float floor, std::vector<Candidate>& out) {
  out.clear();
  if (n == 0) return;
  // A min-heap under `higher`: its front is the weakest of the kept ones.
  for (size_t i = 0; i < logits.size(); ++i) {
    const float v = logits[i];
    if (!(v >= floor)) continue;
    Candidate c{static_cast<int64_t>(i), v};
    if (out.size() < n) {
      out.push_back(c);
      std::push_heap(out.begin(), out.end(), higher);
    } else if (higher(c, out.front())) {
      std::pop_heap(out.begin(), out.end(), higher);
      out.back() = c;
      std::push_heap(out.begin(), out.end(), higher);
    }
  }
  std::sort_heap(out.begin(), out.end(), higher);
}

}  // namespace

int64_t argmax(std::span<const float> logits) {
  return std::max_element(logits.begin(), logits.end()) - logits.begin();
}

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {}

double Sampler::uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

void Sampler::apply_penalties(std::span<float> logits, std::span<const int64_t> history) {
  const SamplingParams& p = params_;
  if (p.repetition_penalty == 1.0f && p.presence_penalty == 0.0f && p.frequency_penalty == 0.0f) return;
  history_scratch_.assign(history.begin(), history.end());
  std::sort(history_scratch_.begin(), history_scratch_.end());
  const auto vocab = static_cast<int64_t>(logits.size());
  for (size_t i = 0; i < history_scratch_.size();) {
    const int64_t token = history_scratch_[i];
    size_t j = i;
    while (j < history_scratch_.size() && history_scratch_[j] == token) ++j;
    const auto count = static_cast<float>(j - i);
    i = j;
    if (token < 0 || token >= vocab) continue;
    float& l = logits[static_cast<size_t>(token)];
    if (p.repetition_penalty != 1.0f) l = l > 0 ? l / p.repetition_penalty : l * p.repetition_penalty;
    l -= p.presence_penalty + p.frequency_penalty * count;
  }
}

void Sampler::select_candidates(std::span<const float> logits, float max_logit, double total) {
  const SamplingParams& p = params_;
  const double inv_t = 1.0 / p.temperature;
  const size_t vocab = logits.size();
  const bool top_k = p.top_k > 0 && static_cast<size_t>(p.top_k) < vocab;
  // min_p in logits: p_i / p_max >= min_p  <=>  l_i >= max + T ln(min_p).
  const float min_p_floor = p.min_p > 0 ? static_cast<float>(max_logit + p.temperature * std::log(p.min_p))
                                        : -INFINITY;
  auto prob = [&](float v) { return std::exp((static_cast<double>(v) - max_logit) * inv_t); };
  if (top_k) {
    // As Hugging Face's warpers: top-p and min-p act on the distribution renormalized over the top k.
    top_n(logits, static_cast<size_t>(p.top_k), -INFINITY, candidates_);
    total = 0;
    for (const Candidate& c : candidates_) total += prob(c.value);
  }
  size_t n = top_k ? candidates_.size() : std::min(vocab, kFirstNucleusGuess);
  while (true) {
    if (!top_k) top_n(logits, n, min_p_floor, candidates_);
    if (p.top_p >= 1.0f) break;
    double mass = 0;
    size_t keep = candidates_.size();
    for (size_t i = 0; i < candidates_.size(); ++i) {
      mass += prob(candidates_[i].value) / total;
      if (mass >= p.top_p) {
        keep = i + 1;
        break;
      }
    }
    if (keep < candidates_.size() || mass >= p.top_p || top_k || candidates_.size() < n || n == vocab) {
      candidates_.resize(keep);
      break;
    }
    n = std::min(vocab, n * 4);
  }
  size_t keep = 0;
  while (keep < candidates_.size() && candidates_[keep].value >= min_p_floor) ++keep;
  candidates_.resize(std::max<size_t>(keep, 1));
  double kept = 0;
  for (Candidate& c : candidates_) kept += prob(c.value);
  for (Candidate& c : candidates_) c.value = static_cast<float>(prob(c.value) / kept);
}

int64_t Sampler::sample(std::span<float> logits, std::span<const int64_t> history) {
  apply_penalties(logits, history);
  candidates_.clear();
  const SamplingParams& p = params_;
  if (p.greedy || p.temperature <= 0.0f || p.top_k == 1) return argmax(logits);
  const float max_logit = logits[static_cast<size_t>(argmax(logits))];
  const double inv_t = 1.0 / p.temperature;
  double total = 0;
  for (float v : logits) total += std::exp((static_cast<double>(v) - max_logit) * inv_t);
  const bool restricted = (p.top_k > 0 && static_cast<size_t>(p.top_k) < logits.size()) || p.top_p < 1.0f ||
                          p.min_p > 0.0f;
  if (!restricted) {
    // The whole distribution: one cumulative scan, no candidate list.
    const double target = uniform() * total;
    double cumulative = 0;
    for (size_t i = 0; i < logits.size(); ++i) {
      cumulative += std::exp((static_cast<double>(logits[i]) - max_logit) * inv_t);
      if (cumulative > target) return static_cast<int64_t>(i);
    }
    return argmax(logits);
  }
  select_candidates(logits, max_logit, total);
  const double target = uniform();
  double cumulative = 0;
  for (const Candidate& c : candidates_) {
    cumulative += c.value;
    if (cumulative > target) return c.token;
  }
  return candidates_.back().token;
}

}  // namespace ember::genai
