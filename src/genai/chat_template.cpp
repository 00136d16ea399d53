#include "genai/chat_template.h"

namespace ember::genai {
namespace {

// str(AddedToken) is its content; transformers' special_tokens_map holds strings.
const nlohmann::json* token_text(const nlohmann::json& v) {
  if (v.is_string()) return &v;
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return &v["content"];
  return nullptr;
}

}  // namespace

Result<std::string> select_chat_template(const nlohmann::json& config, bool has_tools) {
  if (!config.contains("chat_template") || config["chat_template"].is_null()) {
    return invalid_argument("tokenizer_config.json has no chat_template");
  }
  const nlohmann::json& t = config["chat_template"];
  if (t.is_string()) return t.get<std::string>();
  if (!t.is_array()) return invalid_argument("tokenizer_config.json: chat_template must be a string or a list");
  std::string by_name[2];
  for (const auto& entry : t) {
    if (!entry.is_object() || !entry.contains("name") || !entry.contains("template") || !entry["name"].is_string() ||
        !entry["template"].is_string()) {
      return invalid_argument("tokenizer_config.json: chat_template list entries need string 'name' and 'template'");
    }
    const std::string name = entry["name"];
    if (name == "default") by_name[0] = entry["template"];
    if (name == "tool_use") by_name[1] = entry["template"];
  }
  if (has_tools && !by_name[1].empty()) return by_name[1];
  if (!by_name[0].empty()) return by_name[0];
  return invalid_argument("tokenizer_config.json: chat_template list has no 'default' template");
}

Result<std::string> render_chat_template(const nlohmann::json& config, const ChatTemplateInput& input,
                                         const jinja::RenderOptions& options) {
  if (!input.messages.is_array()) return invalid_argument("chat messages must be a JSON list");
  const bool has_tools = !input.tools.is_null();
  EMBER_ASSIGN_OR_RETURN(std::string source, select_chat_template(config, has_tools));
  EMBER_ASSIGN_OR_RETURN(jinja::Template tmpl, jinja::Template::parse(source));
  jinja::Dict globals;
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
  for (const auto& [k, v] : input.extra.items()) globals.emplace_back(k, jinja::Value::from_json(v));
  globals.emplace_back("messages", jinja::Value::from_json(input.messages));
  globals.emplace_back("tools", has_tools ? jinja::Value::from_json(input.tools) : jinja::Value::none());
  globals.emplace_back("documents", jinja::Value::none());
  globals.emplace_back("add_generation_prompt", jinja::Value(input.add_generation_prompt));
  return tmpl.render(globals, options);
}

}  // namespace ember::genai
