#pragma once
// The decode loop over an onnxruntime-genai decoder: prefill, then one token
// per step, with the KV cache in preallocated buffers. With
// past_present_share_buffer (GroupQueryAttention models) each layer's K and V
// live in one [1, kv_heads, max_length, head_size] buffer bound as both past
// and present, so a step appends in place; other exports (present = past + new,
// by Concat) alternate between two buffers of that capacity.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/tensor.h"
#include "genai/beam_search.h"
#include "genai/decoder_io.h"
#include "genai/genai_config.h"
#include "genai/kv_cache.h"
#include "genai/sampling.h"
#include "runtime/session.h"

namespace ember::genai {

struct GeneratorOptions {
  std::string decoder_file;  // relative to the folder; empty: the folder's own (see load_model_folder)
  int num_threads = 0;  // 0: genai_config's intra_op_num_threads, else Ember's default
  int max_length = 0;   // KV capacity in tokens; 0: search.max_length
  int max_batch = 1;    // rows generate_batch() may run at once
  // Prompt tokens per model run (0: the whole prompt at once). Activation
  // memory grows with the tokens of a run: a 4000-token prompt of the
  // Qwen2.5-0.5B-shaped fixture in one run peaked at 1.16x its weights + KV
  // cache, in runs of 512 at (see docs/benchmarks/2026-12-01-generation.md).
  int prefill_chunk = 512;
  runtime::LoadProgress progress;  // hears the weights being prepacked; may be empty
};

class Drafter;  // speculative.h

struct GenerationParams {
  int max_new_tokens = 128;
  int min_new_tokens = 0;  // EOS ids cannot be drawn before this many tokens
  bool stop_on_eos = true;
  SamplingParams sampling;
  // Called with each generated token as it is chosen; false stops generation.
  std::function<bool(int64_t)> on_token;
  // Log-probabilities (OpenAI's logprobs / top_logprobs): < 0 none; 0 to
  // kMaxTopLogprobs, each chosen token's logprob and that many most likely
  // alternatives, as sample_with_logprobs (sampling.h) defines them: after
  // penalties, bans and masks, at the sampling temperature, before
  // truncation. on_logprobs hears each chosen token's, just before on_token
  // hears the token; the TokenLogprobs is reused, valid during the call.
  // Nothing is computed when top_logprobs < 0 or on_logprobs is empty.
  int top_logprobs = -1;
  std::function<void(const TokenLogprobs&)> on_logprobs;
  // Speculative decoding (speculative.h) when both are set: each model run
  // takes the pending token and up to num_draft_tokens the drafter proposes,
  // and keeps those the sampler chain chooses in turn. The tokens are the ones
  // plain decoding chooses, up to the rounding of a multi-position run
  // (speculative.h says where that is exact). The drafter must outlive the
  // call. generate() only: generate_batch and the Engine refuse a drafter.
  Drafter* drafter = nullptr;
  int num_draft_tokens = 0;
  // A constraint on the output (constraint.h's GrammarMask: JSON Schema,
  // regex, grammar), made once per sequence and put first in its sampler
  // chain, which tells it every chosen token. Empty: none.
  std::function<std::unique_ptr<LogitsProcessor>()> make_constraint;
};

// An error naming top_logprobs when it exceeds kMaxTopLogprobs.
Status check_top_logprobs(const GenerationParams& params);

// The `search` defaults of genai_config.json for a prompt of `prompt_tokens`:
// max_length and min_length count the prompt, as in onnxruntime-genai; a
// random_seed of -1 draws a seed from std::random_device.
GenerationParams params_from_search(const SearchConfig& search, int64_t prompt_tokens);

// kError: a logits processor failed (LogitsProcessor::failure, e.g. a grammar
// matcher past its step budget) or the engine's step did; the message is in
// GenerationResult::error.
enum class StopReason { kEos, kMaxNewTokens, kCallback, kContextFull, kCancelled, kError };
const char* stop_reason_name(StopReason reason);

struct GenerationStats {
  int64_t prompt_tokens = 0;    // the whole prompt
  int64_t reused_tokens = 0;    // of it, tokens whose KV was kept from the previous call
  int64_t generated_tokens = 0;
  int64_t decode_steps = 0;     // tokens chosen after the first (without speculation, one model run each)
  int64_t decode_runs = 0;      // model runs after the prompt's
  int64_t drafted_tokens = 0;   // speculation: tokens proposed and run
  int64_t accepted_drafts = 0;  // of them, those the chain chose
  double prefill_s = 0;         // the model run over the new prompt tokens
  double first_token_s = 0;     // prefill and choosing the first token
  double decode_s = 0;          // every later token: drafting, model runs and sampling
  double prefill_tokens_per_s() const;
  double decode_tokens_per_s() const;
};

struct GenerationResult {
  std::vector<int64_t> tokens;  // generated, the stopping EOS included (kError: not the token it failed at)
  StopReason stop = StopReason::kMaxNewTokens;
  std::string error;  // why, when stop is kError
  GenerationStats stats;
  float score = 0;  // beam_search: the hypothesis' log-probability / length^length_penalty
};

// After a token was sampled: when a processor of `chain` failed, the sequence
// ends before that token (a forced EOS, or one the matcher refused), `out`
// gets StopReason::kError and the failure, and this is true. The generation
// loops (generate, generate_batch, Engine) call it first.
bool ends_on_failure(SamplerChain& chain, GenerationResult& out);

class Generator {
 public:
  // `model_dir` as load_model_folder reads it: genai_config.json, or an optimum / transformers.js export.
  static Result<std::unique_ptr<Generator>> load(const std::string& model_dir, const GeneratorOptions& options = {});
  static Result<std::unique_ptr<Generator>> create(GenaiConfig config, const GeneratorOptions& options = {});

