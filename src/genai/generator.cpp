#include "genai/generator.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cmath>
#include <optional>
#include <random>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "genai/decoder_io.h"
#include "genai/decoder_rewrites.h"
#include "genai/model_folder.h"
#include "genai/speculative.h"
#include "onnx/model_loader.h"

namespace ember::genai {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

bool has_op(const ir::Graph& graph, std::string_view op_type) {
  return std::any_of(graph.nodes.begin(), graph.nodes.end(), [&](const ir::Node& n) { return n.op_type == op_type; });
}

}  // namespace

GenerationParams params_from_search(const SearchConfig& search, int64_t prompt_tokens) {
  GenerationParams p;
  p.max_new_tokens = static_cast<int>(std::max<int64_t>(1, search.max_length - prompt_tokens));
  p.min_new_tokens = static_cast<int>(std::max<int64_t>(0, search.min_length - prompt_tokens));
  SamplingParams& s = p.sampling;
  s.greedy = !search.do_sample;
  s.temperature = search.temperature;
  s.top_k = search.top_k;
  s.top_p = search.top_p;
  s.repetition_penalty = search.repetition_penalty;
  s.seed = search.random_seed >= 0 ? static_cast<uint64_t>(search.random_seed) : std::random_device{}();
  return p;
}

Status check_top_logprobs(const GenerationParams& params) {
  if (params.top_logprobs > kMaxTopLogprobs) {
    return invalid_argument("top_logprobs {} is more than {}, the most alternatives a token lists",
                            params.top_logprobs, kMaxTopLogprobs);
  }
  return Status::ok();
}

const char* stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::kEos: return "eos";
    case StopReason::kMaxNewTokens: return "max_new_tokens";
    case StopReason::kCallback: return "callback";
    case StopReason::kCancelled: return "cancelled";
    case StopReason::kContextFull: return "context_full";
    case StopReason::kError: return "error";
  }
  return "unknown";
}

bool ends_on_failure(SamplerChain& chain, GenerationResult& out) {
  std::string failure = chain.failure();
  if (failure.empty()) return false;
  out.stop = StopReason::kError;
  out.error = std::move(failure);
  return true;
}

double GenerationStats::prefill_tokens_per_s() const {
  return prefill_s > 0 ? static_cast<double>(prompt_tokens - reused_tokens) / prefill_s : 0.0;
}

double GenerationStats::decode_tokens_per_s() const {
  return decode_s > 0 ? static_cast<double>(decode_steps) / decode_s : 0.0;
}

Result<std::unique_ptr<Generator>> Generator::load(const std::string& model_dir, const GeneratorOptions& options) {
  EMBER_ASSIGN_OR_RETURN(GenaiConfig config, load_model_folder(model_dir, options.decoder_file));
  return create(std::move(config), options);
}

