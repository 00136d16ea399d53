// A chat template's source and a messages JSON (after a NUL) -> parse and
// render, as tokenizer_config.json's chat_template is loaded and the server
// renders a client's messages. Messages that do not parse as a JSON array are
// replaced by a fixed conversation, so every template also renders.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz_input.h"
#include "genai/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto [source, messages] = ember::fuzz::split_at_nul(data, size);
  nlohmann::json config = {{"chat_template", std::string(source)}, {"bos_token", "<s>"}, {"eos_token", "</s>"}};
  auto chat_template = ember::genai::ChatTemplate::from_config(config, "fuzz");
  if (!chat_template.is_ok()) return 0;
  ember::genai::ChatTemplateInput input;
  input.messages = nlohmann::ordered_json::parse(messages, nullptr, /*allow_exceptions=*/false);
  if (!input.messages.is_array()) {
    input.messages = nlohmann::ordered_json::array({{{"role", "system"}, {"content", "Be brief."}},
                                                    {{"role", "user"}, {"content", "Hi"}},
                                                    {{"role", "assistant"}, {"content", "Hello."}},
                                                    {{"role", "user"}, {"content", "Tell me a fortune"}}});
  }
  input.add_generation_prompt = true;
  input.extra["enable_thinking"] = false;
  ember::genai::jinja::RenderOptions options;
  options.strftime_now = [](const std::string&) { return std::string("04 Dec 2026"); };
  auto text = chat_template->render(input, options);
  return 0;
}
