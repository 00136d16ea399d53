#pragma once
// Beam search as onnxruntime-genai 0.18 runs it (its BeamSearch_Cpu and
// BeamSearchScorer, after Hugging Face's BeamSearchScorer): each step takes
// every beam's log-softmax plus the beam's score, keeps the 2 x num_beams best
// (beam, token) pairs over all beams, and walks them in order. An EOS among
// the first num_beams closes a hypothesis (the beam's sequence without the
// EOS, scored sum_logprobs / length^length_penalty, length counting the
// prompt and not the EOS); other pairs become the next beams until there are
// num_beams. The search is done once num_beams hypotheses are kept and either
// early_stopping is set or the best candidate's sum, over the current length
// to the penalty, cannot beat the worst kept; at max_length the open beams are
// scored as hypotheses too. Generator::beam_search runs the model; this class
// is the bookkeeping, with no model in it.
#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"

namespace ember::genai {

struct BeamParams {
  int num_beams = 4;
  float length_penalty = 1.0f;  // > 0 favours longer hypotheses, < 0 shorter
  bool early_stopping = true;   // stop once num_beams hypotheses are kept (onnxruntime-genai's default)
  int num_return_sequences = 1;  // the best this many hypotheses, 1 to num_beams
};

// An error naming the parameter when num_beams < 2 (one beam is greedy
// search: Generator::generate), num_return_sequences is outside [1,
// num_beams] or length_penalty is not finite.
Status check_beam_params(const BeamParams& params);

struct BeamHypothesis {
  std::vector<int64_t> tokens;  // generated, without the EOS
  int64_t eos = -1;             // the EOS that closed it; -1: open at the end
  float score = 0;              // sum of log-probabilities / length^length_penalty
};

class BeamSearch {
 public:
  // `eos`: the ids that close a hypothesis (empty: none do).
  BeamSearch(const BeamParams& params, int64_t prompt_length, std::vector<int64_t> eos);

  int num_beams() const { return params_.num_beams; }
  // Tokens in every beam's sequence, prompt included.
  int64_t length() const { return prompt_length_ + static_cast<int64_t>(generated_); }
  bool done() const { return done_; }

  // One step: `logits[b]` is beam b's next-token logits (the vocabulary),
  // overwritten with its log-softmax. Before the first step every beam is the
  // prompt, and only beam 0 counts (the others start at -1e9, as in
  // onnxruntime-genai, so the first beams are distinct tokens).
  void step(std::span<const std::span<float>> logits);
  // After step(): new beam i continues old beam parent(i) with token(i).
  std::span<const int32_t> parents() const { return parents_; }
  std::span<const int64_t> tokens() const { return next_tokens_; }
  std::span<const int64_t> beam_tokens(int beam) const { return beams_[static_cast<size_t>(beam)]; }

  // The hypotheses, best first (open beams scored in when the search is not
  // done), at most num_return_sequences of them.
  std::vector<BeamHypothesis> finish();

 private:
  void add_hypothesis(std::vector<int64_t> tokens, int64_t eos, float sum_logprobs, int64_t length);
  bool is_eos(int64_t token) const;

  BeamParams params_;
  int64_t prompt_length_ = 0;
  size_t generated_ = 0;
  std::vector<int64_t> eos_;
  bool done_ = false;
  std::vector<float> scores_;                 // per beam: sum of its tokens' log-probabilities
  std::vector<std::vector<int64_t>> beams_;  // per beam: its generated tokens
  std::vector<BeamHypothesis> hypotheses_;   // best first, at most num_beams
  std::vector<int32_t> parents_;
  std::vector<int64_t> next_tokens_;
  std::vector<float> next_scores_;
  struct Candidate {
    float score;
    int64_t index;  // beam x vocabulary + token
  };
  std::vector<Candidate> top_;
};

}  // namespace ember::genai