Result<std::unique_ptr<Generator>> Generator::create(GenaiConfig config, const GeneratorOptions& options) {
  if (const auto& window = config.decoder.sliding_window; window && (window->slide_key_value_cache || window->slide_inputs)) {
    return not_implemented(
        "{}: genai_config.json: model.decoder.sliding_window slides the {} (a fixed-shape export for NPUs); Ember runs "
        "windowed layers on a growing cache (slide_key_value_cache and slide_inputs false)",
        config.dir, window->slide_inputs ? "inputs" : "key-value cache");
  }
  std::unique_ptr<Generator> g(new Generator());
  g->config_ = std::move(config);
  runtime::SessionOptions session_options;
  session_options.num_threads =
      options.num_threads > 0 ? options.num_threads : g->config_.decoder.intra_op_num_threads;
  session_options.progress = [&g, &options](int64_t done, int64_t total) {
    g->weight_bytes_ = total;
    if (options.progress) options.progress(done, total);
  };
  const std::string path = g->config_.decoder_path();
  EMBER_ASSIGN_OR_RETURN(onnx::LoadedModel model, onnx::load_model(path));
  ir::Graph& graph = *model.graph;
  if (g->config_.decoder.sliding_window) {
    const std::vector<int> missing = apply_sliding_window(graph, g->config_.decoder);
    if (!missing.empty()) {
      g->config_.warnings.push_back(fmt::format(
          "genai_config.json: model.decoder.sliding_window: layers {} have no GroupQueryAttention reading their "
          "past keys; their attention runs as the graph has it",
          fmt::join(missing, ", ")));
    }
  }
  g->length_switches_ = length_switches(graph);
  g->gathered_logits_ = restrict_lm_head(graph, g->config_.decoder.logits, LogitsRows::kGathered);
  if (g->gathered_logits_) {
    EMBER_RETURN_IF_ERROR(graph.rebuild_links());
    EMBER_RETURN_IF_ERROR(graph.topological_sort());
  }
  auto session = runtime::Session::create(std::move(model.graph), session_options);
  if (!session.is_ok()) return session.status().with_context(path + ": ");
  g->session_ = std::move(*session);
  g->capacity_ = options.max_length > 0 ? options.max_length : g->config_.search.max_length;
  g->max_batch_ = std::max(1, options.max_batch);
  g->prefill_chunk_ = options.prefill_chunk;
  if (g->capacity_ > g->config_.context_length) {
    return invalid_argument("max length {} exceeds the model's context_length {}", g->capacity_,
                            g->config_.context_length);
  }
  g->vocab_ = g->config_.vocab_size;
  g->kv_heads_ = g->config_.decoder.num_key_value_heads;
  g->head_size_ = g->config_.decoder.head_size;
  // Only GroupQueryAttention writes present into a max-length past in place;
  // an export that concatenates past and new K/V needs two buffers whatever the flag says.
  g->shared_ = g->config_.search.past_present_share_buffer && has_op(g->session_->graph(), "GroupQueryAttention");
  EMBER_RETURN_IF_ERROR(g->bind_io());
  g->allocate_cache();
  return g;
}

int64_t Generator::kv_cache_bytes() const { return cache_->bytes(); }

Status Generator::bind_io() {
  constexpr std::string_view kPositions[] = {kLogitsPositionsInput};
  EMBER_ASSIGN_OR_RETURN(io_, bind_decoder_io(config_, *session_, std::span(kPositions, gathered_logits_ ? 1 : 0)));
  return Status::ok();
}

void Generator::allocate_cache() {
  const size_t n = io_.past.size();
  const KvShape shape{static_cast<int64_t>(n), kv_heads_, head_size_, io_.kv_dtype};
  if (shared_) {
    auto shared = std::make_unique<SharedBufferKvCache>(shape, max_batch_, capacity_);
    batched_cache_ = shared.get();
    cache_ = std::move(shared);
  } else {
    cache_ = std::make_unique<DoubleBufferKvCache>(shape, capacity_);
  }
  ids_ = Tensor::allocate(DType::kI64, {capacity_});
  positions_ = Tensor::allocate(DType::kI64, {capacity_});
  mask_ = Tensor::allocate(DType::kI64, {capacity_});
  std::fill_n(mask_.data_as<int64_t>(), capacity_, int64_t{1});
  if (shared_ && max_batch_ > 1) batch_mask_ = Tensor::allocate(DType::kI64, {max_batch_ * capacity_});
  logits_positions_ = Tensor::allocate(DType::kI64, {capacity_});
  inputs_.assign(session_->inputs().size(), nullptr);
  if (gathered_logits_) {
    inputs_[static_cast<size_t>(find_io(session_->inputs(), kLogitsPositionsInput))] = &logits_positions_view_;
  }
  outputs_.assign(session_->outputs().size(), nullptr);
  inputs_[static_cast<size_t>(io_.input_ids)] = &ids_view_;
  if (io_.attention_mask >= 0) inputs_[static_cast<size_t>(io_.attention_mask)] = &mask_view_;
  if (io_.position_ids >= 0) inputs_[static_cast<size_t>(io_.position_ids)] = &positions_view_;
  outputs_[static_cast<size_t>(io_.logits)] = &logits_view_;
  for (size_t i = 0; i < n; ++i) {
    inputs_[static_cast<size_t>(io_.past[i])] = cache_->past(i);
    outputs_[static_cast<size_t>(io_.present[i])] = cache_->present(i);
  }
}

