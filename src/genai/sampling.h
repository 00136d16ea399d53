#pragma once
// Choosing the next token from one row of logits: a chain of logits
// processors (logits_processors.h), built from SamplingParams as penalties,
// then greedy argmax or temperature, top-k, min-p, top-p and a seeded draw;
// and the log-probabilities of the chosen tokens (OpenAI's logprobs).
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "genai/logits_processors.h"

namespace ember::genai {

struct SamplingParams {
  bool greedy = true;  // argmax; also when temperature is 0 or top_k is 1
  float temperature = 1.0f;
  int top_k = 0;        // 0: no limit
  float top_p = 1.0f;   // nucleus: the smallest prefix of the sorted distribution with mass >= top_p
  float min_p = 0.0f;   // drops tokens below min_p x the top token's probability
  float repetition_penalty = 1.0f;  // CTRL / Hugging Face: positive logits / p, negative x p
  float presence_penalty = 0.0f;    // OpenAI: minus this once per token seen
  float frequency_penalty = 0.0f;   // OpenAI: minus this per occurrence
  uint64_t seed = 0;
};

// An ordered list of logits processors, the last of them a selector. Once
// warmed it allocates nothing per step: the candidate list is reused.
class SamplerChain {
 public:
  SamplerChain& append(std::unique_ptr<LogitsProcessor> processor);
  // Constraints on the logits (token bans, grammar masks) go ahead of everything.
  SamplerChain& prepend(std::unique_ptr<LogitsProcessor> processor);

  // Runs the processors on one step and returns the token a selector chose (the
  // most probable candidate when none did), without accepting it. `logits` (the
  // vocabulary) is modified in place by penalties and masks; `history` is the
  // sequence so far, prompt and generated.
  int64_t apply(std::span<float> logits, std::span<const int64_t> history);
  // Tells every processor the sequence took `token`.
  void accept(int64_t token);
  // apply(), then accept() its token: one generation step.
  int64_t sample(std::span<float> logits, std::span<const int64_t> history);
  // A new sequence for every processor.
  void reset();
  // The first processor's failure (LogitsProcessor::failure), empty when none failed.
  std::string failure();

  // The last step's candidate list, most probable first, with the probabilities
  // the draw used; empty when the step never listed them (greedy, or a draw
  // from the whole vocabulary).
  std::span<const TokenData> candidates() const { return list_; }
  std::vector<std::string_view> names() const;

 private:
  std::vector<std::unique_ptr<LogitsProcessor>> processors_;
  std::vector<TokenData> list_;
};

// The chain for `params`: penalties (when any is set), then a greedy selector
// when params.greedy, temperature <= 0 or top_k == 1; else temperature, top-k,
// min-p, top-p (each when set) and a draw seeded with params.seed. Top-k comes
// first and renormalizes, as Hugging Face's warpers; min-p before top-p lets the
// nucleus gather skip what min-p drops (the two commute, see SamplingStep).
SamplerChain make_sampler_chain(const SamplingParams& params);

// One candidate token and its probability.
struct Candidate {
  int64_t token;
  float value;
};

// make_sampler_chain(params) behind the interface callers had before the chain.
class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);

  // The next token, accepted by the chain. `logits` (the vocabulary) is modified in place by the
  // penalties, which count the tokens of `history` (prompt and generated).
  int64_t sample(std::span<float> logits, std::span<const int64_t> history) { return chain_.sample(logits, history); }
  const SamplingParams& params() const { return params_; }
  SamplerChain& chain() { return chain_; }

  // The candidates the last sample() drew from, most probable first, with
  // their normalized probabilities (empty after a greedy or unrestricted draw).
  // Valid until the next sample().
  std::span<const Candidate> last_candidates() const;

 private:
  SamplingParams params_;
  SamplerChain chain_;
  mutable std::vector<Candidate> candidates_;
};

// The most alternatives a request may ask for: OpenAI's top_logprobs limit.
inline constexpr int kMaxTopLogprobs = 20;

// One chosen token's log-probability and the most likely alternatives.
struct TokenLogprobs {
  int64_t token = -1;
  float logprob = 0;
  std::vector<std::pair<int64_t, float>> top;  // (token, logprob), most likely first
};

// The log-softmax of one position's logits over temperature T, log p_i =
// (l_i - max) / T - log sum exp((l_j - max) / T), the distribution a draw
// uses before truncation. `out` gets `chosen`'s logprob and the `top` most
// likely tokens (clamped to [0, vocabulary]; the chosen token is listed only
// if it is among them), ordered by logprob, ties by lower token id. Computed in
// double, then rounded to float (-inf below its range), so every value is
// <= 0, the chosen token and its entry in `top` carry the same value, and
// `top` is sorted. `temperature` must be > 0.
// Non-finite logits: a NaN counts as -inf (no probability; in `top` after
// every finite logit, with the -inf ones by id); when some logits are +inf
// they share the mass equally (-log(count) each, -inf for the rest); when
// every logit is -inf or NaN every logprob is -inf. `out.top` keeps its
// capacity from call to call, so a reused `out` allocates nothing once it has
// held `top` entries. `chosen` must be in the vocabulary. Two passes over the
// row (max and the top list; exp in double): 1.6-2.0 ms for Qwen2.5's 151936
// logits on the 2-core dev machine under load, where a greedy argmax took 0.65.
void token_logprobs(std::span<const float> logits, int64_t chosen, int top, TokenLogprobs& out,
                    float temperature = 1.0f);

// sampler.sample(logits, history) and, when top >= 0, the chosen token's
// logprobs (OpenAI's logprobs / top_logprobs) into `out`: token_logprobs over
// the row as the chain left it, after the processors that change the
// distribution (penalties, token bans, grammar masks) and at the sampling
// temperature (1 for greedy), before truncation (top-k, top-p, min-p). With top < 0 this is sampler.sample() alone.
int64_t sample_with_logprobs(Sampler& sampler, std::span<float> logits, std::span<const int64_t> history, int top,
                             TokenLogprobs& out);

}  // namespace ember::genai
