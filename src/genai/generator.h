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

struct GenerationParams {
  int max_new_tokens = 128;
  int min_new_tokens = 0;  // EOS ids cannot be drawn before this many tokens
  bool stop_on_eos = true;
  SamplingParams sampling;
  // Called with each generated token as it is chosen; false stops generation.
  std::function<bool(int64_t)> on_token;
  // Log-probabilities (OpenAI's logprobs / top_logprobs): < 0 none; 0 to
  // kMaxTopLogprobs, each chosen token's logprob and that many most likely
  // alternatives, as token_logprobs (sampling.h) defines them: the raw logits'
  // log-softmax, before penalties, temperature and truncation. on_logprobs
  // hears each chosen token's, just before on_token hears the token; the
  // TokenLogprobs is reused, valid during the call. Nothing is computed or
  // copied when top_logprobs < 0 or on_logprobs is empty.
  int top_logprobs = -1;
  std::function<void(const TokenLogprobs&)> on_logprobs;
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

enum class StopReason { kEos, kMaxNewTokens, kCallback, kContextFull, kCancelled };
const char* stop_reason_name(StopReason reason);

struct GenerationStats {
  int64_t prompt_tokens = 0;    // the whole prompt
  int64_t reused_tokens = 0;    // of it, tokens whose KV was kept from the previous call
  int64_t generated_tokens = 0;
  int64_t decode_steps = 0;     // model runs of one token
  double prefill_s = 0;         // the model run over the new prompt tokens
  double first_token_s = 0;     // prefill and choosing the first token
  double decode_s = 0;          // every later step: model run and sampling
  double prefill_tokens_per_s() const;
  double decode_tokens_per_s() const;
};

struct GenerationResult {
  std::vector<int64_t> tokens;  // generated, the stopping EOS included
  StopReason stop = StopReason::kMaxNewTokens;
  GenerationStats stats;
};

class Generator {
 public:
  // `model_dir` as load_model_folder reads it: genai_config.json, or an optimum / transformers.js export.
  static Result<std::unique_ptr<Generator>> load(const std::string& model_dir, const GeneratorOptions& options = {});
  static Result<std::unique_ptr<Generator>> create(GenaiConfig config, const GeneratorOptions& options = {});

  const GenaiConfig& config() const { return config_; }
  int64_t max_length() const { return capacity_; }
  bool shares_kv_buffer() const { return shared_; }
  // The LM head runs on the last position only (see restrict_lm_head).
  bool last_position_logits() const { return last_position_logits_; }
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

  // Runs `tokens` after the cached ones, prefill_chunk at a time; last_logits()
  // then holds the logits of the last of them. On error the cache is as before.
  Status append(std::span<const int64_t> tokens);
  // Keeps the KV of the first `length` cached tokens.
  Status truncate(int64_t length);
  void reset() { tokens_.clear(); }
  std::span<const int64_t> cached_tokens() const { return tokens_; }
  std::span<float> last_logits();

 private:
  Generator() = default;
  Status bind_io();
  // One model run of `tokens` after the cached ones (checked by append()).
  Status run_tokens(std::span<const int64_t> tokens);
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
  bool last_position_logits_ = false;
  int64_t vocab_ = 0;
  int64_t kv_heads_ = 0;
  int64_t head_size_ = 0;

  DecoderIo io_;

  std::unique_ptr<ContiguousKvCache> cache_;
  SharedBufferKvCache* batched_cache_ = nullptr;  // cache_, when it is shared (generate_batch)
  Tensor ids_, mask_, positions_;  // capacity_ elements each
  Tensor batch_mask_;              // max_batch x capacity
  Tensor ids_view_, mask_view_, positions_view_, logits_view_;
  Tensor logits_;  // [vocab], or with the full LM head the longest run's [S, vocab]
  int64_t last_logits_rows_ = 0;  // rows of logits_ the last run wrote
  std::vector<const Tensor*> inputs_;
  std::vector<Tensor*> outputs_;
  std::vector<int64_t> tokens_;  // whose KV is cached
};

}  // namespace ember::genai
