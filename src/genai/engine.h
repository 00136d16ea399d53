#pragma once
// The serving engine: many requests at once over one decoder. Requests join
// and leave between steps (continuous batching); each step is one model run
// over every running sequence's next token and, within a token budget, chunks
// of waiting prompts (chunked prefill mixed with decode), so a long prompt
// does not stall the running streams. KV lives in a paged pool (PagedRunner,
// KvBlockPool): memory follows the tokens held, and the full blocks of a
// prefix that requests share (a system prompt, an earlier turn) are computed
// once and reused. When the pool runs out, the newest running sequence is
// preempted: its blocks are freed and it is recomputed later from its tokens
// (its output so far is kept). The API is single-threaded: one caller drives
// add / cancel / step (the HTTP server's loop).
//
// Batch invariance: a request's tokens do not depend on which other requests
// shared its steps or how its prompt was chunked. Every kernel of the decoder
// computes a token's row from that row alone (PagedAttention runs every query
// row with one algorithm); tests/ort/engine_test.cpp checks greedy outputs run
// together against the same requests run alone.
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "genai/generator.h"
#include "genai/kv_block_pool.h"
#include "genai/paged_runner.h"
#include "genai/sampling.h"

namespace ember::genai {

struct EngineOptions {
  std::string decoder_file;  // as GeneratorOptions::decoder_file
  int num_threads = 0;
  int64_t block_size = 16;
  // The KV pool in tokens (rounded up to whole blocks); 0: kv_bytes, else
  // 4 x max_length. Memory becomes resident as blocks are first used.
  int64_t kv_tokens = 0;
  int64_t kv_bytes = 0;
  int max_length = 0;          // tokens per sequence, prompt included; 0: search.max_length
  int max_running = 16;        // sequences decoding at once
  // Tokens per model run: decodes first, then prompt chunks. A step carrying
  // 512 prompt tokens stalls every stream for it (inter-token p99 1.43 s at 8
  // streams of the Qwen2.5-0.5B-shaped fixture on 2 cores); 128 gave 0.45 s for
  // 3 % less output (docs/benchmarks/2026-12-02-serving-engine.md).
  int64_t step_tokens = 128;
  bool prefix_caching = true;
  runtime::LoadProgress progress;
};

using RequestId = int64_t;

struct EngineRequest {
  std::vector<int64_t> prompt;
  // on_token is called from step() with each token as it is chosen; false
  // cancels. on_logprobs, when top_logprobs >= 0, just before it.
  GenerationParams params;
};

struct FinishedRequest {
  RequestId id = 0;
  // stats: prompt_tokens; reused_tokens (from the prefix cache, first prefill);
  // first_token_s from add(); decode_s the rest.
  GenerationResult result;
  int64_t preemptions = 0;
};

struct EngineStats {
  int64_t steps = 0;
  int64_t prompt_tokens_run = 0;  // prefill tokens run (recomputation after preemption included)
  int64_t decode_tokens_run = 0;
  int64_t prefix_tokens_reused = 0;  // prompt tokens whose KV came from the prefix cache
  int64_t prompt_tokens_admitted = 0;  // prompt tokens of the prefills those came from
  int64_t preemptions = 0;
  int64_t running = 0, waiting = 0;
  int64_t tokens_held = 0;  // KV positions the running sequences hold
  int64_t block_size = 0, block_bytes = 0;
  KvBlockPoolStats pool;
};

class Engine {
 public:
  // `model_dir` as load_model_folder reads it.
  static Result<std::unique_ptr<Engine>> load(const std::string& model_dir, const EngineOptions& options = {});
  static Result<std::unique_ptr<Engine>> create(GenaiConfig config, const EngineOptions& options = {});
  ~Engine();

  const GenaiConfig& config() const { return config_; }
  int64_t max_length() const { return max_length_; }
  int64_t weight_bytes() const { return runner_->weight_bytes(); }

  // Queues a request. Refused: an empty prompt, a token outside the
  // vocabulary, a prompt that leaves no room for a token within max_length or
  // the pool, max_new_tokens < 1, top_logprobs > kMaxTopLogprobs.
  Result<RequestId> add(EngineRequest request);
  // Ends a queued or running request at once (StopReason::kCancelled), its
  // blocks back in the pool; false when the id is unknown or finished.
  bool cancel(RequestId id);
  // The same, as StopReason::kError with `error` (a step that failed).
  bool fail(RequestId id, std::string error);
  // One model run; finished requests are then in take_finished().
  Status step();
  bool idle() const { return running_.empty() && waiting_.empty(); }
  std::vector<FinishedRequest> take_finished();
  EngineStats stats() const;

 private:
  struct Sequence;
  using Clock = std::chrono::steady_clock;

  Engine() = default;
  // Blocks so that `seq` holds positions [0, end); false when the pool has too few.
  bool reserve(Sequence& seq, int64_t end);
  void free_blocks(Sequence& seq);
  // Frees the newest running sequence other than `keep`'s elders and queues it for recomputation.
  void preempt(Sequence& seq);
  bool admit(Sequence& seq);
  void publish_full_blocks(Sequence& seq);
  void finish(std::unique_ptr<Sequence> seq, StopReason reason);
  bool end(RequestId id, StopReason reason, std::string error);
  // Samples `seq`'s next token from `logits`; true when the sequence goes on.
  bool choose(Sequence& seq, std::span<float> logits);

  GenaiConfig config_;
  EngineOptions options_;
  int64_t max_length_ = 0;
  std::unique_ptr<PagedRunner> runner_;
  std::unique_ptr<KvBlockPool> pool_;
  std::vector<std::unique_ptr<Sequence>> running_;  // admission order: the newest last
  std::deque<std::unique_ptr<Sequence>> waiting_;   // preempted sequences first, then arrival order
  std::vector<FinishedRequest> finished_;
  RequestId next_id_ = 1;
  EngineStats stats_;
  // choose()'s logprobs, for requests with top_logprobs.
  TokenLogprobs logprobs_;
};

}  // namespace ember::genai
