// `ember chat MODEL_DIR [--system TEXT] [--max-new-tokens N] [--threads N]`:
// a REPL over an onnxruntime-genai model folder. Each line is a user turn: the
// whole conversation is rendered with the folder's chat template and encoded
// without added special tokens (as apply_chat_template(tokenize=True) does); the
// generator keeps the KV cache of the prefix it shares with the previous turn and
// prefills only the new tokens. The reply streams, then one stats line.
// Commands: /system TEXT (new conversation with that system prompt), /reset,
// /stats (the last turn's numbers again), /exit.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "genai/chat_template.h"
#include "genai/generator.h"
#include "genai/tokenizer.h"

namespace ember::cli {
namespace {

struct ChatArgs {
  std::string model_dir;
  std::string system;
  int max_new_tokens = 512;
  int threads = 0;
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
  std::ifstream config_file(a.model_dir + "/tokenizer_config.json");
  if (!config_file) return fail(io_error("cannot open {}/tokenizer_config.json", a.model_dir));
  const nlohmann::json config = nlohmann::json::parse(config_file, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded()) return fail(invalid_model("{}/tokenizer_config.json is not valid JSON", a.model_dir));
  if (auto t = genai::select_chat_template(config, false); !t.is_ok()) return fail(t.status());
  auto tokenizer = genai::Tokenizer::from_file(a.model_dir + "/tokenizer.json");
  if (!tokenizer.is_ok()) return fail(tokenizer.status());
  genai::GeneratorOptions options;
  options.num_threads = a.threads;
  auto generator = genai::Generator::load(a.model_dir, options);
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
    auto text = genai::render_chat_template(config, input);
    if (!text.is_ok()) return fail(text.status());
    const std::vector<int32_t> ids = tokenizer->encode(*text, /*add_special=*/false);
    const std::vector<int64_t> prompt(ids.begin(), ids.end());
    genai::GenerationParams params =
        genai::params_from_search((*generator)->config().search, static_cast<int64_t>(prompt.size()));
    params.max_new_tokens = a.max_new_tokens;
    genai::StreamingDetokenizer stream(*tokenizer, /*skip_special=*/true);
    params.on_token = [&](int64_t token) {
      const std::string piece = stream.put(static_cast<int32_t>(token));
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
      return true;
    };
    auto result = (*generator)->generate(prompt, params);
    if (!result.is_ok()) {
      fmt::print(stderr, "\nember chat: {}\n", result.status().to_string());
      messages.erase(messages.end() - 1);
      continue;
    }
    fmt::print("{}\n", stream.finish());
    const std::vector<int32_t> reply(result->tokens.begin(), result->tokens.end());
    messages.push_back({{"role", "assistant"}, {"content", tokenizer->decode(reply, /*skip_special=*/true)}});
    last = result->stats;
    fmt::print("{}\n", stats_line(last));
  }
  return 0;
}

}  // namespace

Command add_chat(CLI::App& app) {
  auto a = std::make_shared<ChatArgs>();
  app.add_option("model_dir", a->model_dir, "An onnxruntime-genai model folder with tokenizer_config.json's chat_template")
      ->required()
      ->check(CLI::ExistingDirectory);
  app.add_option("--system", a->system, "System prompt of the conversation");
  app.add_option("--max-new-tokens", a->max_new_tokens, "At most this many tokens per reply")->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--threads", a->threads, "Threads (default: the folder's setting, else one per physical core)")
      ->check(CLI::NonNegativeNumber);
  return [a] { return run_chat(*a); };
}

}  // namespace ember::cli
