#pragma once
// Draft tokens for speculative decoding. Generator::generate runs the pending
// token and up to k drafted ones in one model run, chooses each position's
// token with the sampler chain as plain decoding would, keeps the drafts up to
// the first one the chain did not choose, and drops the rest of the KV cache.
//
// Drafters here are deterministic: a draft is one token, not a distribution
// (q is one-hot). Then the standard speculative-sampling rule (Leviathan et
// al. 2023, "Fast Inference from Transformers via Speculative Decoding";
// Chen et al. 2023) -- accept draft x with probability min(1, p(x) / q(x)),
// else draw from norm(max(0, p - q)) -- is: accept x with probability p(x),
// else draw from p without x; which is the same as drawing y from p and
// accepting x when y == x, else emitting y. Each emitted token is therefore a
// draw from the target's own distribution, with the same random stream as
// without speculation: greedy output is unchanged, and sampled output is the
// same draw as well, up to the arithmetic of a k-row run against a 1-row one:
// exact where kernels compute each row alone (Ember's MatMulNBits quantizes
// activations per row), not where a graph quantizes activations per tensor
// (DynamicQuantizeLinear), whose scale then depends on the drafts in the run.
// A DraftModelDrafter serves one generate() at a time.
#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"

namespace ember::genai {

class Generator;

class Drafter {
 public:
  virtual ~Drafter() = default;
  // Up to `max_tokens` tokens that may follow `history` (the prompt and every
  // token chosen so far) into `out` (cleared first); none when it has no guess.
  virtual Status propose(std::span<const int64_t> history, int max_tokens, std::vector<int64_t>& out) = 0;
};

// Prompt lookup (n-gram) decoding, as Hugging Face's prompt_lookup_num_tokens
// and vLLM's ngram speculator: the longest suffix of the history of
// max_ngram down to min_ngram tokens that occurred earlier, and the tokens
// that followed its most recent earlier occurrence. Free to propose; pays off
// where the output copies its input (edits, summaries with quotes, code).
class PromptLookupDrafter : public Drafter {
 public:
  PromptLookupDrafter(int min_ngram = 1, int max_ngram = 3);
  Status propose(std::span<const int64_t> history, int max_tokens, std::vector<int64_t>& out) override;

 private:
  int min_ngram_, max_ngram_;
};

// A smaller model with the same vocabulary, decoding greedily: its own
// Generator (its KV cache kept in step with the history, truncated to the
// common prefix before each proposal) runs the history's new tokens, then
// max_tokens - 1 single-token steps.
class DraftModelDrafter : public Drafter {
 public:
  // `draft` must outlive this; check_draft_model says whether it fits the target.
  explicit DraftModelDrafter(Generator& draft) : draft_(draft) {}
  Status propose(std::span<const int64_t> history, int max_tokens, std::vector<int64_t>& out) override;

 private:
  Generator& draft_;
};

// An error unless `draft` can draft for `target`: another Generator, a
// vocabulary no larger than the target's, and the same tokenizer.json
// vocabulary and added tokens.
Status check_draft_model(const Generator& target, const Generator& draft);

}  // namespace ember::genai
