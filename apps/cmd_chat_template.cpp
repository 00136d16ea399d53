// `ember chat-template MODEL_DIR --messages FILE.json [--add-generation-prompt] [--tools FILE.json]`
#include <fmt/format.h>

#include <fstream>
#include <iterator>
#include <string>

#include "base/json.h"
#include "commands.h"
#include "genai/chat_template.h"

namespace ember::cli {
namespace {

Result<nlohmann::ordered_json> read_json(const std::string& path) {
  std::ifstream f(path);
  if (!f) return io_error("cannot open {}", path);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (std::string deep = json_depth_error(text); !deep.empty()) return invalid_argument("{} {}", path, deep);
  try {
    return nlohmann::ordered_json::parse(text);
  } catch (const std::exception& e) {
    return invalid_argument("{}: malformed JSON: {}", path, e.what());
  }
}

}  // namespace

Command add_chat_template(CLI::App& app) {
  struct Options {
    std::string model_dir, messages, tools;
    bool add_generation_prompt = false;
  };
  auto o = std::make_shared<Options>();
  app.add_option("model_dir", o->model_dir, "Model folder with a chat template (chat_template.jinja or tokenizer_config.json)")->required();
  app.add_option("--messages", o->messages, "JSON file with an OpenAI-style message list")->required();
  app.add_option("--tools", o->tools, "JSON file with a list of tool schemas");
  app.add_flag("--add-generation-prompt", o->add_generation_prompt, "End with the assistant turn's header");
  return [o]() {
    auto fail = [](const Status& s) {
      fmt::print(stderr, "error: {}\n", s.to_string());
      return 1;
    };
    auto chat_template = genai::ChatTemplate::load(o->model_dir);
    if (!chat_template.is_ok()) return fail(chat_template.status());
    genai::ChatTemplateInput input;
    auto messages = read_json(o->messages);
    if (!messages.is_ok()) return fail(messages.status());
    input.messages = *messages;
    if (!o->tools.empty()) {
      auto tools = read_json(o->tools);
      if (!tools.is_ok()) return fail(tools.status());
      input.tools = *tools;
    }
    input.add_generation_prompt = o->add_generation_prompt;
    auto text = chat_template->render(input);
    if (!text.is_ok()) return fail(text.status());
    fmt::print("{}", *text);
    return 0;
  };
}

}  // namespace ember::cli
