#pragma once
// The serving engine's model runner: the decoder rewritten to its paged form
// (make_paged_decoder), one KV block pool per layer for K and for V, and one
// model run per step over the new tokens of any set of sequences, flattened
// into a batch of one row. It binds the inputs and outputs and owns the KV
// memory (PagedKvCache); which blocks a sequence holds is the scheduler's
// business (KvBlockPool).
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/tensor.h"
#include "genai/decoder_io.h"
#include "genai/genai_config.h"
#include "genai/kv_block_pool.h"
#include "genai/kv_cache.h"
#include "runtime/session.h"

namespace ember::genai {

struct PagedRunnerOptions {
  int num_threads = 0;  // 0: genai_config's intra_op_num_threads, else Ember's default
  int64_t block_size = 16;
  int32_t num_blocks = 0;
  runtime::LoadProgress progress;
};

// One sequence's share of a step.
struct StepSequence {
  std::span<const int64_t> tokens;  // new tokens, after `past` cached ones
  int64_t past = 0;
  std::span<const BlockId> blocks;  // its block table; covers past + tokens.size() positions
  bool wants_logits = false;        // the logits of its last new token
};

class PagedRunner {
 public:
  static Result<std::unique_ptr<PagedRunner>> create(const GenaiConfig& config, const PagedRunnerOptions& options);

  PagedKvCache& cache() { return *cache_; }
  int64_t weight_bytes() const { return weight_bytes_; }
  int64_t vocab() const { return vocab_; }

  // One model run over the sequences' new tokens; logits(i) then holds the
  // logits of the i-th sequence that wants them, in batch order.
  Status run(std::span<const StepSequence> batch);
  std::span<float> logits(size_t i);

 private:
  PagedRunner() = default;

  std::unique_ptr<runtime::Session> session_;
  DecoderIo io_;
  int metadata_at_[4] = {-1, -1, -1, -1};  // query_start, past_lens, block_tables, logits_positions
  bool gathered_logits_ = false;
  int64_t weight_bytes_ = 0, vocab_ = 0;
  std::unique_ptr<PagedKvCache> cache_;

  std::vector<int64_t> ids_, positions_, mask_, logits_positions_;
  std::vector<int32_t> query_start_, past_lens_, block_tables_;
  std::vector<float> logits_;
  std::vector<int64_t> logits_rows_;  // row of logits_ for each sequence that wants logits
  Tensor ids_view_, positions_view_, mask_view_, logits_positions_view_, query_start_view_, past_lens_view_,
      block_tables_view_, logits_view_;
  std::vector<const Tensor*> inputs_;
  std::vector<Tensor*> outputs_;
};

}  // namespace ember::genai
