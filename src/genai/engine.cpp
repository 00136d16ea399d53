#include "genai/engine.h"

#include <algorithm>

#include "genai/logits_processors.h"
#include "genai/model_folder.h"

namespace ember::genai {

struct Engine::Sequence {
  RequestId id = 0;
  GenerationParams params;
  Sampler sampler;
  std::vector<int64_t> tokens;  // the prompt, then each generated token
  int64_t computed = 0;         // leading tokens whose K/V are in `blocks`
  std::vector<BlockId> blocks;
  int64_t published = 0;  // leading blocks published to the prefix cache
  uint64_t prefix_key = KvBlockPool::kRootKey;  // the key of those blocks' tokens
  bool admitted = false;
  bool done = false;
  GenerationResult result;
  int64_t preemptions = 0;
  Clock::time_point arrival, last_token;

  Sequence(EngineRequest request, RequestId rid, const std::vector<int64_t>& eos_token_ids)
      : id(rid), params(std::move(request.params)), sampler(params.sampling), tokens(std::move(request.prompt)) {
    sampler.chain().prepend(std::make_unique<BanTokens>(eos_token_ids, params.min_new_tokens));
    if (params.make_constraint) sampler.chain().prepend(params.make_constraint());
    result.stats.prompt_tokens = static_cast<int64_t>(tokens.size());
  }
  int64_t pending() const { return static_cast<int64_t>(tokens.size()) - computed; }
};

Engine::~Engine() = default;

Result<std::unique_ptr<Engine>> Engine::load(const std::string& model_dir, const EngineOptions& options) {
  EMBER_ASSIGN_OR_RETURN(GenaiConfig config, load_model_folder(model_dir, options.decoder_file));
  return create(std::move(config), options);
}

Result<std::unique_ptr<Engine>> Engine::create(GenaiConfig config, const EngineOptions& options) {
  std::unique_ptr<Engine> e(new Engine());
  e->config_ = std::move(config);
  e->options_ = options;
  e->max_length_ = options.max_length > 0 ? options.max_length : e->config_.search.max_length;
  if (e->max_length_ > e->config_.context_length) {
    return invalid_argument("max length {} exceeds the model's context_length {}", e->max_length_,
                            e->config_.context_length);
  }
  if (options.block_size < 1 || options.max_running < 1 || options.step_tokens < 1) {
    return invalid_argument("block_size {}, max_running {} and step_tokens {} must each be at least 1",
                            options.block_size, options.max_running, options.step_tokens);
  }
  const DecoderConfig& d = e->config_.decoder;
  const int64_t token_bytes = int64_t{2} * d.num_hidden_layers * d.num_key_value_heads * d.head_size;
  int64_t tokens = options.kv_tokens;
  if (tokens <= 0 && options.kv_bytes > 0) tokens = options.kv_bytes / std::max<int64_t>(token_bytes, 1);
  if (tokens <= 0) tokens = 4 * e->max_length_;
  const int64_t blocks = (tokens + options.block_size - 1) / options.block_size;
  if (blocks > INT32_MAX) return invalid_argument("a KV pool of {} blocks is more than the block ids hold", blocks);
  PagedRunnerOptions runner_options;
  runner_options.num_threads = options.num_threads;
  runner_options.block_size = options.block_size;
  runner_options.num_blocks = static_cast<int32_t>(blocks);
  runner_options.progress = options.progress;
  EMBER_ASSIGN_OR_RETURN(e->runner_, PagedRunner::create(e->config_, runner_options));
  e->pool_ = std::make_unique<KvBlockPool>(runner_options.num_blocks, options.block_size);
  e->stats_.block_size = options.block_size;
  e->stats_.block_bytes = e->runner_->cache().block_bytes();
  return e;
}

Result<RequestId> Engine::add(EngineRequest request) {
  const auto n = static_cast<int64_t>(request.prompt.size());
  if (n == 0) return invalid_argument("the prompt is empty");
  for (int64_t t : request.prompt) {
    if (t < 0 || t >= config_.vocab_size) {
      return invalid_argument("prompt token id {} is outside the vocabulary [0, {})", t, config_.vocab_size);
    }
  }
  if (n >= max_length_) {
    return invalid_argument("a prompt of {} tokens leaves no room in the context of {} tokens", n, max_length_);
  }
  const int64_t pool_tokens = int64_t{pool_->num_blocks()} * pool_->block_size();
  if (n >= pool_tokens) {
    return invalid_argument("a prompt of {} tokens leaves no room in the KV pool of {} tokens", n, pool_tokens);
  }
  if (request.params.max_new_tokens < 1) {
    return invalid_argument("max_new_tokens {} must be at least 1", request.params.max_new_tokens);
  }
  EMBER_RETURN_IF_ERROR(check_top_logprobs(request.params));
  if (request.params.drafter) return not_implemented("the serving engine does not decode speculatively");
  auto seq = std::make_unique<Sequence>(std::move(request), next_id_++, config_.eos_token_ids);
  seq->arrival = Clock::now();
  const RequestId id = seq->id;
  waiting_.push_back(std::move(seq));
  return id;
}

bool Engine::cancel(RequestId id) { return end(id, StopReason::kCancelled, {}); }

bool Engine::fail(RequestId id, std::string error) { return end(id, StopReason::kError, std::move(error)); }

bool Engine::end(RequestId id, StopReason reason, std::string error) {
  auto match = [id](const std::unique_ptr<Sequence>& s) { return s->id == id; };
  std::unique_ptr<Sequence> seq;
  if (auto it = std::find_if(running_.begin(), running_.end(), match); it != running_.end()) {
    seq = std::move(*it);
    running_.erase(it);
  } else if (auto w = std::find_if(waiting_.begin(), waiting_.end(), match); w != waiting_.end()) {
    seq = std::move(*w);
    waiting_.erase(w);
  } else {
    return false;
  }
  seq->result.error = std::move(error);
  finish(std::move(seq), reason);
  return true;
}

bool Engine::reserve(Sequence& seq, int64_t end) {
  const int64_t need = (end + pool_->block_size() - 1) / pool_->block_size();
  while (static_cast<int64_t>(seq.blocks.size()) < need) {
    const std::optional<BlockId> block = pool_->allocate();
    if (!block) return false;
    seq.blocks.push_back(*block);
  }
  return true;
}

void Engine::free_blocks(Sequence& seq) {
  for (BlockId b : seq.blocks) pool_->release(b);
  seq.blocks.clear();
}

void Engine::preempt(Sequence& seq) {
  free_blocks(seq);
  seq.computed = 0;
  seq.published = 0;
  seq.prefix_key = KvBlockPool::kRootKey;
  ++seq.preemptions;
  ++stats_.preemptions;
  auto it = std::find_if(running_.begin(), running_.end(), [&](const auto& s) { return s.get() == &seq; });
  waiting_.push_front(std::move(*it));
  running_.erase(it);
}

// Takes the cached blocks of the longest published prefix of the sequence's
// tokens. When they cover every token, the last one is recomputed (its logits
// choose the next token) in a private copy of the last block.
bool Engine::admit(Sequence& seq) {
  const int64_t bs = pool_->block_size();
  const auto n = static_cast<int64_t>(seq.tokens.size());
  if (options_.prefix_caching) {
    // The prefix key of the sequence's first `blocks` blocks.
    auto key_of = [&](int64_t blocks) {
      uint64_t key = KvBlockPool::kRootKey;
      for (int64_t b = 0; b < blocks; ++b) {
        key = KvBlockPool::prefix_key(
            key, std::span(seq.tokens).subspan(static_cast<size_t>(b * bs), static_cast<size_t>(bs)));
      }
      return key;
    };
    seq.blocks = pool_->match_prefix(seq.tokens, n / bs);
    const auto matched = static_cast<int64_t>(seq.blocks.size());
    seq.prefix_key = key_of(matched);
    seq.published = matched;
    seq.computed = matched * bs;
    if (seq.computed == n) {
      const BlockId last = seq.blocks.back();
      const std::optional<KvBlockPool::Writable> own = pool_->copy_on_write(last);
      if (!own) {
        free_blocks(seq);
        seq.computed = seq.published = 0;
        seq.prefix_key = KvBlockPool::kRootKey;
        return false;
      }
      if (own->copied) runner_->cache().copy_block(last, own->block);
      seq.blocks.back() = own->block;
      seq.computed = n - 1;
      seq.published = matched - 1;
      seq.prefix_key = key_of(matched - 1);
    }
  }
  if (!seq.admitted) {
    seq.admitted = true;
    seq.result.stats.reused_tokens = seq.computed;
    stats_.prefix_tokens_reused += seq.computed;
    stats_.prompt_tokens_admitted += n;
  }
  return true;
}

void Engine::publish_full_blocks(Sequence& seq) {
  if (!options_.prefix_caching) return;
  const int64_t bs = pool_->block_size();
  while ((seq.published + 1) * bs <= seq.computed) {
    const auto own = std::span(seq.tokens).subspan(static_cast<size_t>(seq.published * bs), static_cast<size_t>(bs));
    pool_->publish(seq.blocks[static_cast<size_t>(seq.published)], seq.prefix_key, own);
    seq.prefix_key = KvBlockPool::prefix_key(seq.prefix_key, own);
    ++seq.published;
  }
}

void Engine::finish(std::unique_ptr<Sequence> seq, StopReason reason) {
  free_blocks(*seq);
  seq->result.stop = reason;
  seq->result.stats.generated_tokens = static_cast<int64_t>(seq->result.tokens.size());
  finished_.push_back({seq->id, std::move(seq->result), seq->preemptions});
}

bool Engine::choose(Sequence& seq, std::span<float> logits) {
  GenerationResult& out = seq.result;
  const GenerationParams& params = seq.params;
  const int top_logprobs = params.on_logprobs ? params.top_logprobs : -1;
  const int64_t token = sample_with_logprobs(seq.sampler, logits, seq.tokens, top_logprobs, logprobs_);
  if (ends_on_failure(seq.sampler.chain(), out)) return false;
  const Clock::time_point now = Clock::now();
  if (out.tokens.empty()) {
    out.stats.first_token_s = std::chrono::duration<double>(now - seq.arrival).count();
  } else {
    out.stats.decode_s += std::chrono::duration<double>(now - seq.last_token).count();
    ++out.stats.decode_steps;
  }
  seq.last_token = now;
  out.tokens.push_back(token);
  seq.tokens.push_back(token);
  if (top_logprobs >= 0) params.on_logprobs(logprobs_);
  std::optional<StopReason> stop;
  if (params.on_token && !params.on_token(token)) {
    stop = StopReason::kCallback;
  } else if (params.stop_on_eos && config_.is_eos(token)) {
    stop = StopReason::kEos;
  } else if (static_cast<int>(out.tokens.size()) >= params.max_new_tokens) {
    stop = StopReason::kMaxNewTokens;
  } else if (static_cast<int64_t>(seq.tokens.size()) > max_length_) {
    stop = StopReason::kContextFull;
  }
  if (!stop) return true;
  out.stop = *stop;
  return false;
}

Status Engine::step() {
  struct Planned {
    Sequence* seq;
    int64_t chunk;
  };
  std::vector<Planned> plan;
  const auto decodes = static_cast<int64_t>(
      std::count_if(running_.begin(), running_.end(), [](const auto& s) { return s->pending() == 1; }));
  int64_t prefill_budget = std::max<int64_t>(0, options_.step_tokens - decodes);
  // Running sequences in admission order: each decodes one token or continues
  // its prompt. One that finds no block preempts the newest running sequence
  // (itself, when it is the newest); the only one left stops, its context full.
  for (size_t i = 0; i < running_.size(); ++i) {
    Sequence& seq = *running_[i];
    const int64_t chunk = seq.pending() == 1 ? 1 : std::min(seq.pending(), prefill_budget);
    if (chunk == 0) continue;
    bool placed = true;
    while (!reserve(seq, seq.computed + chunk)) {
      Sequence& victim = *running_.back();
      if (&victim == &seq) {
        placed = false;
        if (running_.size() == 1) {
          seq.done = true;
          seq.result.stop = StopReason::kContextFull;
        } else {
          preempt(seq);
        }
        break;
      }
      preempt(victim);
    }
    if (!placed) break;
    if (chunk > 1 || seq.pending() > 1) prefill_budget -= chunk;
    plan.push_back({&seq, chunk});
  }
  // Then waiting prompts, while the budget, the running limit and the pool allow.
  while (!waiting_.empty() && prefill_budget > 0 && static_cast<int64_t>(running_.size()) < options_.max_running) {
    Sequence& seq = *waiting_.front();
    if (!admit(seq)) break;
    const int64_t chunk = std::min(seq.pending(), prefill_budget);
    if (!reserve(seq, seq.computed + chunk)) {
      free_blocks(seq);
      seq.computed = seq.published = 0;
      seq.prefix_key = KvBlockPool::kRootKey;
      break;
    }
    prefill_budget -= chunk;
    plan.push_back({&seq, chunk});
    running_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
  }

  if (!plan.empty()) {
    std::vector<StepSequence> batch;
    batch.reserve(plan.size());
    for (const Planned& p : plan) {
      const auto begin = static_cast<size_t>(p.seq->computed);
      batch.push_back({std::span(p.seq->tokens).subspan(begin, static_cast<size_t>(p.chunk)), p.seq->computed,
                       p.seq->blocks, p.seq->computed + p.chunk == static_cast<int64_t>(p.seq->tokens.size())});
    }
    EMBER_RETURN_IF_ERROR(runner_->run(batch));
    ++stats_.steps;
    size_t with_logits = 0;
    for (size_t k = 0; k < plan.size(); ++k) {
      Sequence& seq = *plan[k].seq;
      const bool decode = plan[k].chunk == 1 && seq.pending() == 1 && !seq.result.tokens.empty();
      (decode ? stats_.decode_tokens_run : stats_.prompt_tokens_run) += plan[k].chunk;
      seq.computed += plan[k].chunk;
      publish_full_blocks(seq);
      if (batch[k].wants_logits && !choose(seq, runner_->logits(with_logits++))) seq.done = true;
    }
  }
  for (auto it = running_.begin(); it != running_.end();) {
    if ((*it)->done) {
      std::unique_ptr<Sequence> seq = std::move(*it);
      it = running_.erase(it);
      const StopReason reason = seq->result.stop;
      finish(std::move(seq), reason);
    } else {
      ++it;
    }
  }
  return Status::ok();
}

std::vector<FinishedRequest> Engine::take_finished() { return std::exchange(finished_, {}); }

EngineStats Engine::stats() const {
  EngineStats s = stats_;
  s.running = static_cast<int64_t>(running_.size());
  s.waiting = static_cast<int64_t>(waiting_.size());
  s.tokens_held = 0;
  for (const auto& seq : running_) s.tokens_held += seq->computed;
  s.pool = pool_->stats();
  return s;
}

}  // namespace ember::genai
