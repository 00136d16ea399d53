#include "genai/model_folder.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/json.h"

namespace ember::genai {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

Result<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return io_error("cannot open {}", path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Result<Json> parse_object(std::string_view file, std::string_view text) {
  std::string why;
  Json json = parse_json<Json>(text, &why);
  if (json.is_discarded()) return invalid_model("{} {}", file, why);
  if (!json.is_object()) return invalid_model("{}: expected an object at the top level", file);
  return json;
}

// The first of `keys` present in `json` (Hugging Face configs name some
// fields per architecture: gpt2's n_layer is num_hidden_layers).
const Json* find_any(const Json& json, std::initializer_list<const char*> keys, std::string& found) {
  for (const char* key : keys) {
    auto it = json.find(key);
    if (it != json.end() && !it->is_null()) {
      found = key;
      return &*it;
    }
  }
  return nullptr;
}

Status read_positive(std::string_view file, const Json& json, std::initializer_list<const char*> keys, int& out,
                     bool required) {
  std::string key;
  const Json* value = find_any(json, keys, key);
  if (value == nullptr) {
    if (!required) return Status::ok();
    return invalid_model("{}: {} is missing", file, *keys.begin());
  }
  if (!value->is_number_integer() || value->get<int64_t>() < 1 ||
      value->get<int64_t>() > std::numeric_limits<int>::max()) {
    return invalid_model("{}: {}: expected a positive integer, got {}", file, key, value->dump());
  }
  out = static_cast<int>(value->get<int64_t>());
  return Status::ok();
}

// bos/eos/pad ids: an integer or (eos) a list of them; absent or null leaves `out` alone.
Status read_ids(std::string_view file, const Json& json, const char* key, std::vector<int64_t>& out) {
  auto it = json.find(key);
  if (it == json.end() || it->is_null()) return Status::ok();
  std::vector<int64_t> ids;
  for (const Json& v : it->is_array() ? *it : Json::array({*it})) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0) {
      return invalid_model("{}: {}: expected a token id or a list of them, got {}", file, key, it->dump());
    }
    ids.push_back(v.get<int64_t>());
  }
  if (!ids.empty()) out = std::move(ids);
  return Status::ok();
}

Status read_number(std::string_view file, const Json& json, const char* key, float lo, float& out) {
  auto it = json.find(key);
  if (it == json.end() || it->is_null()) return Status::ok();
  if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < lo) {
    return invalid_model("{}: {}: expected a number >= {}, got {}", file, key, lo, it->dump());
  }
  out = it->get<float>();
  return Status::ok();
}

// generation_config.json's sampling defaults, as the model builder copies them into `search`.
Status read_search(std::string_view file, const Json& json, SearchConfig& s) {
  if (auto it = json.find("do_sample"); it != json.end() && !it->is_null()) {
    if (!it->is_boolean()) return invalid_model("{}: do_sample: expected true or false, got {}", file, it->dump());
    s.do_sample = it->get<bool>();
  }
  if (auto it = json.find("top_k"); it != json.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > std::numeric_limits<int>::max()) {
      return invalid_model("{}: top_k: expected a non-negative integer, got {}", file, it->dump());
    }
    s.top_k = static_cast<int>(it->get<int64_t>());
  }
  EMBER_RETURN_IF_ERROR(read_number(file, json, "temperature", 0.0f, s.temperature));
  EMBER_RETURN_IF_ERROR(read_number(file, json, "top_p", 0.0f, s.top_p));
  if (s.top_p > 1.0f) return invalid_model("{}: top_p: {} is above 1", file, s.top_p);
  EMBER_RETURN_IF_ERROR(read_number(file, json, "repetition_penalty", 0.0f, s.repetition_penalty));
  if (s.repetition_penalty == 0.0f) return invalid_model("{}: repetition_penalty must be positive", file);
  return Status::ok();
}

Status read_model_shape(const Json& config, GenaiConfig& c) {
  constexpr std::string_view kFile = "config.json";
  DecoderConfig& d = c.decoder;
  EMBER_RETURN_IF_ERROR(read_positive(kFile, config, {"vocab_size"}, c.vocab_size, true));
  EMBER_RETURN_IF_ERROR(read_positive(kFile, config, {"num_hidden_layers", "n_layer", "num_layers"},
                                      d.num_hidden_layers, true));
  EMBER_RETURN_IF_ERROR(read_positive(kFile, config, {"num_attention_heads", "n_head"}, d.num_attention_heads, true));
  EMBER_RETURN_IF_ERROR(read_positive(kFile, config, {"hidden_size", "n_embd", "d_model"}, d.hidden_size, true));
  d.num_key_value_heads = d.num_attention_heads;
  EMBER_RETURN_IF_ERROR(read_positive(kFile, config, {"num_key_value_heads"}, d.num_key_value_heads, false));
  d.head_size = d.hidden_size / d.num_attention_heads;
  EMBER_RETURN_IF_ERROR(read_positive(kFile, config, {"head_dim"}, d.head_size, false));
  EMBER_RETURN_IF_ERROR(read_positive(kFile, config, {"max_position_embeddings", "n_positions"}, c.context_length,
                                      true));
  if (d.num_attention_heads % d.num_key_value_heads != 0) {
    return invalid_model("config.json: num_attention_heads {} is not a multiple of num_key_value_heads {}",
                         d.num_attention_heads, d.num_key_value_heads);
  }
  return Status::ok();
}