  const GenaiConfig& config() const { return config_; }
  int64_t max_length() const { return capacity_; }
  bool shares_kv_buffer() const { return shared_; }
  // The LM head runs on the positions whose logits a run asks for only (see restrict_lm_head).
  bool gathered_logits() const { return gathered_logits_; }
  // Bytes of the decoder's constant inputs as loaded (before prepacking) and of the KV cache buffers.
  int64_t weight_bytes() const { return weight_bytes_; }
  int64_t kv_cache_bytes() const;

  // Generates after `prompt`, the whole conversation so far: the KV cache of
  // the prefix it shares with the tokens already cached is kept and only the
  // rest is prefilled.
  Result<GenerationResult> generate(std::span<const int64_t> prompt, const GenerationParams& params);

  // Generates after each prompt independently, all rows decoding in one
  // batched run per step; rows may differ in length. Each prompt is
  // prefilled on its own (batch 1, into its row of the cache), so no row
  // carries padding; decode steps tell GroupQueryAttention each row's length
  // through its attention_mask row (ones over the row's tokens, zeros after).
  // Needs the shared-buffer path. Row r samples with seed + r; on_token is
  // not called, and top_logprobs >= 0 is refused. Clears the single-sequence cache.
  Result<std::vector<GenerationResult>> generate_batch(std::span<const std::vector<int64_t>> prompts,
                                                       const GenerationParams& params);

  // Beam search (beam_search.h) after `prompt`, as onnxruntime-genai's: the
  // best num_return_sequences hypotheses, best first, each with its score.
  // The beams decode batched, one cache row each (max_batch >= num_beams, on
  // the shared-buffer path); after a step a parent's row passes to its first
  // child in place and only further children copy it, the cached positions
  // only. params give max_new_tokens, min_new_tokens and stop_on_eos; sampling,
  // penalties, constraints, drafts and logprobs are refused; on_token is not
  // called. Clears the single-sequence cache.
  Result<std::vector<GenerationResult>> beam_search(std::span<const int64_t> prompt, const GenerationParams& params,
                                                    const BeamParams& beam);

  // Runs `tokens` after the cached ones, prefill_chunk at a time; logits(i)
  // then holds the logits of the last `logits_rows` of them (at most the last
  // chunk's tokens), last_logits() the last one's. On error the cache is as before.
  Status append(std::span<const int64_t> tokens, int64_t logits_rows = 1);
  // The most tokens the next run may take and still compute what one-token
  // steps would: up to the next of the graph's length switches
  // (length_switches in decoder_rewrites.h), else the context left (>= 1).
  int64_t decode_run_limit() const;
  // Keeps the KV of the first `length` cached tokens.
  Status truncate(int64_t length);
  void reset() { tokens_.clear(); }
  std::span<const int64_t> cached_tokens() const { return tokens_; }
  std::span<float> last_logits();
  // Row i of the last append's logits_rows, in token order.
  std::span<float> logits(int64_t i);

 private:
  Generator() = default;
  Status bind_io();
  // One model run of `tokens` after the cached ones (checked by append()),
  // with the logits of its last `logits_rows` positions.
  Status run_tokens(std::span<const int64_t> tokens, int64_t logits_rows);
  void allocate_cache();
  // One decode step of rows [0, tokens.size()): row r appends tokens[r] after its past[r] tokens.
  Status decode_rows(std::span<const int64_t> tokens, std::span<const int64_t> past);

  GenaiConfig config_;
  std::unique_ptr<runtime::Session> session_;
  int64_t capacity_ = 0;
  int64_t weight_bytes_ = 0;
  int64_t max_batch_ = 1;
  int64_t prefill_chunk_ = 0;
  int64_t row_ = 0;  // the cache row append() works on
  bool shared_ = false;
  bool gathered_logits_ = false;
  int64_t vocab_ = 0;
  int64_t kv_heads_ = 0;
  int64_t head_size_ = 0;

  DecoderIo io_;

  std::unique_ptr<ContiguousKvCache> cache_;
  SharedBufferKvCache* batched_cache_ = nullptr;  // cache_, when it is shared (generate_batch)
  Tensor ids_, mask_, positions_;  // capacity_ elements each
  Tensor batch_mask_;              // max_batch x capacity
  Tensor logits_positions_;         // capacity_ elements: the positions the LM head runs on
  Tensor ids_view_, mask_view_, positions_view_, logits_positions_view_, logits_view_;
  Tensor logits_;  // the rows a run asked for, or with the full LM head every position's [S, vocab]
  int64_t last_logits_rows_ = 0;   // rows of logits_ the last run wrote
  int64_t logits_first_row_ = 0;   // the row of logits(0) in logits_
  std::vector<const Tensor*> inputs_;
  std::vector<Tensor*> outputs_;
  std::vector<int64_t> tokens_;  // whose KV is cached
  std::vector<int64_t> length_switches_;
};

}  // namespace ember::genai