Status Generator::append(std::span<const int64_t> tokens, int64_t logits_rows) {
  const auto s = static_cast<int64_t>(tokens.size());
  const auto past = static_cast<int64_t>(tokens_.size());
  if (s == 0) return invalid_argument("no tokens to run");
  const int64_t chunk = prefill_chunk_ > 0 ? prefill_chunk_ : s;
  const int64_t last_chunk = s - (s - 1) / chunk * chunk;
  if (logits_rows < 1 || logits_rows > last_chunk) {
    return invalid_argument("logits of {} positions asked of a run of {} tokens (in chunks of {})", logits_rows, s,
                            chunk);
  }
  if (past + s > capacity_) {
    return invalid_argument("{} cached + {} new tokens exceed the context of {} tokens", past, s, capacity_);
  }
  for (int64_t t : tokens) {
    if (t < 0 || t >= vocab_) return invalid_argument("token id {} is outside the vocabulary [0, {})", t, vocab_);
  }
  for (int64_t begin = 0; begin < s; begin += chunk) {
    const int64_t n = std::min(chunk, s - begin);
    const Status ran = run_tokens(tokens.subspan(static_cast<size_t>(begin), static_cast<size_t>(n)),
                                  begin + n == s ? logits_rows : 1);
    if (!ran.is_ok()) {
      // Keep the promise that a failed append leaves the cache as it was.
      EMBER_RETURN_IF_ERROR(truncate(past));
      return ran;
    }
  }
  return Status::ok();
}

Status Generator::run_tokens(std::span<const int64_t> tokens, int64_t logits_rows) {
  const auto s = static_cast<int64_t>(tokens.size());
  const auto past = static_cast<int64_t>(tokens_.size());
  for (int64_t i = 0; i < s; ++i) {
    ids_.data_as<int64_t>()[i] = tokens[static_cast<size_t>(i)];
    positions_.data_as<int64_t>()[i] = past + i;
  }
  ids_view_ = Tensor(DType::kI64, {1, s}, ids_.data());
  positions_view_ = Tensor(DType::kI64, {1, s}, positions_.data());
  mask_view_ = Tensor(DType::kI64, {1, past + s}, mask_.data());
  for (int64_t i = 0; i < logits_rows; ++i) logits_positions_.data_as<int64_t>()[i] = s - logits_rows + i;
  logits_positions_view_ = Tensor(DType::kI64, {logits_rows}, logits_positions_.data());
  const int64_t rows = gathered_logits_ ? logits_rows : s;
  if (logits_.numel() < rows * vocab_) logits_ = Tensor::allocate_uninitialized(DType::kF32, {rows * vocab_});
  logits_view_ = Tensor(DType::kF32, {1, rows, vocab_}, logits_.data());
  cache_->bind(row_, past, s);
  EMBER_RETURN_IF_ERROR(session_->run_bound(inputs_, outputs_));
  cache_->commit();
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  last_logits_rows_ = logits_rows;
  logits_first_row_ = rows - logits_rows;
  return Status::ok();
}

