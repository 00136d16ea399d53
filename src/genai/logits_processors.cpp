#include "genai/logits_processors.h"

#include <algorithm>
#include <cassert>

namespace ember::genai {
namespace {

// Nucleus candidates are gathered by a bounded heap of this many tokens first
// and four times more while their mass stays below top_p: peaked LLM
// distributions reach top_p = 0.9 within a few dozen tokens, so the vocabulary
// (150k for Qwen) is scanned once or twice and never copied or sorted whole.
constexpr size_t kFirstNucleusGuess = 64;

// A draw from the vocabulary under a floor (min-p without top-k or top-p) takes
// the most probable tokens above it, at most this many: the sampler before the
// chain gathered them with the nucleus's first guess and no growth, and draws
// stay bit-identical to it.
constexpr size_t kFlooredDrawLimit = kFirstNucleusGuess;

// Shrinks `list` to its first `n` (erase, not resize: nothing is ever appended).
void keep_first(std::vector<TokenData>& list, size_t n) {
  list.erase(list.begin() + static_cast<std::ptrdiff_t>(std::min(n, list.size())), list.end());
}

bool higher(const TokenData& a, const TokenData& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.token < b.token);
}

// The `n` highest logits at or above `floor` (never NaN), sorted descending, into `out`.
void top_n(std::span<const float> logits, size_t n, float floor, std::vector<TokenData>& out) {
  out.clear();
  if (n == 0) return;
  // A min-heap under `higher`: its front is the weakest of the kept ones.
  for (size_t i = 0; i < logits.size(); ++i) {
    const float v = logits[i];
    if (!(v >= floor)) continue;
    TokenData c{static_cast<int64_t>(i), v, 0.0f};
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

// ---- SamplingStep ----

SamplingStep::SamplingStep(std::span<float> logits, std::span<const int64_t> history, std::vector<TokenData>& list)
    : logits_(logits), history_(history), list_(list) {
  list_.clear();
}

std::span<float> SamplingStep::mutable_logits() {
  assert(!max_known_ && "a processor edits logits after the distribution was read");
  return logits_;
}

void SamplingStep::set_temperature(float t) {
  assert(!max_known_ && "a processor sets the temperature after the distribution was read");
  temperature_ = t;
}

float SamplingStep::max_logit() {
  if (!max_known_) {
    max_logit_ = logits_[static_cast<size_t>(argmax(logits_))];
    inv_temperature_ = 1.0 / temperature_;
    max_known_ = true;
  }
  return max_logit_;
}

double SamplingStep::weight(float logit) {
  const float max = max_logit();
  return std::exp((static_cast<double>(logit) - max) * inv_temperature_);
}

double SamplingStep::mass() {
  if (!mass_known_) {
    double z = 0;
    for (float v : logits_) z += weight(v);
    set_mass(z);
  }
  return mass_;
}

void SamplingStep::set_mass(double z) {
  mass_ = z;
  mass_known_ = true;
}

void SamplingStep::raise_floor(float floor) {
  floor_ = std::max(floor_, floor);
  floored_ = true;
}

void SamplingStep::list_top(size_t n) {
  top_n(logits_, n, floor_, list_);
  listed_ = true;
}

int64_t SamplingStep::most_probable() const {
  return listed_ && !list_.empty() ? list_.front().token : argmax(logits_);
}

// ---- Processors ----

Penalties::Penalties(float repetition, float presence, float frequency)
    : repetition_(repetition), presence_(presence), frequency_(frequency) {}

void Penalties::apply(SamplingStep& step) {
  if (repetition_ == 1.0f && presence_ == 0.0f && frequency_ == 0.0f) return;
  const std::span<const int64_t> history = step.history();
  sorted_history_.assign(history.begin(), history.end());
  std::sort(sorted_history_.begin(), sorted_history_.end());
  const std::span<float> logits = step.mutable_logits();
  const auto vocab = static_cast<int64_t>(logits.size());
  for (size_t i = 0; i < sorted_history_.size();) {
    const int64_t token = sorted_history_[i];
    size_t j = i;
    while (j < sorted_history_.size() && sorted_history_[j] == token) ++j;
    const auto count = static_cast<float>(j - i);
    i = j;
    if (token < 0 || token >= vocab) continue;
    float& l = logits[static_cast<size_t>(token)];
    if (repetition_ != 1.0f) l = l > 0 ? l / repetition_ : l * repetition_;
    l -= presence_ + frequency_ * count;
  }
}

BanTokens::BanTokens(std::vector<int64_t> tokens, int64_t min_accepted)
    : tokens_(std::move(tokens)), min_accepted_(min_accepted) {}

void BanTokens::apply(SamplingStep& step) {
  if (accepted_ >= min_accepted_) return;
  const std::span<float> logits = step.mutable_logits();
  for (int64_t t : tokens_) {
    if (t >= 0 && t < static_cast<int64_t>(logits.size())) logits[static_cast<size_t>(t)] = -INFINITY;
  }
}

void Temperature::apply(SamplingStep& step) {
  if (t_ > 0 || std::isnan(t_)) {
    step.set_temperature(t_);
  } else if (step.listed()) {
    keep_first(step.list(), 1);
  } else {
    step.list_top(1);
  }
}

void TopK::apply(SamplingStep& step) {
  if (k_ <= 0) return;
  const auto k = static_cast<size_t>(k_);
  if (!step.listed()) {
    if (k >= step.vocab_size()) return;
    step.list_top(k);
  } else if (k < step.list().size()) {
    keep_first(step.list(), k);
  } else {
    return;
  }
  double z = 0;
  for (const TokenData& c : step.list()) z += step.weight(c.logit);
  step.set_mass(z);
}

void TopP::apply(SamplingStep& step) {
  if (!(p_ < 1.0f)) return;
  const size_t vocab = step.vocab_size();
  // A list is measured as it stands; the vocabulary is gathered in growing prefixes until one reaches p.
  size_t n = std::min(vocab, kFirstNucleusGuess);
  const bool grow = !step.listed();
  while (true) {
    if (grow) step.list_top(n);
    std::vector<TokenData>& list = step.list();
    double mass = 0;
    size_t keep = list.size();
    for (size_t i = 0; i < list.size(); ++i) {
      mass += step.weight(list[i].logit) / step.mass();
      if (mass >= p_) {
        keep = i + 1;
        break;
      }
    }
    if (keep < list.size() || mass >= p_ || !grow || list.size() < n || n == vocab) {
      keep_first(list, keep);
      return;
    }
    n = std::min(vocab, n * 4);
  }
}

void MinP::apply(SamplingStep& step) {
  if (!(min_p_ > 0)) return;
  // p_i / p_max >= min_p  <=>  l_i >= max + T ln(min_p).
  const float floor =
      static_cast<float>(step.max_logit() + step.temperature() * std::log(std::min(min_p_, 1.0f)));
  if (!step.listed()) {
    step.raise_floor(floor);
    return;
  }
  std::vector<TokenData>& list = step.list();
  size_t keep = 0;
  while (keep < list.size() && list[keep].logit >= floor) ++keep;
  keep_first(list, std::max<size_t>(keep, 1));
}

void GreedySelector::apply(SamplingStep& step) { step.select(step.most_probable()); }

double DrawSelector::uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

void DrawSelector::apply(SamplingStep& step) { step.select(draw(step)); }

int64_t DrawSelector::draw(SamplingStep& step) {
  const std::span<const float> logits = step.logits();
  if (!step.restricted()) {
    // The whole distribution: one cumulative scan, no list.
    const double target = uniform() * step.mass();
    double cumulative = 0;
    for (size_t i = 0; i < logits.size(); ++i) {
      cumulative += step.weight(logits[i]);
      if (cumulative > target) return static_cast<int64_t>(i);
    }
    return argmax(logits);
  }
  if (!step.listed()) step.list_top(kFlooredDrawLimit);
  std::vector<TokenData>& list = step.list();
  if (list.empty()) {  // nothing left to draw from (NaN logits): the draw is spent all the same
    uniform();
    return argmax(logits);
  }
  double kept = 0;
  for (const TokenData& c : list) kept += step.weight(c.logit);
  for (TokenData& c : list) c.p = static_cast<float>(step.weight(c.logit) / kept);
  const double target = uniform();
  double cumulative = 0;
  for (const TokenData& c : list) {
    cumulative += c.p;
    if (cumulative > target) return c.token;
  }
  return list.back().token;
}

}  // namespace ember::genai
