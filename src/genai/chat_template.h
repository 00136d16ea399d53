#pragma once
// Chat templates as Hugging Face transformers' apply_chat_template renders them:
// the tokenizer_config.json chat_template (a string, or a list of named
// templates), rendered with messages, tools, add_generation_prompt and the
// special tokens (bos/eos/unk/sep/pad/cls/mask, additional_special_tokens).
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

// The template text transformers picks: a string as is; of a list of named
// templates, "tool_use" when tools are given and it exists, else "default".
Result<std::string> select_chat_template(const nlohmann::json& tokenizer_config, bool has_tools);

Result<std::string> render_chat_template(const nlohmann::json& tokenizer_config, const ChatTemplateInput& input,
                                         const jinja::RenderOptions& options = {});

}  // namespace ember::genai
