// A request body of `ember serve` -> what its routes do before generating:
// parse the JSON, read it as a chat and as a completion request (every refusal
// an ApiError), render an accepted chat through models/default's chat template
// and tokenize it. The same bytes, as generated text, go through both
// tool-call parsers in two pieces.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "genai/chat_template.h"
#include "genai/tokenizer.h"
#include "server/api.h"
#include "server/tool_calls.h"

namespace {

std::unique_ptr<ember::genai::ChatTemplate> g_template;
std::unique_ptr<ember::genai::Tokenizer> g_tokenizer;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const std::string folder = std::string(EMBER_SOURCE_DIR) + "/models/default";
  auto chat_template = ember::genai::ChatTemplate::load(folder);
  auto tokenizer = ember::genai::Tokenizer::from_file(folder + "/tokenizer.json");
  if (!chat_template.is_ok() || !tokenizer.is_ok()) std::abort();
  g_template = std::make_unique<ember::genai::ChatTemplate>(std::move(*chat_template));
  g_tokenizer = std::make_unique<ember::genai::Tokenizer>(std::move(*tokenizer));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (auto format : {ember::server::ToolCallFormat::kHermes, ember::server::ToolCallFormat::kLlama3Json}) {
    ember::server::ToolCallParser parser(format, "call_0_");
    parser.put(text.substr(0, size / 2));
    parser.put(text.substr(size / 2));
    parser.finish();
  }
  nlohmann::ordered_json body;
  if (ember::server::parse_request_body(text, body)) return 0;
  ember::server::ApiLimits limits;
  ember::server::CompletionRequest completion;
  auto completion_error = ember::server::parse_completion_request(body, limits, completion);
  ember::server::ChatRequest chat;
  if (ember::server::parse_chat_request(body, limits, chat)) return 0;
  ember::genai::ChatTemplateInput input;
  input.messages = chat.messages;
  input.tools = chat.tools;
  input.add_generation_prompt = true;
  auto prompt = g_template->render(input);
  if (prompt.is_ok()) g_tokenizer->encode(*prompt, false);
  return 0;
}
