// `ember generate MODEL_DIR --prompt TEXT [--max-new-tokens N] [--greedy |
// --temperature T --top-k K --top-p P --min-p P --seed S] [--json]`
// (DESIGN.md): encodes the prompt with the folder's tokenizer.json (special
// tokens added as Hugging Face's encode does by default), generates with the
// engine, and streams the text as it comes (never a broken UTF-8 character);
// with --json prints one object with the prompt tokens, generated ids, text and
// timings instead.
#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>

#include "commands.h"
#include "genai/generator.h"
#include "genai/tokenizer.h"

namespace ember::cli {
namespace {

struct GenerateArgs {
  std::string model_dir;
  std::string prompt;
  std::optional<int> max_new_tokens;
  bool greedy = false;
  std::optional<float> temperature, top_p, min_p;
  std::optional<int> top_k;
  std::optional<uint64_t> seed;
  int threads = 0;
  bool json = false;
};

int fail(const Status& s) {
  fmt::print(stderr, "ember generate: {}\n", s.to_string());
  return 1;
}

int run_generate(const GenerateArgs& a) {
  auto tokenizer = genai::Tokenizer::from_file(a.model_dir + "/tokenizer.json");
  if (!tokenizer.is_ok()) return fail(tokenizer.status());
  genai::GeneratorOptions options;
  options.num_threads = a.threads;
  auto generator = genai::Generator::load(a.model_dir, options);
  if (!generator.is_ok()) return fail(generator.status());
  const std::vector<int32_t> ids = tokenizer->encode(a.prompt, /*add_special=*/true);
  const std::vector<int64_t> prompt(ids.begin(), ids.end());

  genai::GenerationParams params = genai::params_from_search((*generator)->config().search,
                                                             static_cast<int64_t>(prompt.size()));
  if (a.max_new_tokens) params.max_new_tokens = *a.max_new_tokens;
  genai::SamplingParams& s = params.sampling;
  const bool sampling_flags = a.temperature || a.top_k || a.top_p || a.min_p;
  if (a.greedy) s.greedy = true;
  if (sampling_flags) s.greedy = false;
  if (a.temperature) s.temperature = *a.temperature;
  if (a.top_k) s.top_k = *a.top_k;
  if (a.top_p) s.top_p = *a.top_p;
  if (a.min_p) s.min_p = *a.min_p;
  if (a.seed) s.seed = *a.seed;

  genai::StreamingDetokenizer stream(*tokenizer, /*skip_special=*/true);
  if (!a.json) {
    params.on_token = [&](int64_t token) {
      const std::string text = stream.put(static_cast<int32_t>(token));
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
      return true;
    };
  }
  auto result = (*generator)->generate(prompt, params);
  if (!result.is_ok()) return fail(result.status());
  if (!a.json) {
    const std::string rest = stream.finish();
    std::fwrite(rest.data(), 1, rest.size(), stdout);
    std::fputc('\n', stdout);
    return 0;
  }
  const std::vector<int32_t> generated(result->tokens.begin(), result->tokens.end());
  const genai::GenerationStats& st = result->stats;
  nlohmann::json out = {
      {"prompt_tokens", prompt},
      {"generated_tokens", result->tokens},
      {"text", tokenizer->decode(generated, /*skip_special=*/true)},
      {"stop_reason", genai::stop_reason_name(result->stop)},
      {"timings",
       {{"time_to_first_token_s", st.first_token_s},
        {"prefill_tokens_per_s", st.prefill_tokens_per_s()},
        {"decode_tokens_per_s", st.decode_tokens_per_s()}}}};
  fmt::print("{}\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  return 0;
}

}  // namespace

Command add_generate(CLI::App& app) {
  auto a = std::make_shared<GenerateArgs>();
  app.add_option("model_dir", a->model_dir, "An onnxruntime-genai model folder (genai_config.json, model, tokenizer.json)")
      ->required()
      ->check(CLI::ExistingDirectory);
  app.add_option("--prompt", a->prompt, "The text to continue")->required();
  app.add_option("--max-new-tokens", a->max_new_tokens, "At most this many new tokens (default: the folder's search.max_length)")
      ->check(CLI::PositiveNumber);
  auto* greedy = app.add_flag("--greedy", a->greedy, "Always the most likely token (the default unless sampling options are given)");
  auto* temperature = app.add_option("--temperature", a->temperature, "Sampling temperature")->check(CLI::NonNegativeNumber);
  auto* top_k = app.add_option("--top-k", a->top_k, "Sample among the k most likely tokens")->check(CLI::NonNegativeNumber);
  auto* top_p = app.add_option("--top-p", a->top_p, "Nucleus sampling mass")->check(CLI::Range(0.0, 1.0));
  auto* min_p = app.add_option("--min-p", a->min_p, "Drop tokens below this fraction of the top probability")
                    ->check(CLI::Range(0.0, 1.0));
  for (auto* opt : {temperature, top_k, top_p, min_p}) greedy->excludes(opt);
  app.add_option("--seed", a->seed, "Random seed for sampling");
  app.add_option("--threads", a->threads, "Threads (default: the folder's setting, else one per physical core)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--json", a->json, "Print one JSON object (prompt tokens, generated ids, text, timings) instead of streaming");
  return [a] { return run_generate(*a); };
}

}  // namespace ember::cli