Status Generator::decode_rows(std::span<const int64_t> tokens, std::span<const int64_t> past) {
  const auto b = static_cast<int64_t>(tokens.size());
  const int64_t total = *std::max_element(past.begin(), past.end()) + 1;
  if (total > capacity_) return invalid_argument("a row of {} tokens exceeds the context of {}", total, capacity_);
  int64_t* mask = batch_mask_.data_as<int64_t>();
  for (int64_t r = 0; r < b; ++r) {
    ids_.data_as<int64_t>()[r] = tokens[static_cast<size_t>(r)];
    positions_.data_as<int64_t>()[r] = past[static_cast<size_t>(r)];
    for (int64_t j = 0; j < total; ++j) mask[r * total + j] = j <= past[static_cast<size_t>(r)] ? 1 : 0;
  }
  ids_view_ = Tensor(DType::kI64, {b, 1}, ids_.data());
  positions_view_ = Tensor(DType::kI64, {b, 1}, positions_.data());
  mask_view_ = Tensor(DType::kI64, {b, total}, mask);
  if (logits_.numel() < b * vocab_) logits_ = Tensor::allocate_uninitialized(DType::kF32, {b * vocab_});
  logits_view_ = Tensor(DType::kF32, {b, 1, vocab_}, logits_.data());
  logits_positions_.data_as<int64_t>()[0] = 0;
  logits_positions_view_ = Tensor(DType::kI64, {1}, logits_positions_.data());
  batched_cache_->bind_rows(b);
  last_logits_rows_ = 0;
  return session_->run_bound(inputs_, outputs_);
}

Result<std::vector<GenerationResult>> Generator::generate_batch(std::span<const std::vector<int64_t>> prompts,
                                                                const GenerationParams& params) {
  const auto rows = static_cast<int64_t>(prompts.size());
  if (!shared_) {
    return not_implemented("generate_batch: batched decoding needs the shared-buffer KV cache "
                           "(GroupQueryAttention with past_present_share_buffer)");
  }
  if (rows < 1 || rows > max_batch_) {
    return invalid_argument("generate_batch: {} prompts; this generator runs 1 to {} rows (max_batch)", rows,
                            max_batch_);
  }
  if (params.max_new_tokens < 1) {
    return invalid_argument("generate_batch: max_new_tokens {} must be at least 1", params.max_new_tokens);
  }
  if (params.top_logprobs >= 0) {
    return not_implemented("generate_batch: top_logprobs {}: log-probabilities come from generate() or the Engine",
                           params.top_logprobs);
  }
  if (params.drafter) return not_implemented("generate_batch: speculative decoding runs in generate() only");
  std::vector<GenerationResult> results(static_cast<size_t>(rows));
  std::vector<Sampler> samplers;
  std::vector<std::vector<int64_t>> history(prompts.begin(), prompts.end());
  std::vector<int64_t> past(static_cast<size_t>(rows)), next(static_cast<size_t>(rows));
  std::vector<bool> active(static_cast<size_t>(rows), true);
  // Chooses row r's next token from `logits`; false when the row is finished.
  auto choose = [&](size_t r, std::span<float> logits) {
    GenerationResult& out = results[r];
    next[r] = samplers[r].sample(logits, history[r]);
    if (ends_on_failure(samplers[r].chain(), out)) return false;
    out.tokens.push_back(next[r]);
    history[r].push_back(next[r]);
    out.stats.generated_tokens = static_cast<int64_t>(out.tokens.size());
    if (params.stop_on_eos && config_.is_eos(next[r])) {
      out.stop = StopReason::kEos;
    } else if (static_cast<int>(out.tokens.size()) >= params.max_new_tokens) {
      out.stop = StopReason::kMaxNewTokens;
    } else if (past[r] + 1 > capacity_) {
      out.stop = StopReason::kContextFull;
    } else {
      return true;
    }
    return false;
  };
  tokens_.clear();
  for (int64_t r = 0; r < rows; ++r) {
    const auto& prompt = prompts[static_cast<size_t>(r)];
    if (prompt.empty() || static_cast<int64_t>(prompt.size()) >= capacity_) {
      tokens_.clear();
      row_ = 0;
      return invalid_argument("generate_batch: prompt {} has {} tokens; the context holds {}", r, prompt.size(),
                              capacity_);
    }
    SamplingParams sampling = params.sampling;
    sampling.seed += static_cast<uint64_t>(r);
    samplers.emplace_back(sampling);
    samplers.back().chain().prepend(std::make_unique<BanTokens>(config_.eos_token_ids, params.min_new_tokens));
    if (params.make_constraint) samplers.back().chain().prepend(params.make_constraint());
    row_ = r;
    tokens_.clear();
    const auto start = Clock::now();
    const Status prefilled = append(prompt);
    row_ = 0;
    tokens_.clear();
    EMBER_RETURN_IF_ERROR(prefilled);
    GenerationStats& stats = results[static_cast<size_t>(r)].stats;
    stats.prompt_tokens = static_cast<int64_t>(prompt.size());
    stats.prefill_s = seconds_since(start);
    past[static_cast<size_t>(r)] = stats.prompt_tokens;
    active[static_cast<size_t>(r)] = choose(static_cast<size_t>(r), last_logits());
    stats.first_token_s = seconds_since(start);
  }
  std::vector<int64_t> at(static_cast<size_t>(rows));
  while (std::find(active.begin(), active.end(), true) != active.end()) {
    const auto start = Clock::now();
    // A finished row is fed again at its last cached position, which it never reads again.
    for (size_t r = 0; r < at.size(); ++r) at[r] = active[r] ? past[r] : past[r] - 1;
    EMBER_RETURN_IF_ERROR(decode_rows(next, at));
    const double step = seconds_since(start);
    for (size_t r = 0; r < active.size(); ++r) {
      if (!active[r]) continue;
      results[r].stats.decode_s += step;
      ++results[r].stats.decode_steps;
      ++past[r];
      std::span<float> logits(logits_.data_as<float>() + static_cast<int64_t>(r) * vocab_, static_cast<size_t>(vocab_));
      active[r] = choose(r, logits);
    }
  }
  return results;
}

