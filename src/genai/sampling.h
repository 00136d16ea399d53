#pragma once
// Choosing the next token from one row of logits: penalties, then greedy
// argmax or sampling with temperature, top-k, top-p and min-p.
#include <cstdint>
#include <random>
#include <span>
#include <vector>

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

// One candidate token and its (temperature-scaled) logit, later its probability.
struct Candidate {
  int64_t token;
  float value;
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);

  // The next token. `logits` (the vocabulary) is modified in place by the
  // penalties, which count the tokens of `history` (prompt and generated).
  int64_t sample(std::span<float> logits, std::span<const int64_t> history);
  const SamplingParams& params() const { return params_; }

  // The candidates the last sample() drew from, most probable first, with
  // their normalized probabilities (empty after a greedy or unrestricted draw).
  std::span<const Candidate> last_candidates() const { return candidates_; }

 private:
  void apply_penalties(std::span<float> logits, std::span<const int64_t> history);
  // The top_k highest logits (all tokens when restrict_to_top_k is false and
  // top-p / min-p need them), sorted descending, probabilities normalized
  // over the whole vocabulary.
  void select_candidates(std::span<const float> logits, float max_logit, double total);
  double uniform();

  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<Candidate> candidates_;
  std::vector<int64_t> history_scratch_;
};

// Index of the first maximum (ties go to the lowest token id, as std::max_element).
int64_t argmax(std::span<const float> logits);

}  // namespace ember::genai
