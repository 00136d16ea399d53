#pragma once
// Chat templates as Hugging Face transformers' apply_chat_template renders them,
// found in a model folder where AutoTokenizer.from_pretrained finds them, and
// rendered with messages, tools, add_generation_prompt and the special tokens
// (bos/eos/unk/sep/pad/cls/mask, additional_special_tokens).
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "genai/jinja/template.h"

namespace ember::genai {

struct ChatTemplateInput {
  // Ordered, so tojson prints keys in the order the caller gave them, as Python does.
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;  // null: no tools (the template sees None)
  bool add_generation_prompt = false;
  // Extra template variables (e.g. enable_thinking), as apply_chat_template's **kwargs.
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
};

// A model's named chat templates, each parsed once.
class ChatTemplate {
 public:
  // The folder's templates, as transformers 4.57 loads them: chat_template.jinja
  // ("default") and additional_chat_templates/NAME.jinja when either exists (they
  // replace tokenizer_config.json's), else tokenizer_config.json's chat_template.
  // The special tokens come from tokenizer_config.json when there is one.
  // kNotFound when the folder has no template; other errors name the file.
  static Result<ChatTemplate> load(const std::string& model_dir);
  // tokenizer_config.json's chat_template (a string, or a list of
  // {"name", "template"}) and special tokens; `where` prefixes error messages.
  static Result<ChatTemplate> from_config(const nlohmann::json& tokenizer_config,
                                          const std::string& where = "tokenizer_config.json");

  // The template transformers picks: "tool_use" when tools are given and it
  // exists, else "default".
  const std::string& source(bool has_tools) const { return pick(has_tools).source; }
  // Errors carry the template's line and column, not its file: the server shows them to clients.
  Result<std::string> render(const ChatTemplateInput& input, const jinja::RenderOptions& options = {}) const;

 private:
  struct Named {
    std::string where;  // the file (and entry) it came from, for errors
    std::string source;
    jinja::Template parsed;
  };
  static Result<ChatTemplate> from_sources(const std::map<std::string, std::pair<std::string, std::string>>& sources,
                                           const nlohmann::json& tokenizer_config);
  const Named& pick(bool has_tools) const;

  std::map<std::string, Named> templates_;  // by name; always holds "default"
  jinja::Dict special_tokens_;
};

}  // namespace ember::genai