int64_t Generator::decode_run_limit() const {
  const auto past = static_cast<int64_t>(tokens_.size());
  int64_t limit = std::max<int64_t>(1, capacity_ - past);
  for (int64_t at : length_switches_) {
    if (past + 1 <= at) limit = std::min(limit, at - past);
  }
  return limit;
}

Status Generator::truncate(int64_t length) {
  const auto cached = static_cast<int64_t>(tokens_.size());
  if (length < 0 || length > cached) return invalid_argument("cannot keep {} of {} cached tokens", length, cached);
  cache_->truncate(cached, length);
  tokens_.resize(static_cast<size_t>(length));
  return Status::ok();
}

std::span<float> Generator::last_logits() {
  if (last_logits_rows_ == 0) return {};
  return logits(last_logits_rows_ - 1);
}

std::span<float> Generator::logits(int64_t i) {
  assert(i >= 0 && i < last_logits_rows_);
  return {logits_.data_as<float>() + (logits_first_row_ + i) * vocab_, static_cast<size_t>(vocab_)};
}

Result<GenerationResult> Generator::generate(std::span<const int64_t> prompt, const GenerationParams& params) {
  const auto n = static_cast<int64_t>(prompt.size());
  if (n == 0) return invalid_argument("generate: the prompt is empty");
  if (params.max_new_tokens < 1) {
    return invalid_argument("generate: max_new_tokens {} must be at least 1", params.max_new_tokens);
  }
  if (Status checked = check_top_logprobs(params); !checked.is_ok()) return checked.with_context("generate: ");
  if (n >= capacity_) {
    return invalid_argument("generate: a prompt of {} tokens leaves no room in the context of {} tokens", n,
                            capacity_);
  }
  // Keep the shared prefix, but rerun at least the last prompt token: its logits choose the first new token.
  const int64_t common =
      std::mismatch(tokens_.begin(), tokens_.end(), prompt.begin(), prompt.end()).first - tokens_.begin();
  EMBER_RETURN_IF_ERROR(truncate(std::min<int64_t>(common, n - 1)));

  GenerationResult result;
  GenerationStats& stats = result.stats;
  stats.prompt_tokens = n;
  stats.reused_tokens = static_cast<int64_t>(tokens_.size());
  Sampler sampler(params.sampling);
  sampler.chain().prepend(std::make_unique<BanTokens>(config_.eos_token_ids, params.min_new_tokens));
  if (params.make_constraint) sampler.chain().prepend(params.make_constraint());
  std::vector<int64_t> history(prompt.begin(), prompt.end());
  history.reserve(history.size() + static_cast<size_t>(std::max(params.max_new_tokens, 0)));

  const auto start = Clock::now();
  EMBER_RETURN_IF_ERROR(append(prompt.subspan(tokens_.size())));
  stats.prefill_s = seconds_since(start);
  Clock::time_point step_start = start;
  const int top_logprobs = params.on_logprobs ? params.top_logprobs : -1;
  TokenLogprobs logprobs;
  Drafter* drafter = params.num_draft_tokens > 0 ? params.drafter : nullptr;
  // The last run's drafts; `row` is the logits row the next token is chosen
  // from, and the cache holds `verified` tokens of the history (the rest of
  // it, drafts not yet chosen, is dropped before the next run).
  std::vector<int64_t> drafts, run;
  size_t row = 0;
  auto verified = static_cast<int64_t>(tokens_.size());
  while (true) {
    const int64_t token = sample_with_logprobs(sampler, logits(static_cast<int64_t>(row)), history, top_logprobs, logprobs);
    if (ends_on_failure(sampler.chain(), result)) {
      EMBER_RETURN_IF_ERROR(truncate(verified));
      break;
    }
    result.tokens.push_back(token);
    history.push_back(token);
    if (result.tokens.size() == 1) {
      stats.first_token_s = seconds_since(start);
    } else {
      stats.decode_s += seconds_since(step_start);
      ++stats.decode_steps;
    }
    if (top_logprobs >= 0) params.on_logprobs(logprobs);
    const bool chose_draft = row < drafts.size() && token == drafts[row];
    if (chose_draft) ++stats.accepted_drafts;
    std::optional<StopReason> stop;
    if (params.on_token && !params.on_token(token)) {
      stop = StopReason::kCallback;
    } else if (params.stop_on_eos && config_.is_eos(token)) {
      stop = StopReason::kEos;
    } else if (static_cast<int>(result.tokens.size()) >= params.max_new_tokens) {
      stop = StopReason::kMaxNewTokens;
    } else if (chose_draft) {
      // Its KV is in the cache and the next row's logits follow it.
      ++verified;
      ++row;
      step_start = Clock::now();
      continue;
    } else if (verified + 1 > capacity_) {
      stop = StopReason::kContextFull;
    }
    if (stop) {
      EMBER_RETURN_IF_ERROR(truncate(verified));
      result.stop = *stop;
      break;
    }
    step_start = Clock::now();
    EMBER_RETURN_IF_ERROR(truncate(verified));
    // Drafts only where their tokens could be kept: the context, the tokens
    // still allowed, and one model run (a prefill chunk).
    int64_t k = drafter ? params.num_draft_tokens : 0;
    k = std::min({k, decode_run_limit() - 1,
                  static_cast<int64_t>(params.max_new_tokens) - static_cast<int64_t>(result.tokens.size()) - 1});
    if (prefill_chunk_ > 0) k = std::min(k, prefill_chunk_ - 1);
    drafts.clear();
    if (k > 0) EMBER_RETURN_IF_ERROR(drafter->propose(history, static_cast<int>(k), drafts));
    drafts.resize(std::min(drafts.size(), static_cast<size_t>(std::max<int64_t>(k, 0))));
    run.assign(1, token);
    run.insert(run.end(), drafts.begin(), drafts.end());
    EMBER_RETURN_IF_ERROR(append(run, static_cast<int64_t>(run.size())));
    ++stats.decode_runs;
    stats.drafted_tokens += static_cast<int64_t>(drafts.size());
    ++verified;
    row = 0;
  }
  stats.generated_tokens = static_cast<int64_t>(result.tokens.size());
  return result;
}

}  // namespace ember::genai
