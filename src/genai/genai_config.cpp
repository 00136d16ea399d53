#include "genai/genai_config.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <limits>
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "base/json.h"

namespace ember::genai {
namespace {

using Json = nlohmann::json;

// Decoder-only text models of onnxruntime-genai (ModelType::IsLLM in its
// src/models/model_type.h): one decoder taking input_ids, attention_mask (and
// position_ids) with a per-layer KV cache.
constexpr std::array<std::string_view, 28> kDecoderTypes = {
    "chatglm", "decoder",    "ernie4_5", "gemma",   "gemma2",     "gemma3_text", "gemma4_text",
    "gpt2",    "gptoss",     "granite",  "granitemoehybrid", "hunyuandensev1", "internlm2", "lfm2",
    "llama",   "mistral",    "nemotron", "olmo",    "phi",        "phimoe",      "phi3",
    "phi3small", "qwen2",    "qwen3",    "qwen3_5_moe_text", "qwen3_5_text", "smollm3", "deepseek"};
// Types onnxruntime-genai knows that need more than one model (vision, audio,
// multimodal, pipelines, transducers): recognized so the error can say so.
constexpr std::array<std::string_view, 17> kMultiModelTypes = {
    "fara",    "gemma3",  "mistral3", "phi3v",         "qwen2_5_vl",   "qwen3_vl",         "qwen3_5",
    "qwen3_5_moe", "videochat_flash_qwen", "whisper", "gemma4", "phi4mm", "decoder-pipeline", "nemotron_speech",
    "parakeet_tdt", "marian-ssru", "mllama"};

Status field_error(const std::string& path, std::string_view expected, const Json& value) {
  return invalid_model("genai_config.json: {}: expected {}, got {}", path, expected, value.dump());
}

Status read_int(const std::string& path, const Json& value, int64_t lo, int64_t hi, int64_t& out) {
  double d = 0;
  if (value.is_number_integer()) {
    d = static_cast<double>(value.get<int64_t>());
  } else if (value.is_number_float() && std::floor(value.get<double>()) == value.get<double>()) {
    d = value.get<double>();  // onnxruntime-genai reads every number as a double
  } else {
    return field_error(path, "an integer", value);
  }
  if (d < static_cast<double>(lo) || d > static_cast<double>(hi)) {
    return invalid_model("genai_config.json: {}: {} is outside [{}, {}]", path, value.dump(), lo, hi);
  }
  out = static_cast<int64_t>(d);
  return Status::ok();
}

Status read_int(const std::string& path, const Json& value, int lo, int& out) {
  int64_t v = 0;
  EMBER_RETURN_IF_ERROR(read_int(path, value, lo, std::numeric_limits<int>::max(), v));
  out = static_cast<int>(v);
  return Status::ok();
}

Status read_float(const std::string& path, const Json& value, float lo, float& out) {
  if (!value.is_number()) return field_error(path, "a number", value);
  double d = value.get<double>();
  if (!std::isfinite(d) || d < lo) return invalid_model("genai_config.json: {}: {} must be >= {}", path, d, lo);
  out = static_cast<float>(d);
  return Status::ok();
}

Status read_bool(const std::string& path, const Json& value, bool& out) {
  if (!value.is_boolean()) return field_error(path, "true or false", value);
  out = value.get<bool>();
  return Status::ok();
}

Status read_string(const std::string& path, const Json& value, std::string& out) {
  if (!value.is_string()) return field_error(path, "a string", value);
  out = value.get<std::string>();
  return Status::ok();
}

Status read_token_ids(const std::string& path, const Json& value, std::vector<int64_t>& out) {
  out.clear();
  if (!value.is_array()) {
    int64_t id = 0;
    EMBER_RETURN_IF_ERROR(read_int(path, value, 0, std::numeric_limits<int32_t>::max(), id));
    out.push_back(id);
    return Status::ok();
  }
  for (size_t i = 0; i < value.size(); ++i) {
    int64_t id = 0;
    EMBER_RETURN_IF_ERROR(read_int(path + "[" + std::to_string(i) + "]", value[i], 0,
                                   std::numeric_limits<int32_t>::max(), id));
    out.push_back(id);
  }
  if (out.empty()) return invalid_model("genai_config.json: {}: an empty list", path);
  return Status::ok();
}

// A field onnxruntime-genai does not know either: kept as a warning.
void unknown_field(GenaiConfig& c, const std::string& path) {
  c.warnings.push_back(fmt::format("genai_config.json: unknown field {} (ignored)", path));
}

enum class Kind { kInt, kNumber, kBool, kString, kObject, kArray };

struct KnownField {
  std::string_view name;
  Kind kind;
};

// Checks the type of a field onnxruntime-genai knows and Ember does not use.
Status check_kind(const std::string& path, const Json& value, Kind kind) {
  switch (kind) {
    case Kind::kInt: {
      int64_t ignored = 0;
      return read_int(path, value, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(), ignored);
    }
    case Kind::kNumber: return value.is_number() ? Status::ok() : field_error(path, "a number", value);
    case Kind::kBool: return value.is_boolean() ? Status::ok() : field_error(path, "true or false", value);
    case Kind::kString: return value.is_string() ? Status::ok() : field_error(path, "a string", value);
    case Kind::kObject: return value.is_object() ? Status::ok() : field_error(path, "an object", value);
    case Kind::kArray: return value.is_array() ? Status::ok() : field_error(path, "a list", value);
  }
  return Status::ok();
}

// `key` in `known`: its type is checked; otherwise it is an unknown field.
template <size_t N>
Status known_or_unknown(GenaiConfig& c, const std::string& path, std::string_view key, const Json& value,
                        const std::array<KnownField, N>& known) {
  for (const KnownField& f : known) {
    if (f.name == key) return check_kind(path, value, f.kind);
  }
  unknown_field(c, path);
  return Status::ok();
}

// Fields of onnxruntime-genai's config (src/config.cpp) that Ember accepts and
// does not use, per section: multimodal and speech settings, beam search,
// pipelines of several models, paged-attention inputs of other runtimes.
constexpr std::array<KnownField, 34> kModelFields = {{
    {"tokenizer_dir", Kind::kString},   {"decoder_start_token_id", Kind::kInt}, {"sep_token_id", Kind::kInt},
    {"image_token_id", Kind::kInt},     {"audio_token_id", Kind::kInt},         {"boa_token_id", Kind::kInt},
    {"video_token_id", Kind::kInt},     {"vision_start_token_id", Kind::kInt},  {"num_mels", Kind::kInt},
    {"fft_size", Kind::kInt},           {"hop_length", Kind::kInt},             {"win_length", Kind::kInt},
    {"preemph", Kind::kNumber},         {"log_eps", Kind::kNumber},             {"norm_eps", Kind::kNumber},
    {"subsampling_factor", Kind::kInt}, {"left_context", Kind::kInt},           {"conv_context", Kind::kInt},
    {"pre_encode_cache_size", Kind::kInt}, {"sample_rate", Kind::kInt},         {"chunk_samples", Kind::kInt},
    {"blank_id", Kind::kInt},           {"max_symbols_per_step", Kind::kInt},   {"left_context_samples", Kind::kInt},
    {"right_context_samples", Kind::kInt}, {"tdt_durations", Kind::kArray},     {"encoder", Kind::kObject},
    {"draft", Kind::kObject},           {"embedding", Kind::kObject},           {"vad", Kind::kObject},
    {"mtp", Kind::kObject},             {"joiner", Kind::kObject},              {"vision", Kind::kObject},
    {"speech", Kind::kObject},
}};
constexpr std::array<KnownField, 4> kDecoderFields = {{
    {"conv_cache_size", Kind::kInt},
    {"run_options", Kind::kObject},
    {"layer_types", Kind::kArray},
    {"shared_initializers", Kind::kArray},
}};
constexpr std::array<KnownField, 3> kSearchFields = {{
    {"batch_size", Kind::kInt},
    {"chunk_size", Kind::kInt},
    {"blank_penalty", Kind::kNumber},
}};
// Names of inputs and outputs other runtimes bind (encoder-decoder, paged
// attention, recurrent state). They are strings; a decoder that really has
// such an input fails to bind with a message naming it.
constexpr std::array<std::string_view, 26> kOtherIoNames = {
    "inputs_embeds", "past_names", "cross_past_key_names", "cross_past_value_names", "past_sequence_length",
    "current_sequence_length", "total_sequence_length", "encoder_hidden_states", "encoder_attention_mask",
    "rnn_states_prev", "past_key_values_length", "cache_indirection", "cumulative_sequence_lengths",
    "past_sequence_lengths", "block_table", "block_table_windowed", "attention_metadata", "past_conv_names",
    "hidden_states", "targets", "present_names", "output_cross_qk_names", "rnn_states", "present_conv_names",
    "lstm_hidden_state", "lstm_cell_state"};

Status expect_object(const std::string& path, const Json& value) {
  return value.is_object() ? Status::ok() : field_error(path, "an object", value);
}

// A template must hold exactly one %d: it is expanded per layer.
Status read_template(const std::string& path, const Json& value, std::string& out) {
  EMBER_RETURN_IF_ERROR(read_string(path, value, out));
  size_t at = out.find("%d");
  if (at == std::string::npos || out.find('%', at + 2) != std::string::npos || out.find('%') != at) {
    return invalid_model("genai_config.json: {}: '{}' must contain exactly one %d (the layer)", path, out);
  }
  return Status::ok();
}

Status parse_names(GenaiConfig& c, const std::string& path, const Json& json, DecoderConfig& d, bool inputs) {
  EMBER_RETURN_IF_ERROR(expect_object(path, json));
  for (const auto& [key, value] : json.items()) {
    const std::string at = path + "." + key;
    if (inputs && key == "input_ids") {
      EMBER_RETURN_IF_ERROR(read_string(at, value, d.input_ids));
    } else if (inputs && key == "attention_mask") {
      EMBER_RETURN_IF_ERROR(read_string(at, value, d.attention_mask));
    } else if (inputs && key == "position_ids") {
      EMBER_RETURN_IF_ERROR(read_string(at, value, d.position_ids));
    } else if (inputs && key == "past_key_names") {
      EMBER_RETURN_IF_ERROR(read_template(at, value, d.past_key_names));
    } else if (inputs && key == "past_value_names") {
      EMBER_RETURN_IF_ERROR(read_template(at, value, d.past_value_names));
    } else if (!inputs && key == "logits") {
      EMBER_RETURN_IF_ERROR(read_string(at, value, d.logits));
    } else if (!inputs && key == "present_key_names") {
      EMBER_RETURN_IF_ERROR(read_template(at, value, d.present_key_names));
    } else if (!inputs && key == "present_value_names") {
      EMBER_RETURN_IF_ERROR(read_template(at, value, d.present_value_names));
    } else if (std::find(kOtherIoNames.begin(), kOtherIoNames.end(), key) != kOtherIoNames.end() ||
               (!inputs && key == "outputs_length")) {
      EMBER_RETURN_IF_ERROR(check_kind(at, value, Kind::kString));
    } else {
      unknown_field(c, at);
    }
  }
  return Status::ok();
}

// onnxruntime-genai passes unknown string-valued session options to ORT as
// config entries; Ember has no such entries, so it accepts and ignores them.
Status parse_session_options(const std::string& path, const Json& json, DecoderConfig& d) {
  EMBER_RETURN_IF_ERROR(expect_object(path, json));
  for (const auto& [key, value] : json.items()) {
    const std::string at = path + "." + key;
    if (key == "intra_op_num_threads") {
      EMBER_RETURN_IF_ERROR(read_int(at, value, 0, d.intra_op_num_threads));
    } else if (key == "provider_options") {
      if (!value.is_array()) return field_error(at, "a list", value);
    } else if (key == "inter_op_num_threads" || key == "log_severity_level" || key == "log_verbosity_level") {
      int ignored = 0;
      EMBER_RETURN_IF_ERROR(read_int(at, value, 0, ignored));
    } else if (key == "enable_cpu_mem_arena" || key == "enable_mem_pattern") {
      bool ignored = false;
      EMBER_RETURN_IF_ERROR(read_bool(at, value, ignored));
    } else {
      std::string ignored;
      EMBER_RETURN_IF_ERROR(read_string(at, value, ignored));
    }
  }
  return Status::ok();
}

Status parse_sliding_window(GenaiConfig& c, const std::string& path, const Json& json, SlidingWindowConfig& w) {
  EMBER_RETURN_IF_ERROR(expect_object(path, json));
  bool has_window = false;
  for (const auto& [key, value] : json.items()) {
    const std::string at = path + "." + key;
    if (key == "window_size") {
      has_window = true;
      EMBER_RETURN_IF_ERROR(read_int(at, value, 1, w.window_size));
    } else if (key == "cache_slack") {
      EMBER_RETURN_IF_ERROR(read_int(at, value, 0, w.cache_slack));
    } else if (key == "slide_key_value_cache") {
      EMBER_RETURN_IF_ERROR(read_bool(at, value, w.slide_key_value_cache));
    } else if (key == "slide_inputs") {
      EMBER_RETURN_IF_ERROR(read_bool(at, value, w.slide_inputs));
    } else if (key == "layers") {
      if (!value.is_array()) return field_error(at, "a list", value);
      for (size_t i = 0; i < value.size(); ++i) {
        int layer = 0;
        EMBER_RETURN_IF_ERROR(read_int(at + "[" + std::to_string(i) + "]", value[i], 0, layer));
        w.layers.push_back(layer);
      }
    } else if (key == "pad_value") {
      EMBER_RETURN_IF_ERROR(check_kind(at, value, Kind::kInt));
    } else if (key == "alignment") {
      std::string alignment;
      EMBER_RETURN_IF_ERROR(read_string(at, value, alignment));
      if (alignment != "left" && alignment != "right") return field_error(at, "\"left\" or \"right\"", value);
    } else {
      unknown_field(c, at);
    }
  }
  if (!has_window) return invalid_model("genai_config.json: {}.window_size is missing", path);
  return Status::ok();
}

Status parse_decoder(GenaiConfig& c, const std::string& path, const Json& json, DecoderConfig& d) {
  EMBER_RETURN_IF_ERROR(expect_object(path, json));
  for (const auto& [key, value] : json.items()) {
    const std::string at = path + "." + key;
    if (key == "filename") {
      EMBER_RETURN_IF_ERROR(read_string(at, value, d.filename));
    } else if (key == "head_size") {
      EMBER_RETURN_IF_ERROR(read_int(at, value, 1, d.head_size));
    } else if (key == "hidden_size") {
      EMBER_RETURN_IF_ERROR(read_int(at, value, 1, d.hidden_size));
    } else if (key == "num_attention_heads") {
      EMBER_RETURN_IF_ERROR(read_int(at, value, 1, d.num_attention_heads));
    } else if (key == "num_key_value_heads") {
      EMBER_RETURN_IF_ERROR(read_int(at, value, 1, d.num_key_value_heads));
    } else if (key == "num_hidden_layers") {
      EMBER_RETURN_IF_ERROR(read_int(at, value, 1, d.num_hidden_layers));
    } else if (key == "session_options") {
      EMBER_RETURN_IF_ERROR(parse_session_options(at, value, d));
    } else if (key == "inputs" || key == "outputs") {
      EMBER_RETURN_IF_ERROR(parse_names(c, at, value, d, key == "inputs"));
    } else if (key == "sliding_window") {
      EMBER_RETURN_IF_ERROR(parse_sliding_window(c, at, value, d.sliding_window.emplace()));
    } else if (key == "pipeline") {
      return not_implemented("genai_config.json: {}: a pipeline of several models; Ember runs one decoder model", at);
    } else {
      EMBER_RETURN_IF_ERROR(known_or_unknown(c, at, key, value, kDecoderFields));
    }
  }
  if (d.sliding_window) {
    for (int layer : d.sliding_window->layers) {
      if (layer >= d.num_hidden_layers) {
        return invalid_model("genai_config.json: {}.sliding_window.layers: layer {} is not below num_hidden_layers {}",
                             path, layer, d.num_hidden_layers);
      }
    }
  }
  if (d.head_size == 0 || d.num_key_value_heads == 0 || d.num_hidden_layers == 0) {
    return invalid_model("genai_config.json: {} needs head_size, num_key_value_heads and num_hidden_layers", path);
  }
  if (d.num_attention_heads != 0 && d.num_attention_heads % d.num_key_value_heads != 0) {
    return invalid_model("genai_config.json: {}.num_attention_heads {} is not a multiple of num_key_value_heads {}",
                         path, d.num_attention_heads, d.num_key_value_heads);
  }
  return Status::ok();
}

Status parse_search(GenaiConfig& c, const Json& json, SearchConfig& s) {
  EMBER_RETURN_IF_ERROR(expect_object("search", json));
  for (const auto& [key, value] : json.items()) {
    const std::string at = "search." + key;
    if (key == "do_sample") {
      EMBER_RETURN_IF_ERROR(read_bool(at, value, s.do_sample));
    } else if (key == "past_present_share_buffer") {
      EMBER_RETURN_IF_ERROR(read_bool(at, value, s.past_present_share_buffer));
    } else if (key == "max_length") {
      EMBER_RETURN_IF_ERROR(read_int(at, value, 1, s.max_length));
    } else if (key == "min_length") {
      EMBER_RETURN_IF_ERROR(read_int(at, value, 0, s.min_length));
    } else if (key == "top_k") {
      EMBER_RETURN_IF_ERROR(read_int(at, value, 0, s.top_k));
    } else if (key == "temperature") {
      EMBER_RETURN_IF_ERROR(read_float(at, value, 0.0f, s.temperature));
    } else if (key == "top_p") {
      EMBER_RETURN_IF_ERROR(read_float(at, value, 0.0f, s.top_p));
      if (s.top_p > 1.0f) return invalid_model("genai_config.json: {}: {} is above 1", at, s.top_p);
    } else if (key == "repetition_penalty") {
      EMBER_RETURN_IF_ERROR(read_float(at, value, 0.0f, s.repetition_penalty));
      if (s.repetition_penalty == 0.0f) return invalid_model("genai_config.json: {}: must be positive", at);
    } else if (key == "random_seed") {
      EMBER_RETURN_IF_ERROR(read_int(at, value, -1, std::numeric_limits<int64_t>::max() / 2, s.random_seed));
    } else if (key == "num_beams" || key == "num_return_sequences") {
      int n = 0;
      EMBER_RETURN_IF_ERROR(read_int(at, value, 1, n));
      if (n != 1) return not_implemented("genai_config.json: {} = {}: Ember generates one sequence per prompt", at, n);
    } else if (key == "early_stopping") {
      bool ignored = false;
      EMBER_RETURN_IF_ERROR(read_bool(at, value, ignored));
    } else if (key == "diversity_penalty" || key == "length_penalty" || key == "no_repeat_ngram_size") {
      if (!value.is_number()) return field_error(at, "a number", value);
    } else {
      EMBER_RETURN_IF_ERROR(known_or_unknown(c, at, key, value, kSearchFields));
    }
  }
  return Status::ok();
}

// The tool-call and reasoning delimiters, by field name.
constexpr std::pair<std::string_view, int64_t GenaiConfig::*> kNamedTokenIds[] = {
    {"bot_token_id", &GenaiConfig::bot_token_id},
    {"eot_token_id", &GenaiConfig::eot_token_id},
    {"bor_token_id", &GenaiConfig::bor_token_id},
    {"eor_token_id", &GenaiConfig::eor_token_id},
};

int64_t* named_token_id(GenaiConfig& c, std::string_view key) {
  for (const auto& [name, member] : kNamedTokenIds) {
    if (name == key) return &(c.*member);
  }
  return nullptr;
}

Status parse_model(const Json& json, GenaiConfig& c) {
  EMBER_RETURN_IF_ERROR(expect_object("model", json));
  bool has_decoder = false;
  for (const auto& [key, value] : json.items()) {
    const std::string at = "model." + key;
    if (key == "type") {
      EMBER_RETURN_IF_ERROR(read_string(at, value, c.type));
    } else if (key == "bos_token_id") {
      EMBER_RETURN_IF_ERROR(read_int(at, value, 0, std::numeric_limits<int32_t>::max(), c.bos_token_id));
    } else if (key == "pad_token_id") {
      EMBER_RETURN_IF_ERROR(read_int(at, value, 0, std::numeric_limits<int32_t>::max(), c.pad_token_id));
    } else if (key == "eos_token_id") {
      EMBER_RETURN_IF_ERROR(read_token_ids(at, value, c.eos_token_ids));
    } else if (key == "context_length") {
      EMBER_RETURN_IF_ERROR(read_int(at, value, 1, c.context_length));
    } else if (key == "vocab_size") {
      EMBER_RETURN_IF_ERROR(read_int(at, value, 1, c.vocab_size));
    } else if (key == "decoder") {
      has_decoder = true;
      EMBER_RETURN_IF_ERROR(parse_decoder(c, at, value, c.decoder));
    } else if (int64_t* id = named_token_id(c, key)) {
      EMBER_RETURN_IF_ERROR(read_int(at, value, 0, std::numeric_limits<int32_t>::max(), *id));
    } else {
      EMBER_RETURN_IF_ERROR(known_or_unknown(c, at, key, value, kModelFields));
    }
  }
  if (c.type.empty()) return invalid_model("genai_config.json: model.type is missing");
  if (std::find(kMultiModelTypes.begin(), kMultiModelTypes.end(), c.type) != kMultiModelTypes.end()) {
    return not_implemented(
        "genai_config.json: model.type '{}' needs more than one model; Ember runs decoder-only text models", c.type);
  }
  if (std::find(kDecoderTypes.begin(), kDecoderTypes.end(), c.type) == kDecoderTypes.end()) {
    return invalid_model("genai_config.json: model.type: unknown model type '{}'", c.type);
  }
  if (!has_decoder) return invalid_model("genai_config.json: model.decoder is missing");
  if (c.vocab_size == 0) return invalid_model("genai_config.json: model.vocab_size is missing");
  if (c.context_length == 0) return invalid_model("genai_config.json: model.context_length is missing");
  if (c.eos_token_ids.empty()) return invalid_model("genai_config.json: model.eos_token_id is missing");
  for (int64_t id : c.eos_token_ids) {
    if (id >= c.vocab_size) {
      return invalid_model("genai_config.json: model.eos_token_id {} is not below vocab_size {}", id, c.vocab_size);
    }
  }
  for (const auto& [name, member] : kNamedTokenIds) {
    if (const int64_t id = c.*member; id >= c.vocab_size) {
      return invalid_model("genai_config.json: model.{} {} is not below vocab_size {}", name, id, c.vocab_size);
    }
  }
  return Status::ok();
}

}  // namespace

bool GenaiConfig::is_eos(int64_t token) const {
  return std::find(eos_token_ids.begin(), eos_token_ids.end(), token) != eos_token_ids.end();
}

Result<GenaiConfig> parse_genai_config(std::string_view text) {
  std::string why;
  Json json = parse_json<Json>(text, &why);
  if (json.is_discarded()) return invalid_model("genai_config.json {}", why);
  EMBER_RETURN_IF_ERROR(expect_object("the top level", json));
  GenaiConfig config;
  bool has_model = false;
  for (const auto& [key, value] : json.items()) {
    if (key == "model") {
      has_model = true;
      EMBER_RETURN_IF_ERROR(parse_model(value, config));
    } else if (key == "search") {
      EMBER_RETURN_IF_ERROR(parse_search(config, value, config.search));
    } else {
      unknown_field(config, key);
    }
  }
  if (!has_model) return invalid_model("genai_config.json: the model section is missing");
  if (config.search.max_length == 0 || config.search.max_length > config.context_length) {
    config.search.max_length = config.context_length;
  }
  return config;
}

Result<GenaiConfig> load_genai_config(const std::string& dir) {
  const std::string path = dir + "/genai_config.json";
  std::ifstream in(path);
  if (!in) return io_error("cannot open {}", path);
  std::stringstream text;
  text << in.rdbuf();
  auto config = parse_genai_config(text.str());
  // Every message starts with "genai_config.json": prefixing the folder names the file.
  if (!config.is_ok()) return config.status().with_context(dir + "/");
  config->dir = dir;
  return config;
}

std::string layer_name(const std::string& name_template, int layer) {
  std::string out = name_template;
  size_t at = out.find("%d");
  if (at != std::string::npos) out.replace(at, 2, std::to_string(layer));
  return out;
}

}  // namespace ember::genai
