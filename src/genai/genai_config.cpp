#include "genai/genai_config.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

namespace ember::genai {
namespace {

using Json = nlohmann::json;

// Decoder-only text models of onnxruntime-genai's model builder: one decoder
// taking input_ids, attention_mask (and position_ids) with a per-layer KV cache.
constexpr std::array<std::string_view, 21> kDecoderTypes = {
    "chatglm", "gemma",    "gemma2", "gemma3_text", "gpt2",   "granite", "llama",
    "mistral", "nemotron", "olmo",   "phi",         "phi3",   "phi3small", "phimoe",
    "qwen2",   "qwen3",    "smollm3", "ernie4_5",   "gptoss", "deepseek", "internlm2"};
// Types onnxruntime-genai knows that need more than one decoder (vision,
// speech, encoder-decoder): recognized so the error can say so.
constexpr std::array<std::string_view, 10> kMultiModelTypes = {
    "phi3v", "phi4mm", "whisper", "gemma3", "qwen2_5_vl", "marian-ssru", "decoder-pipeline", "mllama", "llava",
    "fara"};

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

Status unknown_field(const std::string& path) {
  return invalid_model("genai_config.json: unknown field {}", path);
}

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

Status parse_names(const std::string& path, const Json& json, DecoderConfig& d, bool inputs) {
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
    } else {
      return unknown_field(at);
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

Status parse_decoder(const std::string& path, const Json& json, DecoderConfig& d) {
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
      EMBER_RETURN_IF_ERROR(parse_names(at, value, d, key == "inputs"));
    } else {
      return unknown_field(at);
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

Status parse_search(const Json& json, SearchConfig& s) {
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
      return unknown_field(at);
    }
  }
  return Status::ok();
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
      EMBER_RETURN_IF_ERROR(parse_decoder(at, value, c.decoder));
    } else if (key == "sep_token_id" || key == "decoder_start_token_id") {
      int64_t ignored = 0;
      EMBER_RETURN_IF_ERROR(read_int(at, value, 0, std::numeric_limits<int32_t>::max(), ignored));
    } else {
      return unknown_field(at);
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
  return Status::ok();
}

}  // namespace

bool GenaiConfig::is_eos(int64_t token) const {
  return std::find(eos_token_ids.begin(), eos_token_ids.end(), token) != eos_token_ids.end();
}

Result<GenaiConfig> parse_genai_config(std::string_view text) {
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return invalid_model("genai_config.json: not valid JSON");
  EMBER_RETURN_IF_ERROR(expect_object("the top level", json));
  GenaiConfig config;
  bool has_model = false;
  for (const auto& [key, value] : json.items()) {
    if (key == "model") {
      has_model = true;
      EMBER_RETURN_IF_ERROR(parse_model(value, config));
    } else if (key == "search") {
      EMBER_RETURN_IF_ERROR(parse_search(value, config.search));
    } else {
      return unknown_field(key);
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
