#include "genai/beam_search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>

#include "genai/generator.h"

namespace ember::genai {
namespace {

// onnxruntime-genai's initial score of beams 1..n-1: they hold the same
// prompt as beam 0, so only beam 0's continuations can be chosen first.
constexpr float kNotYetABeam = -1e9f;

// In float, in the order onnxruntime-genai's LogSoftMax rounds (x - max, a
// running float sum of exp, minus its log), so sums of log-probabilities
// agree to the last bit where the logits do.
void log_softmax(std::span<float> row) {
  const float max = *std::max_element(row.begin(), row.end());
  float sum = 0.0f;
  for (float& x : row) {
    x -= max;
    sum += std::exp(x);
  }
  const float log_sum = std::log(sum);
  for (float& x : row) x -= log_sum;
}

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

Status check_beam_params(const BeamParams& params) {
  if (params.num_beams < 2) {
    return invalid_argument("num_beams {}: beam search needs at least 2 beams (1 is greedy search)", params.num_beams);
  }
  if (params.num_return_sequences < 1 || params.num_return_sequences > params.num_beams) {
    return invalid_argument("num_return_sequences {} must be 1 to num_beams ({})", params.num_return_sequences,
                            params.num_beams);
  }
  if (!std::isfinite(params.length_penalty)) {
    return invalid_argument("length_penalty {} is not a finite number", params.length_penalty);
  }
  return Status::ok();
}

BeamSearch::BeamSearch(const BeamParams& params, int64_t prompt_length, std::vector<int64_t> eos)
    : params_(params), prompt_length_(prompt_length), eos_(std::move(eos)) {
  const auto n = static_cast<size_t>(params.num_beams);
  scores_.assign(n, kNotYetABeam);
  scores_[0] = 0.0f;
  beams_.resize(n);
  top_.reserve(2 * n);
}

bool BeamSearch::is_eos(int64_t token) const { return std::find(eos_.begin(), eos_.end(), token) != eos_.end(); }

void BeamSearch::add_hypothesis(std::vector<int64_t> tokens, int64_t eos, float sum_logprobs, int64_t length) {
  const float score = sum_logprobs / std::pow(static_cast<float>(length), params_.length_penalty);
  const auto n = static_cast<size_t>(params_.num_beams);
  if (hypotheses_.size() == n) {
    if (score <= hypotheses_.back().score) return;
    hypotheses_.pop_back();
  }
  // After every hypothesis of an equal score: the earlier one stays ahead.
  auto at = std::find_if(hypotheses_.begin(), hypotheses_.end(), [&](const BeamHypothesis& h) { return score > h.score; });
  hypotheses_.insert(at, BeamHypothesis{std::move(tokens), eos, score});
}

void BeamSearch::step(std::span<const std::span<float>> logits) {
  const auto n = static_cast<size_t>(params_.num_beams);
  const size_t top_k = 2 * n;
  const auto vocab = static_cast<int64_t>(logits.front().size());
  // Best first; equal scores by the lower beam x vocabulary + token.
  auto better = [](const Candidate& a, const Candidate& b) {
    return a.score > b.score || (a.score == b.score && a.index < b.index);
  };
  top_.clear();
  for (size_t b = 0; b < n; ++b) {
    std::span<float> row = logits[b];
    log_softmax(row);
    for (int64_t t = 0; t < vocab; ++t) {
      const Candidate c{row[static_cast<size_t>(t)] + scores_[b], static_cast<int64_t>(b) * vocab + t};
      if (top_.size() < top_k) {
        top_.push_back(c);
        std::push_heap(top_.begin(), top_.end(), better);  // the front is the worst kept
      } else if (better(c, top_.front())) {
        std::pop_heap(top_.begin(), top_.end(), better);
        top_.back() = c;
        std::push_heap(top_.begin(), top_.end(), better);
      }
    }
  }
  std::sort(top_.begin(), top_.end(), better);

  const int64_t length = this->length();
  parents_.clear();
  next_tokens_.clear();
  next_scores_.clear();
  for (size_t j = 0; j < top_.size() && parents_.size() < n; ++j) {
    const auto beam = static_cast<int32_t>(top_[j].index / vocab);
    const int64_t token = top_[j].index % vocab;
    if (is_eos(token)) {
      // An EOS ranked below the first num_beams closes nothing.
      if (j < n) add_hypothesis(beams_[static_cast<size_t>(beam)], token, top_[j].score, length);
      continue;
    }
    parents_.push_back(beam);
    next_tokens_.push_back(token);
    next_scores_.push_back(top_[j].score);
  }
  if (parents_.size() < n) {
    // A vocabulary of fewer than 2 x num_beams tokens, mostly EOS: no beams left to extend.
    done_ = true;
    return;
  }
  if (hypotheses_.size() == n) {
    const float best = top_.front().score / std::pow(static_cast<float>(length), params_.length_penalty);
    if (params_.early_stopping || !(hypotheses_.back().score < best)) done_ = true;
  }
  std::vector<std::vector<int64_t>> next(n);
  for (size_t i = 0; i < n; ++i) {
    next[i].reserve(beams_[static_cast<size_t>(parents_[i])].size() + 1);
    next[i] = beams_[static_cast<size_t>(parents_[i])];
    next[i].push_back(next_tokens_[i]);
  }
  beams_ = std::move(next);
  scores_ = next_scores_;
  ++generated_;
}

std::vector<BeamHypothesis> BeamSearch::finish() {
  if (!done_) {
    for (size_t b = 0; b < beams_.size(); ++b) add_hypothesis(beams_[b], -1, scores_[b], length());
    done_ = true;
  }
  std::vector<BeamHypothesis> best = hypotheses_;
  best.resize(std::min(best.size(), static_cast<size_t>(params_.num_return_sequences)));
  return best;
}

namespace {

// Beam search scores tokens by log-probability alone; what would change that is refused, not ignored.
Status check_beam_search_params(const GenerationParams& params) {
  const SamplingParams& s = params.sampling;
  const SamplingParams plain;
  if (!s.greedy && s.temperature > 0 && s.top_k != 1) {
    return not_implemented("beam search scores every token by its log-probability; sampling (temperature, top-k, "
                           "top-p, min-p) does not apply");
  }
  if (s.repetition_penalty != plain.repetition_penalty || s.presence_penalty != plain.presence_penalty ||
      s.frequency_penalty != plain.frequency_penalty) {
    return not_implemented("beam search runs without repetition, presence or frequency penalties");
  }
  if (params.drafter && params.num_draft_tokens > 0) return not_implemented("beam search runs without speculative decoding");
  if (params.make_constraint) return not_implemented("beam search runs without output constraints");
  if (params.top_logprobs >= 0) return not_implemented("beam search reports no log-probabilities (top_logprobs)");
  if (params.max_new_tokens < 1) return invalid_argument("max_new_tokens {} must be at least 1", params.max_new_tokens);
  return Status::ok();
}

}  // namespace

Result<std::vector<GenerationResult>> Generator::beam_search(std::span<const int64_t> prompt,
                                                             const GenerationParams& params, const BeamParams& beam) {
  EMBER_RETURN_IF_ERROR(check_beam_params(beam).with_context("beam_search: "));
  EMBER_RETURN_IF_ERROR(check_beam_search_params(params).with_context("beam_search: "));
  if (!shared_) {
    return not_implemented("beam_search: beams share and reorder rows of the shared-buffer KV cache "
                           "(GroupQueryAttention with past_present_share_buffer); this model's attention has none");
  }
  const auto n = static_cast<size_t>(beam.num_beams);
  if (beam.num_beams > max_batch_) {
    return invalid_argument("beam_search: {} beams need as many cache rows; this generator has {} (max_batch)",
                            beam.num_beams, max_batch_);
  }
  const auto prompt_length = static_cast<int64_t>(prompt.size());
  if (prompt_length == 0 || prompt_length >= capacity_) {
    return invalid_argument("beam_search: a prompt of {} tokens; the context holds {}", prompt_length, capacity_);
  }
  for (int64_t t : prompt) {
    if (t < 0 || t >= vocab_) return invalid_argument("beam_search: token id {} is outside the vocabulary [0, {})", t, vocab_);
  }

  GenerationStats stats;
  stats.prompt_tokens = prompt_length;
  tokens_.clear();
  row_ = 0;
  const auto start = Clock::now();
  const Status prefilled = append(prompt);
  tokens_.clear();
  EMBER_RETURN_IF_ERROR(prefilled);
  stats.prefill_s = seconds_since(start);

  BeamSearch search(beam, prompt_length, params.stop_on_eos ? config_.eos_token_ids : std::vector<int64_t>{});
  // Each beam's cache row. Every beam starts as the prompt in row 0; after a
  // step each parent's row goes to its first child in place, and only its
  // other children are copied, into rows no parent holds.
  std::vector<int64_t> row_of(n, 0), next_row_of(n), row_tokens(n), past(n);
  std::vector<char> holds_parent(n), claimed(n);
  // The prompt's logits, once per beam: step() overwrites its input.
  std::vector<float> first(n * static_cast<size_t>(vocab_));
  for (size_t b = 0; b < n; ++b) std::copy(last_logits().begin(), last_logits().end(), first.begin() + static_cast<ptrdiff_t>(b) * vocab_);
  std::vector<std::span<float>> beam_logits(n);
  for (size_t b = 0; b < n; ++b) beam_logits[b] = {first.data() + static_cast<int64_t>(b) * vocab_, static_cast<size_t>(vocab_)};
  const int64_t max_length = prompt_length + params.max_new_tokens;
  StopReason stop = StopReason::kMaxNewTokens;
  while (true) {
    const auto step_start = Clock::now();
    if (search.length() - prompt_length < params.min_new_tokens) {
      for (std::span<float> row : beam_logits) {
        for (int64_t eos : config_.eos_token_ids) {
          if (eos >= 0 && eos < vocab_) row[static_cast<size_t>(eos)] = -std::numeric_limits<float>::infinity();
        }
      }
    }
    search.step(beam_logits);
    if (search.length() == prompt_length + 1) stats.first_token_s = seconds_since(start);
    if (search.done()) {
      stop = StopReason::kEos;
      break;
    }
    if (search.length() >= max_length) break;
    if (search.length() > capacity_) {
      stop = StopReason::kContextFull;
      break;
    }
    // The new tokens' KV is not cached yet: rows hold length() - 1 positions.
    const int64_t cached = search.length() - 1;
    std::fill(holds_parent.begin(), holds_parent.end(), 0);
    std::fill(claimed.begin(), claimed.end(), 0);
    for (int32_t p : search.parents()) holds_parent[static_cast<size_t>(row_of[static_cast<size_t>(p)])] = 1;
    size_t free_row = 0;
    for (size_t i = 0; i < n; ++i) {
      const int64_t from = row_of[static_cast<size_t>(search.parents()[i])];
      if (!claimed[static_cast<size_t>(from)]) {
        next_row_of[i] = from;
      } else {
        while (holds_parent[free_row] || claimed[free_row]) ++free_row;
        batched_cache_->copy_row(from, static_cast<int64_t>(free_row), cached);
        next_row_of[i] = static_cast<int64_t>(free_row);
      }
      claimed[static_cast<size_t>(next_row_of[i])] = 1;
      row_tokens[static_cast<size_t>(next_row_of[i])] = search.tokens()[i];
    }
    row_of.swap(next_row_of);
    std::fill(past.begin(), past.end(), cached);
    EMBER_RETURN_IF_ERROR(decode_rows(row_tokens, past));
    for (size_t b = 0; b < n; ++b) {
      beam_logits[b] = {logits_.data_as<float>() + row_of[b] * vocab_, static_cast<size_t>(vocab_)};
    }
    ++stats.decode_runs;
    ++stats.decode_steps;
    stats.decode_s += seconds_since(step_start);
  }
  std::vector<GenerationResult> results;
  for (BeamHypothesis& h : search.finish()) {
    GenerationResult& r = results.emplace_back();
    r.tokens = std::move(h.tokens);
    if (h.eos >= 0) r.tokens.push_back(h.eos);
    r.stop = h.eos >= 0 ? StopReason::kEos : stop == StopReason::kEos ? StopReason::kMaxNewTokens : stop;
    r.score = h.score;
    r.stats = stats;
    r.stats.generated_tokens = static_cast<int64_t>(r.tokens.size());
  }
  return results;
}

}  // namespace ember::genai