Status read_special_ids(const Json& config, const Json& generation, GenaiConfig& c) {
  std::vector<int64_t> bos, pad;
  for (const auto& [file, json] : {std::pair{"config.json", &config}, std::pair{"generation_config.json", &generation}}) {
    EMBER_RETURN_IF_ERROR(read_ids(file, *json, "bos_token_id", bos));
    EMBER_RETURN_IF_ERROR(read_ids(file, *json, "eos_token_id", c.eos_token_ids));
    EMBER_RETURN_IF_ERROR(read_ids(file, *json, "pad_token_id", pad));
  }
  if (c.eos_token_ids.empty()) {
    return invalid_model("config.json: eos_token_id is missing (and generation_config.json has none)");
  }
  if (!bos.empty()) c.bos_token_id = bos.front();
  c.pad_token_id = pad.empty() ? c.eos_token_ids.front() : pad.front();
  for (int64_t id : c.eos_token_ids) {
    if (id >= c.vocab_size) {
      return invalid_model("config.json: eos_token_id {} is not below vocab_size {}", id, c.vocab_size);
    }
  }
  return Status::ok();
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// model.onnx, else onnx/model.onnx; the error lists the .onnx files there are.
Result<std::string> find_decoder(const std::string& dir) {
  for (const char* candidate : {"model.onnx", "onnx/model.onnx"}) {
    if (is_file(fs::path(dir) / candidate)) return std::string(candidate);
  }
  std::string found;
  for (const char* sub : {"", "onnx"}) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(fs::path(dir) / sub, ec)) {
      if (entry.path().extension() == ".onnx") {
        found += (found.empty() ? "" : ", ") + (fs::path(sub) / entry.path().filename()).string();
      }
    }
  }
  return invalid_model("{}: no model.onnx or onnx/model.onnx{}; choose the decoder with --onnx FILE", dir,
                       found.empty() ? std::string() : " (it has " + found + ")");
}

}  // namespace

Result<GenaiConfig> config_from_hugging_face(std::string_view config_json, std::string_view generation_config_json) {
  EMBER_ASSIGN_OR_RETURN(Json config, parse_object("config.json", config_json));
  Json generation = Json::object();
  if (!generation_config_json.empty()) {
    EMBER_ASSIGN_OR_RETURN(generation, parse_object("generation_config.json", generation_config_json));
  }
  GenaiConfig c;
  if (auto it = config.find("model_type"); it != config.end() && it->is_string()) c.type = it->get<std::string>();
  if (auto it = config.find("text_config"); it != config.end() && it->is_object()) {
    return not_implemented("config.json: model_type '{}' is a multimodal model (it has a text_config); Ember runs "
                           "decoder-only text models",
                           c.type);
  }
  EMBER_RETURN_IF_ERROR(read_model_shape(config, c));
  EMBER_RETURN_IF_ERROR(read_special_ids(config, generation, c));
  EMBER_RETURN_IF_ERROR(read_search("generation_config.json", generation, c.search));
  c.search.max_length = c.context_length;
  // optimum's decoders concatenate past and new keys: no buffer is shared.
  c.search.past_present_share_buffer = false;
  return c;
}

Result<GenaiConfig> load_model_folder(const std::string& dir, const std::string& decoder_file) {
  if (!decoder_file.empty() && !is_file(fs::path(dir) / decoder_file)) {
    return io_error("{}: no decoder file {}", dir, decoder_file);
  }
  if (is_file(fs::path(dir) / "genai_config.json")) {
    EMBER_ASSIGN_OR_RETURN(GenaiConfig config, load_genai_config(dir));
    if (!decoder_file.empty()) config.decoder.filename = decoder_file;
    return config;
  }
  const std::string config_path = dir + "/config.json";
  if (!is_file(config_path)) {
    return io_error("{}: neither genai_config.json (onnxruntime-genai's model builder) nor config.json (Hugging Face "
                    "optimum, transformers.js) is there",
                    dir);
  }
  EMBER_ASSIGN_OR_RETURN(std::string config_text, read_text(config_path));
  std::string generation_text;
  if (is_file(dir + "/generation_config.json")) {
    EMBER_ASSIGN_OR_RETURN(generation_text, read_text(dir + "/generation_config.json"));
  }
  auto config = config_from_hugging_face(config_text, generation_text);
  if (!config.is_ok()) return config.status().with_context(dir + "/");
  config->dir = dir;
  if (!decoder_file.empty()) {
    config->decoder.filename = decoder_file;
  } else {
    EMBER_ASSIGN_OR_RETURN(config->decoder.filename, find_decoder(dir));
  }
  return config;
}

}  // namespace ember::genai
