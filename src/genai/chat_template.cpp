#include "genai/chat_template.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/json.h"

namespace ember::genai {
namespace {

// str(AddedToken) is its content; transformers' special_tokens_map holds strings.
const nlohmann::json* token_text(const nlohmann::json& v) {
  if (v.is_string()) return &v;
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return &v["content"];
  return nullptr;
}

jinja::Dict special_tokens(const nlohmann::json& config) {
  jinja::Dict globals;
  if (!config.is_object()) return globals;
  for (const char* key : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}) {
    if (!config.contains(key)) continue;
    if (const nlohmann::json* text = token_text(config[key])) globals.emplace_back(key, jinja::Value(text->get<std::string>()));
  }
  if (config.contains("additional_special_tokens") && config["additional_special_tokens"].is_array()) {
    jinja::List extra;
    for (const auto& t : config["additional_special_tokens"]) {
      if (const nlohmann::json* text = token_text(t)) extra.emplace_back(text->get<std::string>());
    }
    globals.emplace_back("additional_special_tokens", jinja::Value(std::move(extra)));
  }
  return globals;
}

Result<std::string> read_text(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return io_error("cannot open {}", path.string());
  std::ostringstream text;
  text << f.rdbuf();
  return text.str();
}

using Sources = std::map<std::string, std::pair<std::string, std::string>>;  // name -> (where, source)

// tokenizer_config.json's chat_template entry; empty when it has none.
Result<Sources> config_sources(const nlohmann::json& config, const std::string& where) {
  Sources sources;
  if (!config.is_object() || !config.contains("chat_template") || config["chat_template"].is_null()) return sources;
  const nlohmann::json& t = config["chat_template"];
  const std::string at = where + ": chat_template";
  if (t.is_string()) {
    sources["default"] = {at, t.get<std::string>()};
    return sources;
  }
  if (!t.is_array()) return invalid_model("{} must be a string or a list", at);
  for (const auto& entry : t) {
    if (!entry.is_object() || !entry.contains("name") || !entry.contains("template") || !entry["name"].is_string() ||
        !entry["template"].is_string()) {
      return invalid_model("{}: list entries need string 'name' and 'template'", at);
    }
    const std::string name = entry["name"];
    sources[name] = {fmt::format("{} '{}'", at, name), entry["template"].get<std::string>()};
  }
  return sources;
}

}  // namespace

Result<ChatTemplate> ChatTemplate::from_sources(const Sources& sources, const nlohmann::json& config) {
  ChatTemplate t;
  for (const auto& [name, where_source] : sources) {
    const auto& [where, source] = where_source;
    auto parsed = jinja::Template::parse(source);
    if (!parsed.is_ok()) return parsed.status().with_context(where + ": ");
    t.templates_.emplace(name, Named{where, source, std::move(*parsed)});
  }
  if (!t.templates_.count("default")) {
    std::string names;
    for (const auto& [name, _] : sources) names += (names.empty() ? "'" : ", '") + name + "'";
    return invalid_model("{}: chat templates {} but none named 'default'", sources.begin()->second.first, names);
  }
  try {
    t.special_tokens_ = special_tokens(config);
  } catch (const jinja::Error& e) {  // additional_special_tokens past jinja::kMaxListItems
    return invalid_model("{}: {}", sources.begin()->second.first, e.what());
  }
  return t;
}

Result<ChatTemplate> ChatTemplate::from_config(const nlohmann::json& config, const std::string& where) {
  EMBER_ASSIGN_OR_RETURN(Sources sources, config_sources(config, where));
  if (sources.empty()) return Status(StatusCode::kNotFound, fmt::format("{} has no chat_template", where));
  return from_sources(sources, config);
}

Result<ChatTemplate> ChatTemplate::load(const std::string& model_dir) {
  namespace fs = std::filesystem;
  const fs::path dir(model_dir);
  nlohmann::json config;
  const fs::path config_path = dir / "tokenizer_config.json";
  if (fs::exists(config_path)) {
    EMBER_ASSIGN_OR_RETURN(std::string text, read_text(config_path));
    std::string why;
    config = parse_json<nlohmann::json>(text, &why);
    if (config.is_discarded()) return invalid_model("{} {}", config_path.string(), why);
  }
  Sources sources;
  if (const fs::path file = dir / "chat_template.jinja"; fs::exists(file)) {
    EMBER_ASSIGN_OR_RETURN(std::string text, read_text(file));
    sources["default"] = {file.string(), std::move(text)};
  }
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir / "additional_chat_templates", ec)) {
    if (entry.path().extension() != ".jinja") continue;
    EMBER_ASSIGN_OR_RETURN(std::string text, read_text(entry.path()));
    sources[entry.path().stem().string()] = {entry.path().string(), std::move(text)};
  }
  if (sources.empty()) {
    EMBER_ASSIGN_OR_RETURN(sources, config_sources(config, config_path.string()));
  }
  if (sources.empty()) {
    return Status(StatusCode::kNotFound,
                  fmt::format("{} has no chat template (chat_template.jinja, additional_chat_templates/ or "
                              "tokenizer_config.json's chat_template)",
                              model_dir));
  }
  return from_sources(sources, config);
}

const ChatTemplate::Named& ChatTemplate::pick(bool has_tools) const {
  if (has_tools) {
    if (auto it = templates_.find("tool_use"); it != templates_.end()) return it->second;
  }
  return templates_.at("default");
}

Result<std::string> ChatTemplate::render(const ChatTemplateInput& input, const jinja::RenderOptions& options) const {
  if (!input.messages.is_array()) return invalid_argument("chat messages must be a JSON list");
  const bool has_tools = !input.tools.is_null();
  const Named& t = pick(has_tools);
  jinja::Dict globals = special_tokens_;
  try {  // a list past the template's bounds (jinja::kMaxListItems)
    for (const auto& [k, v] : input.extra.items()) globals.emplace_back(k, jinja::Value::from_json(v));
    globals.emplace_back("messages", jinja::Value::from_json(input.messages));
    globals.emplace_back("tools", has_tools ? jinja::Value::from_json(input.tools) : jinja::Value::none());
  } catch (const jinja::Error& e) {
    return invalid_argument("chat template input: {}", e.what());
  }
  globals.emplace_back("documents", jinja::Value::none());
  globals.emplace_back("add_generation_prompt", jinja::Value(input.add_generation_prompt));
  return t.parsed.render(globals, options);
}

}  // namespace ember::genai
