// `ember chat MODEL_DIR [--system TEXT] [--max-new-tokens N] [--stop TEXT]...
// [--threads N] [--max-context N]`:
// a REPL over an onnxruntime-genai model folder. Each line is a user turn: the
// whole conversation is rendered with the folder's chat template and encoded
// without added special tokens (as apply_chat_template(tokenize=True) does); the
// generator keeps the KV cache of the prefix it shares with the previous turn and
// prefills only the new tokens. The reply streams, then one stats line.
// Commands: /system TEXT (new conversation with that system prompt), /reset,
// /stats (the last turn's numbers again), /exit.
#include <fmt/format.h>

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "genai/chat_template.h"
#include "genai/tokenizer.h"
#include "genai_cli.h"

namespace ember::cli {
namespace {

struct ChatArgs {
  ModelArgs model;
  std::string system;
  int max_new_tokens = 512;
  std::vector<std::string> stop;
};

int fail(const Status& s) {
  fmt::print(stderr, "ember chat: {}\n", s.to_string());
  return 1;
}

std::string stats_line(const genai::GenerationStats& st) {
  return fmt::format("[{} tokens in ({} new), {} out | prefill {:.1f} tok/s | decode {:.1f} tok/s | first token {:.0f} ms]",
                     st.prompt_tokens, st.prompt_tokens - st.reused_tokens, st.generated_tokens,
                     st.prefill_tokens_per_s(), st.decode_tokens_per_s(), st.first_token_s * 1e3);
}

nlohmann::ordered_json fresh_conversation(const std::string& system) {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!system.empty()) messages.push_back({{"role", "system"}, {"content", system}});
  return messages;
}

int run_chat(const ChatArgs& a) {
  if (Status s = genai::validate_stop_strings(a.stop); !s.is_ok()) return fail(s);
  const std::string& dir = a.model.model_dir;
  auto chat_template = genai::ChatTemplate::load(dir);
  if (!chat_template.is_ok()) return fail(chat_template.status());
  auto tokenizer = genai::Tokenizer::from_file(dir + "/tokenizer.json");
  if (!tokenizer.is_ok()) return fail(tokenizer.status());
  auto generator = load_generator(a.model, a.model.max_context);
  if (!generator.is_ok()) return fail(generator.status());

  nlohmann::ordered_json messages = fresh_conversation(a.system);
  genai::GenerationStats last;
  std::string line;
  while (fmt::print("> "), std::fflush(stdout), std::getline(std::cin, line)) {
    if (line == "/exit") break;
    if (line == "/reset" || line.rfind("/system", 0) == 0) {
      const std::string system = line == "/reset" ? a.system : line.substr(std::min<size_t>(line.size(), 8));
      messages = fresh_conversation(system);
      continue;
    }
    if (line == "/stats") {
      fmt::print("{}\n", stats_line(last));
      continue;
    }
    if (line.empty()) continue;
    messages.push_back({{"role", "user"}, {"content", line}});
    genai::ChatTemplateInput input;
    input.messages = messages;
    input.add_generation_prompt = true;
    auto text = chat_template->render(input);
    if (!text.is_ok()) return fail(text.status().with_context("chat template: "));
    const std::vector<int32_t> ids = tokenizer->encode(*text, /*add_special=*/false);
    const std::vector<int64_t> prompt(ids.begin(), ids.end());
    genai::GenerationParams params =
        genai::params_from_search((*generator)->config().search, static_cast<int64_t>(prompt.size()));
    params.max_new_tokens = a.max_new_tokens;
    genai::TextStream stream(*tokenizer, a.stop);
    params.on_token = print_stream(stream);
    auto result = (*generator)->generate(prompt, params);
    if (!result.is_ok()) {
      fmt::print(stderr, "\nember chat: {}\n", result.status().to_string());
      messages.erase(messages.end() - 1);
      continue;
    }
    fmt::print("{}\n", stream.finish());
    messages.push_back({{"role", "assistant"}, {"content", stream.text()}});
    last = result->stats;
    fmt::print("{}\n", stats_line(last));
  }
  return 0;
}

}  // namespace

Command add_chat(CLI::App& app) {
  auto a = std::make_shared<ChatArgs>();
  add_model_options(app, a->model, "Model folder (onnxruntime-genai or optimum / transformers.js) with tokenizer_config.json's chat_template");
  app.add_option("--system", a->system, "System prompt of the conversation");
  app.add_option("--max-new-tokens", a->max_new_tokens, "At most this many tokens per reply")->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--stop", a->stop, "End a reply before this text (repeatable)");
  return [a] { return run_chat(*a); };
}

}  // namespace ember::cli
