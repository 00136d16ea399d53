#include "genai/paged_runner.h"

#include <algorithm>

#include "genai/decoder_rewrites.h"
#include "onnx/model_loader.h"

namespace ember::genai {
namespace {

enum Metadata { kQueryStart, kPastLens, kBlockTables, kLogitsPositions };
constexpr std::string_view kMetadataInputs[] = {kQueryStartInput, kPastLensInput, kBlockTablesInput,
                                                 kLogitsPositionsInput};

template <typename T>
Tensor view(DType dtype, Shape shape, std::vector<T>& data) {
  return Tensor(dtype, std::move(shape), data.data());
}

}  // namespace

Result<std::unique_ptr<PagedRunner>> PagedRunner::create(const GenaiConfig& config, const PagedRunnerOptions& options) {
  const DecoderConfig& d = config.decoder;
  if (options.block_size < 1 || options.num_blocks < 1) {
    return invalid_argument("a KV pool of {} blocks of {} tokens: both must be at least 1", options.num_blocks,
                            options.block_size);
  }
  if (const auto& window = d.sliding_window; window && (window->slide_key_value_cache || window->slide_inputs)) {
    return not_implemented("{}: genai_config.json: model.decoder.sliding_window slides its inputs or cache (a "
                           "fixed-shape export for NPUs)",
                           config.dir);
  }
  std::unique_ptr<PagedRunner> r(new PagedRunner());
  const std::string path = config.decoder_path();
  EMBER_ASSIGN_OR_RETURN(onnx::LoadedModel model, onnx::load_model(path));
  ir::Graph& graph = *model.graph;
  if (d.sliding_window) apply_sliding_window(graph, d);
  if (Status paged = make_paged_decoder(graph, d); !paged.is_ok()) return paged.with_context(path + ": ");
  r->gathered_logits_ = restrict_lm_head(graph, d.logits, LogitsRows::kGathered);
  EMBER_RETURN_IF_ERROR(graph.rebuild_links());
  EMBER_RETURN_IF_ERROR(graph.topological_sort());

  runtime::SessionOptions session_options;
  session_options.num_threads = options.num_threads > 0 ? options.num_threads : d.intra_op_num_threads;
  session_options.progress = [&r, &options](int64_t done, int64_t total) {
    r->weight_bytes_ = total;
    if (options.progress) options.progress(done, total);
  };
  auto session = runtime::Session::create(std::move(model.graph), session_options);
  if (!session.is_ok()) return session.status().with_context(path + ": ");
  r->session_ = std::move(*session);

  const int used = r->gathered_logits_ ? 4 : 3;
  EMBER_ASSIGN_OR_RETURN(r->io_, bind_decoder_io(config, *r->session_, std::span(kMetadataInputs, used)));
  const auto& inputs = r->session_->inputs();
  for (int m = 0; m < used; ++m) r->metadata_at_[m] = find_io(inputs, kMetadataInputs[m]);
  // GroupQueryAttention read each row's length from attention_mask; here
  // past_lens says it. Any other reader would see a mask of the wrong shape.
  const ir::Graph& optimized = r->session_->graph();
  if (const ir::ValueId mask = optimized.find_value(d.attention_mask);
      mask != ir::kNoValue && !optimized.value(mask).consumers.empty()) {
    return not_implemented("{}: the decoder reads '{}' beyond GroupQueryAttention's sequence lengths; the paged "
                           "engine cannot batch it",
                           path, d.attention_mask);
  }

  r->vocab_ = config.vocab_size;
  const KvShape shape{static_cast<int64_t>(r->io_.past.size()), d.num_key_value_heads, d.head_size, r->io_.kv_dtype};
  r->cache_ = std::make_unique<PagedKvCache>(shape, options.num_blocks, options.block_size);
  r->inputs_.assign(inputs.size(), nullptr);
  r->outputs_.assign(r->session_->outputs().size(), nullptr);
  r->inputs_[static_cast<size_t>(r->io_.input_ids)] = &r->ids_view_;
  if (r->io_.position_ids >= 0) r->inputs_[static_cast<size_t>(r->io_.position_ids)] = &r->positions_view_;
  if (r->io_.attention_mask >= 0) r->inputs_[static_cast<size_t>(r->io_.attention_mask)] = &r->mask_view_;
  Tensor* metadata[] = {&r->query_start_view_, &r->past_lens_view_, &r->block_tables_view_,
                        &r->logits_positions_view_};
  for (int m = 0; m < used; ++m) r->inputs_[static_cast<size_t>(r->metadata_at_[m])] = metadata[m];
  for (size_t i = 0; i < r->io_.past.size(); ++i) {
    r->inputs_[static_cast<size_t>(r->io_.past[i])] = r->cache_->past(i);
    r->outputs_[static_cast<size_t>(r->io_.present[i])] = r->cache_->present(i);
  }
  r->outputs_[static_cast<size_t>(r->io_.logits)] = &r->logits_view_;
  return r;
}

Status PagedRunner::run(std::span<const StepSequence> batch) {
  if (batch.empty()) return invalid_argument("a step of no sequences");
  const auto n = static_cast<int64_t>(batch.size());
  int64_t width = 1;
  ids_.clear();
  positions_.clear();
  logits_positions_.clear();
  query_start_.assign(1, 0);
  past_lens_.clear();
  for (const StepSequence& s : batch) {
    const auto new_tokens = static_cast<int64_t>(s.tokens.size());
    const int64_t total = s.past + new_tokens;
    if (new_tokens == 0 || s.past < 0) return invalid_argument("a sequence with {} new tokens after {}", new_tokens, s.past);
    if (static_cast<int64_t>(s.blocks.size()) * cache_->block_size() < total) {
      return invalid_argument("a block table of {} blocks of {} holds fewer than the sequence's {} tokens",
                              s.blocks.size(), cache_->block_size(), total);
    }
    for (int64_t t : s.tokens) {
      if (t < 0 || t >= vocab_) return invalid_argument("token id {} is outside the vocabulary [0, {})", t, vocab_);
      ids_.push_back(t);
    }
    for (int64_t p = s.past; p < total; ++p) positions_.push_back(p);
    query_start_.push_back(static_cast<int32_t>(ids_.size()));
    past_lens_.push_back(static_cast<int32_t>(s.past));
    width = std::max<int64_t>(width, static_cast<int64_t>(s.blocks.size()));
    if (s.wants_logits) logits_positions_.push_back(static_cast<int64_t>(ids_.size()) - 1);
  }
  block_tables_.assign(static_cast<size_t>(n * width), 0);
  for (int64_t i = 0; i < n; ++i) {
    std::copy(batch[static_cast<size_t>(i)].blocks.begin(), batch[static_cast<size_t>(i)].blocks.end(),
              block_tables_.begin() + i * width);
  }
  const auto tokens = static_cast<int64_t>(ids_.size());
  const auto wanted = static_cast<int64_t>(logits_positions_.size());
  mask_.assign(static_cast<size_t>(tokens), 1);
  ids_view_ = view(DType::kI64, {1, tokens}, ids_);
  positions_view_ = view(DType::kI64, {1, tokens}, positions_);
  mask_view_ = view(DType::kI64, {1, tokens}, mask_);
  query_start_view_ = view(DType::kI32, {n + 1}, query_start_);
  past_lens_view_ = view(DType::kI32, {n}, past_lens_);
  block_tables_view_ = view(DType::kI32, {n, width}, block_tables_);
  logits_positions_view_ = view(DType::kI64, {wanted}, logits_positions_);
  const int64_t rows = gathered_logits_ ? wanted : tokens;
  logits_.resize(static_cast<size_t>(std::max<int64_t>(rows, 1) * vocab_));
  logits_view_ = view(DType::kF32, {1, rows, vocab_}, logits_);
  logits_rows_.clear();
  for (int64_t i = 0; i < wanted; ++i) logits_rows_.push_back(gathered_logits_ ? i : logits_positions_[static_cast<size_t>(i)]);
  if (gathered_logits_ && wanted == 0) {
    // The LM head gathers no row; its output is empty.
    logits_view_ = Tensor(DType::kF32, {1, 0, vocab_}, logits_.data());
  }
  return session_->run_bound(inputs_, outputs_);
}

std::span<float> PagedRunner::logits(size_t i) {
  return {logits_.data() + logits_rows_.at(i) * vocab_, static_cast<size_t>(vocab_)};
}

}  // namespace ember::genai
