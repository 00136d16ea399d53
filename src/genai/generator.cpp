#include "genai/generator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <random>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "genai/model_folder.h"
#include "onnx/model_loader.h"

namespace ember::genai {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int find_io(const std::vector<runtime::IoInfo>& infos, const std::string& name) {
  for (size_t i = 0; i < infos.size(); ++i) {
    if (infos[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

bool has_op(const ir::Graph& graph, std::string_view op_type) {
  return std::any_of(graph.nodes.begin(), graph.nodes.end(), [&](const ir::Node& n) { return n.op_type == op_type; });
}

ir::ValueId add_i64_constant(ir::Graph& graph, const std::string& name, int64_t v) {
  const ir::ValueId id = graph.add_value(name);
  Tensor t = Tensor::allocate(DType::kI64, {1});
  t.data_as<int64_t>()[0] = v;
  graph.value(id).dtype = DType::kI64;
  graph.value(id).constant = std::move(t);
  return id;
}

bool is_scalar_constant(const ir::Graph& graph, ir::ValueId id) {
  const ir::Value& v = graph.value(id);
  return v.constant.has_value() && v.constant->numel() == 1;
}

// Generation reads the logits of the last position only, so the LM head (the
// MatMul / MatMulNBits behind the logits output, with at most an elementwise
// softcap after it) gets hidden[:, -1:, :] instead of all S positions: a
// 512-token prefill of a 150k vocabulary skips 511 rows of the largest
// matrix (a quarter of Qwen2.5-0.5B's weights) and a 300 MB logits buffer.
// Returns false, changing nothing, when the graph has another form.
bool slice_lm_head_input(ir::Graph& graph, const std::string& logits) {
  const ir::ValueId out = graph.find_value(logits);
  if (out == ir::kNoValue || graph.value(out).producer < 0) return false;
  std::vector<ir::ValueId> chain = {out};
  ir::NodeId head = graph.value(out).producer;
  while (graph.node(head).op_type != "MatMul" && graph.node(head).op_type != "MatMulNBits") {
    const ir::Node& n = graph.node(head);
    static constexpr std::string_view kElementwise[] = {"Mul", "Div", "Add", "Sub", "Tanh", "Cast"};
    if (std::find(std::begin(kElementwise), std::end(kElementwise), n.op_type) == std::end(kElementwise)) return false;
    ir::ValueId next = ir::kNoValue;
    for (ir::ValueId in : n.inputs) {
      if (is_scalar_constant(graph, in)) continue;
      if (next != ir::kNoValue) return false;
      next = in;
    }
    if (next == ir::kNoValue || graph.value(next).producer < 0 || graph.value(next).consumers.size() != 1) return false;
    chain.push_back(next);
    head = graph.value(next).producer;
  }
  // Logits declared [batch, sequence, vocab]: a 2-D weight and scalar
  // elementwise ops keep the rank, so the head's input is [batch, sequence, hidden].
  if (!graph.value(out).has_shape || graph.value(out).shape.size() != 3) return false;
  const ir::ValueId hidden = graph.node(head).inputs.front();
  const ir::Value& h = graph.value(hidden);
  ir::Node slice;
  slice.name = "ember_genai/lm_head_last_position";
  slice.op_type = "Slice";
  slice.opset = graph.opsets.count("") ? graph.opsets.at("") : 13;
  const ir::ValueId sliced = graph.add_value(slice.name + "/output");
  graph.value(sliced).dtype = h.dtype;
  slice.inputs = {hidden, add_i64_constant(graph, slice.name + "/starts", -1),
                  add_i64_constant(graph, slice.name + "/ends", std::numeric_limits<int64_t>::max()),
                  add_i64_constant(graph, slice.name + "/axes", 1)};
  slice.num_explicit_inputs = slice.inputs.size();
  slice.outputs = {sliced};
  graph.node(head).inputs.front() = sliced;
  graph.nodes.push_back(std::move(slice));
  // The declared [batch, sequence, vocab] no longer holds: the sequence is 1.
  for (ir::ValueId v : chain) {
    graph.value(v).has_shape = false;
    graph.value(v).shape.clear();
  }
  return true;
}

// genai_config.json's sliding_window on the decoder's GroupQueryAttention
// nodes: each windowed layer (every layer when `layers` is empty) without a
// window of its own gets local_window_size = window_size. The model builder's
// Mistral export declares the window in genai_config.json only, so its graph
// alone would attend to the whole context where Mistral attends to the
// window. A windowed layer whose attention is not GroupQueryAttention is
// returned, for the warning.
std::vector<int> apply_sliding_window(ir::Graph& graph, const DecoderConfig& d) {
  const SlidingWindowConfig& w = *d.sliding_window;
  std::vector<int> layers = w.layers;
  if (layers.empty()) {
    layers.resize(static_cast<size_t>(d.num_hidden_layers));
    std::iota(layers.begin(), layers.end(), 0);
  }
  std::map<std::string, int> layer_of_past;  // past key input -> windowed layer
  for (int layer : layers) layer_of_past[layer_name(d.past_key_names, layer)] = layer;
  for (ir::Node& node : graph.nodes) {
    if (node.op_type != "GroupQueryAttention" || node.inputs.size() < 4 || node.inputs[3] == ir::kNoValue) continue;
    if (layer_of_past.erase(graph.value(node.inputs[3]).name) == 0) continue;
    auto it = std::find_if(node.attributes.begin(), node.attributes.end(),
                           [](const ir::Attribute& a) { return a.name == "local_window_size"; });
    if (it == node.attributes.end()) {
      node.attributes.push_back({.name = "local_window_size", .type = ir::AttrType::kInt, .i = w.window_size});
    } else if (it->i <= 0) {
      it->i = w.window_size;
    }
  }
  std::vector<int> missing;
  for (const auto& [name, layer] : layer_of_past) missing.push_back(layer);
  std::sort(missing.begin(), missing.end());
  return missing;
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

const char* stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::kEos: return "eos";
    case StopReason::kMaxNewTokens: return "max_new_tokens";
    case StopReason::kCallback: return "callback";
    case StopReason::kContextFull: return "context_full";
  }
  return "unknown";
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
  g->last_position_logits_ = slice_lm_head_input(graph, g->config_.decoder.logits);
  if (g->last_position_logits_) {
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

int64_t Generator::kv_cache_bytes() const {
  int64_t bytes = 0;
  for (const auto& copy : cache_) {
    for (const Tensor& t : copy) bytes += static_cast<int64_t>(t.nbytes());
  }
  return bytes;
}

Status Generator::bind_io() {
  const DecoderConfig& d = config_.decoder;
  const auto& inputs = session_->inputs();
  const auto& outputs = session_->outputs();
  input_ids_at_ = find_io(inputs, d.input_ids);
  attention_mask_at_ = find_io(inputs, d.attention_mask);
  position_ids_at_ = find_io(inputs, d.position_ids);
  logits_at_ = find_io(outputs, d.logits);
  if (input_ids_at_ < 0) {
    return invalid_model("{}: the decoder has no input '{}' (input_ids)", config_.dir, d.input_ids);
  }
  if (logits_at_ < 0) return invalid_model("{}: the decoder has no output '{}' (logits)", config_.dir, d.logits);
  if (outputs[static_cast<size_t>(logits_at_)].dtype != DType::kF32) {
    return not_implemented("{}: logits of type {}: Ember samples from float32 logits", config_.dir,
                           dtype_name(outputs[static_cast<size_t>(logits_at_)].dtype));
  }
  for (int layer = 0; layer < d.num_hidden_layers; ++layer) {
    for (const std::string* name : {&d.past_key_names, &d.past_value_names}) {
      const std::string n = layer_name(*name, layer);
      const int at = find_io(inputs, n);
      if (at < 0) {
        return invalid_model("{}: the decoder has no input '{}' (layer {} of {})", config_.dir, n, layer,
                             d.num_hidden_layers);
      }
      past_at_.push_back(at);
    }
    for (const std::string* name : {&d.present_key_names, &d.present_value_names}) {
      const std::string n = layer_name(*name, layer);
      const int at = find_io(outputs, n);
      if (at < 0) {
        return invalid_model("{}: the decoder has no output '{}' (layer {} of {})", config_.dir, n, layer,
                             d.num_hidden_layers);
      }
      present_at_.push_back(at);
    }
  }
  const size_t known = 1 + (attention_mask_at_ >= 0) + (position_ids_at_ >= 0) + past_at_.size();
  if (known != inputs.size()) {
    for (const runtime::IoInfo& info : inputs) {
      bool listed = info.name == d.input_ids || info.name == d.attention_mask || info.name == d.position_ids;
      for (int at : past_at_) listed = listed || inputs[static_cast<size_t>(at)].name == info.name;
      if (!listed && !info.has_default) {
        return invalid_model("{}: decoder input '{}' is none of those genai_config.json names", config_.dir, info.name);
      }
    }
  }
  kv_dtype_ = inputs[static_cast<size_t>(past_at_.front())].dtype;
  // [batch, kv_heads, sequence, head_size] where the graph declares them.
  for (int at : past_at_) {
    const runtime::IoInfo& info = inputs[static_cast<size_t>(at)];
    if (!info.has_shape) continue;
    const std::vector<ir::Dim>& dims = info.shape;
    if (dims.size() != 4 || (dims[1].known() && dims[1].value != d.num_key_value_heads) ||
        (dims[3].known() && dims[3].value != d.head_size) || info.dtype != kv_dtype_) {
      return invalid_model("{}: decoder input '{}' is declared {} {}; the config says [batch, {}, sequence, {}] {}",
                           config_.dir, info.name, dtype_name(info.dtype), ir::dims_to_string(dims),
                           d.num_key_value_heads, d.head_size, dtype_name(kv_dtype_));
    }
  }
  return Status::ok();
}

void Generator::allocate_cache() {
  const size_t n = past_at_.size();
  for (int copy = 0; copy < (shared_ ? 1 : 2); ++copy) {
    for (size_t i = 0; i < n; ++i) {
      cache_[copy].push_back(Tensor::allocate(kv_dtype_, {shared_ ? max_batch_ : 1, kv_heads_, capacity_, head_size_}));
    }
  }
  past_views_.resize(n);
  present_views_.resize(n);
  ids_ = Tensor::allocate(DType::kI64, {capacity_});
  positions_ = Tensor::allocate(DType::kI64, {capacity_});
  mask_ = Tensor::allocate(DType::kI64, {capacity_});
  std::fill_n(mask_.data_as<int64_t>(), capacity_, int64_t{1});
  if (shared_ && max_batch_ > 1) batch_mask_ = Tensor::allocate(DType::kI64, {max_batch_ * capacity_});
  inputs_.assign(session_->inputs().size(), nullptr);
  outputs_.assign(session_->outputs().size(), nullptr);
  inputs_[static_cast<size_t>(input_ids_at_)] = &ids_view_;
  if (attention_mask_at_ >= 0) inputs_[static_cast<size_t>(attention_mask_at_)] = &mask_view_;
  if (position_ids_at_ >= 0) inputs_[static_cast<size_t>(position_ids_at_)] = &positions_view_;
  outputs_[static_cast<size_t>(logits_at_)] = &logits_view_;
  for (size_t i = 0; i < n; ++i) {
    // Shared: one view, bound as past and present.
    inputs_[static_cast<size_t>(past_at_[i])] = &past_views_[i];
    outputs_[static_cast<size_t>(present_at_[i])] = shared_ ? &past_views_[i] : &present_views_[i];
  }
}

Status Generator::append(std::span<const int64_t> tokens) {
  const auto s = static_cast<int64_t>(tokens.size());
  const auto past = static_cast<int64_t>(tokens_.size());
  if (s == 0) return invalid_argument("no tokens to run");
  if (past + s > capacity_) {
    return invalid_argument("{} cached + {} new tokens exceed the context of {} tokens", past, s, capacity_);
  }
  for (int64_t t : tokens) {
    if (t < 0 || t >= vocab_) return invalid_argument("token id {} is outside the vocabulary [0, {})", t, vocab_);
  }
  const int64_t chunk = prefill_chunk_ > 0 ? prefill_chunk_ : s;
  for (int64_t begin = 0; begin < s; begin += chunk) {
    const Status ran = run_tokens(tokens.subspan(static_cast<size_t>(begin), static_cast<size_t>(std::min(chunk, s - begin))));
    if (!ran.is_ok()) {
      // Keep the promise that a failed append leaves the cache as it was.
      EMBER_RETURN_IF_ERROR(truncate(past));
      return ran;
    }
  }
  return Status::ok();
}

Status Generator::run_tokens(std::span<const int64_t> tokens) {
  const auto s = static_cast<int64_t>(tokens.size());
  const auto past = static_cast<int64_t>(tokens_.size());
  for (int64_t i = 0; i < s; ++i) {
    ids_.data_as<int64_t>()[i] = tokens[static_cast<size_t>(i)];
    positions_.data_as<int64_t>()[i] = past + i;
  }
  ids_view_ = Tensor(DType::kI64, {1, s}, ids_.data());
  positions_view_ = Tensor(DType::kI64, {1, s}, positions_.data());
  mask_view_ = Tensor(DType::kI64, {1, past + s}, mask_.data());
  const int64_t rows = last_position_logits_ ? 1 : s;
  if (logits_.numel() < rows * vocab_) logits_ = Tensor::allocate_uninitialized(DType::kF32, {rows * vocab_});
  logits_view_ = Tensor(DType::kF32, {1, rows, vocab_}, logits_.data());
  if (shared_) {
    const size_t row_bytes = static_cast<size_t>(kv_heads_ * capacity_ * head_size_) * dtype_size(kv_dtype_);
    for (size_t i = 0; i < past_views_.size(); ++i) {
      past_views_[i] = Tensor(kv_dtype_, {1, kv_heads_, capacity_, head_size_},
                              static_cast<char*>(cache_[0][i].data()) + static_cast<size_t>(row_) * row_bytes);
    }
  } else {
    for (size_t i = 0; i < past_views_.size(); ++i) {
      past_views_[i] = Tensor(kv_dtype_, {1, kv_heads_, past, head_size_}, cache_[current_][i].data());
      present_views_[i] = Tensor(kv_dtype_, {1, kv_heads_, past + s, head_size_}, cache_[1 - current_][i].data());
    }
  }
  EMBER_RETURN_IF_ERROR(session_->run_bound(inputs_, outputs_));
  if (!shared_) current_ = 1 - current_;
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  last_logits_rows_ = rows;
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
  for (size_t i = 0; i < past_views_.size(); ++i) {
    past_views_[i] = Tensor(kv_dtype_, {b, kv_heads_, capacity_, head_size_}, cache_[0][i].data());
  }
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
  std::vector<GenerationResult> results(static_cast<size_t>(rows));
  std::vector<Sampler> samplers;
  std::vector<std::vector<int64_t>> history(prompts.begin(), prompts.end());
  std::vector<int64_t> past(static_cast<size_t>(rows)), next(static_cast<size_t>(rows));
  std::vector<bool> active(static_cast<size_t>(rows), true);
  // Chooses row r's next token from `logits`; false when the row is finished.
  auto choose = [&](size_t r, std::span<float> logits) {
    GenerationResult& out = results[r];
    if (static_cast<int>(out.tokens.size()) < params.min_new_tokens) {
      for (int64_t eos : config_.eos_token_ids) logits[static_cast<size_t>(eos)] = -INFINITY;
    }
    next[r] = samplers[r].sample(logits, history[r]);
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

Status Generator::truncate(int64_t length) {
  const auto cached = static_cast<int64_t>(tokens_.size());
  if (length < 0 || length > cached) return invalid_argument("cannot keep {} of {} cached tokens", length, cached);
  if (!shared_ && length < cached) {
    // [1, heads, cached, head] -> [1, heads, length, head] in place: each head
    // moves towards the front, so ascending order never overwrites unread data.
    const size_t row = static_cast<size_t>(head_size_) * dtype_size(kv_dtype_);
    for (Tensor& t : cache_[current_]) {
      auto* base = static_cast<char*>(t.data());
      for (int64_t h = 1; h < kv_heads_; ++h) {
        std::memmove(base + h * length * row, base + h * cached * row, static_cast<size_t>(length) * row);
      }
    }
  }
  tokens_.resize(static_cast<size_t>(length));
  return Status::ok();
}

std::span<float> Generator::last_logits() {
  if (last_logits_rows_ == 0) return {};
  return {logits_.data_as<float>() + (last_logits_rows_ - 1) * vocab_, static_cast<size_t>(vocab_)};
}

Result<GenerationResult> Generator::generate(std::span<const int64_t> prompt, const GenerationParams& params) {
  const auto n = static_cast<int64_t>(prompt.size());
  if (n == 0) return invalid_argument("generate: the prompt is empty");
  if (params.max_new_tokens < 1) {
    return invalid_argument("generate: max_new_tokens {} must be at least 1", params.max_new_tokens);
  }
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
  std::vector<int64_t> history(prompt.begin(), prompt.end());
  history.reserve(history.size() + static_cast<size_t>(std::max(params.max_new_tokens, 0)));

  const auto start = Clock::now();
  EMBER_RETURN_IF_ERROR(append(prompt.subspan(tokens_.size())));
  stats.prefill_s = seconds_since(start);
  Clock::time_point step_start = start;
  while (true) {
    std::span<float> logits = last_logits();
    if (static_cast<int>(result.tokens.size()) < params.min_new_tokens) {
      for (int64_t eos : config_.eos_token_ids) logits[static_cast<size_t>(eos)] = -INFINITY;
    }
    const int64_t token = sampler.sample(logits, history);
    result.tokens.push_back(token);
    history.push_back(token);
    if (result.tokens.size() == 1) {
      stats.first_token_s = seconds_since(start);
    } else {
      stats.decode_s += seconds_since(step_start);
      ++stats.decode_steps;
    }
    if (params.on_token && !params.on_token(token)) {
      result.stop = StopReason::kCallback;
      break;
    }
    if (params.stop_on_eos && config_.is_eos(token)) {
      result.stop = StopReason::kEos;
      break;
    }
    if (static_cast<int>(result.tokens.size()) >= params.max_new_tokens) {
      result.stop = StopReason::kMaxNewTokens;
      break;
    }
    if (static_cast<int64_t>(tokens_.size()) + 1 > capacity_) {
      result.stop = StopReason::kContextFull;
      break;
    }
    step_start = Clock::now();
    const int64_t next[1] = {token};
    EMBER_RETURN_IF_ERROR(append(next));
  }
  stats.generated_tokens = static_cast<int64_t>(result.tokens.size());
  return result;
}

}  // namespace ember::genai
