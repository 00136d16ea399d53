#pragma once
// The links of a sampling chain (llama.cpp's llama_sampler design): each
// processor works on one sequence's step (the vocabulary's logits, or a list
// of candidates), and a selector at the end chooses the token. SamplerChain
// (sampling.h) owns them and runs them in order.
#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <string_view>
#include <vector>

namespace ember::genai {

// One candidate, as llama.cpp's llama_token_data: `p` is its probability once
// a selector normalized the list, 0 before.
struct TokenData {
  int64_t token;
  float logit;
  float p;
};

// Index of the first maximum (ties go to the lowest token id, as std::max_element).
int64_t argmax(std::span<const float> logits);

// One sequence's step. The candidates start as the whole vocabulary, read from
// the logits in place: a 150k-token vocabulary is never copied or sorted. A
// truncating processor turns them into an explicit list, most probable first
// (ties: lowest token id first).
//
// The distribution is p_i = exp((l_i - max) / T) / Z over the candidates. The
// logits keep the model's scale (penalties and masks aside): the temperature
// applies where a weight is computed, in double, and min-p is a floor in logit
// space, so neither makes a pass over the vocabulary. Z is the mass of the whole
// vocabulary until top-k renormalizes over its k (Hugging Face's order); top-p
// and min-p measure against Z without renormalizing, so the two commute, and the
// selector normalizes over what is left.
class SamplingStep {
 public:
  // `list` is the chain's buffer, reused from step to step; it is cleared here.
  SamplingStep(std::span<float> logits, std::span<const int64_t> history, std::vector<TokenData>& list);

  std::span<const int64_t> history() const { return history_; }  // the prompt, then the generated tokens
  size_t vocab_size() const { return logits_.size(); }
  std::span<const float> logits() const { return logits_; }
  // For penalties and masks, which run before anything reads the distribution.
  std::span<float> mutable_logits();

  float temperature() const { return temperature_; }
  void set_temperature(float t);
  float max_logit();
  // exp((logit - max) / T): the unnormalized probability.
  double weight(float logit);
  double mass();  // Z
  void set_mass(double z);

  // True once a processor listed the candidates; before, they are the vocabulary
  // at or above floor().
  bool listed() const { return listed_; }
  // Listed, or the vocabulary under a floor: anything less than the whole distribution.
  bool restricted() const { return listed_ || floored_; }
  float floor() const { return floor_; }
  void raise_floor(float floor);
  // Lists the `n` most probable tokens of the vocabulary at or above the floor.
  void list_top(size_t n);
  std::vector<TokenData>& list() { return list_; }

  // The first listed candidate, else the vocabulary's argmax.
  int64_t most_probable() const;
  int64_t selected() const { return selected_; }
  void select(int64_t token) { selected_ = token; }

 private:
  std::span<float> logits_;
  std::span<const int64_t> history_;
  std::vector<TokenData>& list_;
  float temperature_ = 1.0f;
  bool listed_ = false;
  bool floored_ = false;
  float floor_ = -INFINITY;
  bool max_known_ = false;  // once set, the logits and the temperature are fixed
  float max_logit_ = 0;
  double inv_temperature_ = 1.0;
  bool mass_known_ = false;
  double mass_ = 0;
  int64_t selected_ = -1;
};

class LogitsProcessor {
 public:
  virtual ~LogitsProcessor() = default;
  virtual std::string_view name() const = 0;
  virtual void apply(SamplingStep& step) = 0;
  // The token the sequence took this step, whoever chose it.
  virtual void accept(int64_t token) {}
  // A new sequence: forget the accepted tokens, reseed.
  virtual void reset() {}
  // Why this processor can no longer do its job (a grammar matcher that
  // failed), empty while it can: the sequence then ends with StopReason::kError.
  virtual std::string failure() { return {}; }
};

// Repetition (CTRL / Hugging Face: positive logits / r, negative x r), presence
// (OpenAI: minus this once per token seen) and frequency (OpenAI: minus this per
// occurrence) penalties over the tokens of the step's history.
class Penalties final : public LogitsProcessor {
 public:
  Penalties(float repetition, float presence, float frequency);
  std::string_view name() const override { return "penalties"; }
  void apply(SamplingStep& step) override;

 private:
  float repetition_, presence_, frequency_;
  std::vector<int64_t> sorted_history_;
};

// Sets the logits of `tokens` to -inf while fewer than `min_accepted` tokens
// were accepted: the EOS ids before min_new_tokens. Ids outside the vocabulary
// are ignored.
class BanTokens final : public LogitsProcessor {
 public:
  BanTokens(std::vector<int64_t> tokens, int64_t min_accepted);
  std::string_view name() const override { return "ban"; }
  void apply(SamplingStep& step) override;
  void accept(int64_t) override { ++accepted_; }
  void reset() override { accepted_ = 0; }

 private:
  std::vector<int64_t> tokens_;
  int64_t min_accepted_;
  int64_t accepted_ = 0;
};

// The step's temperature; at or below 0 only the most probable token is kept.
class Temperature final : public LogitsProcessor {
 public:
  explicit Temperature(float t) : t_(t) {}
  std::string_view name() const override { return "temperature"; }
  void apply(SamplingStep& step) override;

 private:
  float t_;
};

// The k most probable candidates, renormalized over them; k <= 0: no limit.
class TopK final : public LogitsProcessor {
 public:
  explicit TopK(int k) : k_(k) {}
  std::string_view name() const override { return "top-k"; }
  void apply(SamplingStep& step) override;

 private:
  int k_;
};

// Nucleus: the smallest prefix of the candidates with mass >= p (all of them
// when they never reach it); p >= 1: everything.
class TopP final : public LogitsProcessor {
 public:
  explicit TopP(float p) : p_(p) {}
  std::string_view name() const override { return "top-p"; }
  void apply(SamplingStep& step) override;

 private:
  float p_;
};

// Drops candidates whose probability is below min_p x the most probable one's;
// min_p above 1 acts as 1. On the vocabulary it only raises the floor, so a
// top-p after it gathers nothing min-p drops.
class MinP final : public LogitsProcessor {
 public:
  explicit MinP(float min_p) : min_p_(min_p) {}
  std::string_view name() const override { return "min-p"; }
  void apply(SamplingStep& step) override;

 private:
  float min_p_;
};

// Selects the most probable candidate: a plain argmax over the logits until
// something lists them.
class GreedySelector final : public LogitsProcessor {
 public:
  std::string_view name() const override { return "greedy"; }
  void apply(SamplingStep& step) override;
};

// Draws from the candidates with a std::mt19937_64 seeded once: one number
// (53 bits) per step. The whole vocabulary is one cumulative scan; a list is
// normalized first (its probabilities are what the step's list then holds);
// the vocabulary under a floor (min-p alone) draws among its 64 most probable
// tokens above it, as the sampler before the chain did.
class DrawSelector final : public LogitsProcessor {
 public:
  explicit DrawSelector(uint64_t seed) : seed_(seed), rng_(seed) {}
  std::string_view name() const override { return "draw"; }
  void apply(SamplingStep& step) override;
  void reset() override { rng_.seed(seed_); }

 private:
  double uniform();
  int64_t draw(SamplingStep& step);
  uint64_t seed_;
  std::mt19937_64 rng_;
};

}  // namespace ember::genai
