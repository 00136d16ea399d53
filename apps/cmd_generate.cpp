// `ember generate MODEL_DIR (--prompt TEXT | --prompt-ids 1,2,3) [--max-new-tokens N] [--greedy |
// --temperature T --top-k K --top-p P --min-p P --seed S] [--repetition-penalty R]
// [--presence-penalty P] [--frequency-penalty F] [--stop TEXT]...
// [--threads N] [--max-context N] [--json [--logprobs N]] [--prompt-lookup | --draft-model DIR]
// [--draft-tokens K] [--lookup-ngram N] [--num-beams N [--length-penalty X] [--[no-]early-stopping]
// [--num-return-sequences K]]` (DESIGN.md): encodes the prompt with
// the folder's tokenizer.json (special tokens added as Hugging Face's encode
// does by default) or takes the token ids as given, generates with the engine, and streams the text as it comes
// (never a broken UTF-8 character, never any part of a stop string); with --json
// prints one object with the prompt tokens, generated ids, text and timings instead.
// Speculative decoding (genai/speculative.h) proposes tokens by prompt lookup
// or with a smaller draft model; the output is the same tokens. --num-beams
// runs beam search (genai/beam_search.h) and prints the best hypotheses, one
// line each (--json: a "sequences" list, best first, with their scores).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>

#include "commands.h"
#include "constraint_cli.h"
#include "genai/model_folder.h"
#include "genai/speculative.h"
#include "genai/tokenizer.h"
#include "genai_cli.h"

namespace ember::cli {
namespace {

struct GenerateArgs {
  ModelArgs model;
  std::string prompt;
  std::vector<int64_t> prompt_ids;
  std::optional<int> max_new_tokens;
  bool greedy = false;
  std::optional<float> temperature, top_p, min_p, repetition_penalty, presence_penalty, frequency_penalty;
  std::optional<int> top_k;
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
  bool json = false;
  std::optional<int> logprobs;
  bool prompt_lookup = false;
  std::string draft_model;
  int draft_tokens = 0;  // 0: the method's default
  int lookup_ngram = 3;
  ConstraintArgs constraint;
  int num_beams = 1;
  genai::BeamParams beam;
};

// Draft tokens per model run when --draft-tokens is not given (see
// docs/benchmarks/2026-12-03-speculative.md).
constexpr int kDefaultLookupTokens = 8;
constexpr int kDefaultDraftModelTokens = 4;

int fail(const Status& s) {
  fmt::print(stderr, "ember generate: {}\n", s.to_string());
  return 1;
}

void apply_sampling_flags(const GenerateArgs& a, genai::SamplingParams& s) {
  if (a.greedy) s.greedy = true;
  if (a.temperature || a.top_k || a.top_p || a.min_p) s.greedy = false;
  if (a.temperature) s.temperature = *a.temperature;
  if (a.top_k) s.top_k = *a.top_k;
  if (a.top_p) s.top_p = *a.top_p;
  if (a.min_p) s.min_p = *a.min_p;
  if (a.seed) s.seed = *a.seed;
  if (a.repetition_penalty) s.repetition_penalty = *a.repetition_penalty;
  if (a.presence_penalty) s.presence_penalty = *a.presence_penalty;
  if (a.frequency_penalty) s.frequency_penalty = *a.frequency_penalty;
}

nlohmann::json logprobs_json(const genai::TokenLogprobs& lp) {
  nlohmann::json top = nlohmann::json::array();
  for (const auto& [token, logprob] : lp.top) top.push_back({{"token", token}, {"logprob", logprob}});
  return {{"token", lp.token}, {"logprob", lp.logprob}, {"top", std::move(top)}};
}

// --num-beams N > 1: the best hypotheses, as text lines or one --json object.
int run_beam_search(const GenerateArgs& a, genai::Generator& generator, const genai::Tokenizer& tokenizer,
                    std::span<const int64_t> prompt, const genai::GenerationParams& params) {
  genai::BeamParams beam = a.beam;
  beam.num_beams = a.num_beams;
  auto results = generator.beam_search(prompt, params, beam);
  if (!results.is_ok()) return fail(results.status());
  nlohmann::json sequences = nlohmann::json::array();
  for (const genai::GenerationResult& r : *results) {
    genai::TextStream stream(tokenizer, a.stop);
    for (int64_t token : r.tokens) {
      if (stream.stopped()) break;
      stream.put(static_cast<int32_t>(token));
    }
    stream.finish();
    if (!a.json) {
      fmt::print("{}\n", stream.text());
      continue;
    }
    sequences.push_back({{"generated_tokens", r.tokens},
                         {"text", stream.text()},
                         {"score", r.score},
                         {"stop_reason", stream.stopped() ? "stop_string" : genai::stop_reason_name(r.stop)}});
  }
  if (!a.json) return 0;
  const genai::GenerationStats& st = results->front().stats;
  nlohmann::json out = {{"prompt_tokens", prompt},
                        {"num_beams", beam.num_beams},
                        {"sequences", std::move(sequences)},
                        {"timings",
                         {{"time_to_first_token_s", st.first_token_s},
                          {"prefill_tokens_per_s", st.prefill_tokens_per_s()},
                          {"decode_steps_per_s", st.decode_tokens_per_s()}}}};
  fmt::print("{}\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  return 0;
}

int run_generate(const GenerateArgs& a) {
  if (Status s = genai::validate_stop_strings(a.stop); !s.is_ok()) return fail(s);
  if (a.logprobs && !a.json) return fail(invalid_argument("--logprobs needs --json, where they are printed"));
  if (a.draft_tokens > 0 && !a.prompt_lookup && a.draft_model.empty()) {
    return fail(invalid_argument("--draft-tokens needs --prompt-lookup or --draft-model"));
  }
  if (a.temperature && !std::isfinite(*a.temperature)) {
    return fail(invalid_argument("--temperature {} is not a finite number", *a.temperature));
  }
  if (a.beam.num_return_sequences > a.num_beams) {
    return fail(invalid_argument("--num-return-sequences {} exceeds --num-beams {}: each returned sequence is a beam",
                                 a.beam.num_return_sequences, a.num_beams));
  }
  auto tokenizer = genai::Tokenizer::from_file(a.model.model_dir + "/tokenizer.json");
  if (!tokenizer.is_ok()) return fail(tokenizer.status());
  auto constraint = load_constraint(a.constraint, a.model, *tokenizer);
  if (!constraint.is_ok()) return fail(constraint.status());
  auto generator = load_generator(a.model, a.model.max_context, a.num_beams);
  if (!generator.is_ok()) return fail(generator.status());
  std::vector<int64_t> prompt = a.prompt_ids;
  if (prompt.empty()) {
    const std::vector<int32_t> ids = tokenizer->encode(a.prompt, /*add_special=*/true);
    prompt.assign(ids.begin(), ids.end());
  }

  genai::GenerationParams params = genai::params_from_search((*generator)->config().search,
                                                             static_cast<int64_t>(prompt.size()));
  if (a.max_new_tokens) params.max_new_tokens = *a.max_new_tokens;
  apply_sampling_flags(a, params.sampling);
  if (a.num_beams > 1) {
    // The folder's do_sample does not apply: beams are chosen by log-probability (the sampling flags exclude --num-beams).
    params.sampling.greedy = true;
    return run_beam_search(a, **generator, *tokenizer, prompt, params);
  }

  std::unique_ptr<genai::Generator> draft;
  std::unique_ptr<genai::Drafter> drafter;
  if (a.prompt_lookup) {
    drafter = std::make_unique<genai::PromptLookupDrafter>(1, a.lookup_ngram);
    params.num_draft_tokens = a.draft_tokens > 0 ? a.draft_tokens : kDefaultLookupTokens;
  } else if (!a.draft_model.empty()) {
    ModelArgs draft_args = a.model;
    draft_args.model_dir = a.draft_model;
    draft_args.onnx.clear();
    // The draft's cache needs what the target's holds, or less where its context is shorter.
    auto draft_config = genai::load_model_folder(a.draft_model);
    if (!draft_config.is_ok()) return fail(draft_config.status().with_context("--draft-model: "));
    const int64_t draft_capacity = std::min<int64_t>((*generator)->max_length(), draft_config->context_length);
    auto loaded = load_generator(draft_args, static_cast<int>(draft_capacity));
    if (!loaded.is_ok()) return fail(loaded.status().with_context("--draft-model: "));
    draft = std::move(*loaded);
    if (Status s = genai::check_draft_model(**generator, *draft); !s.is_ok()) return fail(s);
    drafter = std::make_unique<genai::DraftModelDrafter>(*draft);
    params.num_draft_tokens = a.draft_tokens > 0 ? a.draft_tokens : kDefaultDraftModelTokens;
  }
  params.drafter = drafter.get();

  nlohmann::json logprobs = nlohmann::json::array();
  if (a.logprobs) {
    params.top_logprobs = *a.logprobs;
    params.on_logprobs = [&logprobs](const genai::TokenLogprobs& lp) { logprobs.push_back(logprobs_json(lp)); };
  }

  ConstrainedRun constrained(*constraint, params);
  genai::TextStream stream(*tokenizer, a.stop);
  params.on_token = a.json ? [&stream](int64_t token) {
    stream.put(static_cast<int32_t>(token));
    return !stream.stopped();
  } : print_stream(stream);
  auto result = (*generator)->generate(prompt, params);
  if (!result.is_ok()) return fail(result.status());
  const std::string rest = stream.finish();
  const bool stop_string = stream.stopped();
  if (!a.json) {
    fmt::print("{}\n", rest);
    constrained.warn_if_incomplete("ember generate", *result);
    return 0;
  }
  const genai::GenerationStats& st = result->stats;
  nlohmann::json out = {
      {"prompt_tokens", prompt},
      {"generated_tokens", result->tokens},
      {"text", stream.text()},
      {"stop_reason", stop_string ? "stop_string" : genai::stop_reason_name(result->stop)},
      {"timings",
       {{"time_to_first_token_s", st.first_token_s},
        {"prefill_tokens_per_s", st.prefill_tokens_per_s()},
        {"decode_tokens_per_s", st.decode_tokens_per_s()}}}};
  if (a.logprobs) out["logprobs"] = std::move(logprobs);
  if (constrained.active()) out["constraint"] = constrained.report();
  if (drafter) {
    out["speculation"] = {
        {"method", a.prompt_lookup ? "prompt_lookup" : "draft_model"},
        {"draft_tokens", params.num_draft_tokens},
        {"model_runs", st.decode_runs},
        {"drafted", st.drafted_tokens},
        {"accepted", st.accepted_drafts},
        {"acceptance_rate", st.drafted_tokens > 0 ? static_cast<double>(st.accepted_drafts) / st.drafted_tokens : 0.0}};
  }
  fmt::print("{}\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  return 0;
}

}  // namespace

Command add_generate(CLI::App& app) {
  auto a = std::make_shared<GenerateArgs>();
  add_model_options(app, a->model, "Model folder: onnxruntime-genai (genai_config.json) or optimum / transformers.js (config.json), with tokenizer.json");
  auto* prompt = app.add_option("--prompt", a->prompt, "The text to continue");
  auto* ids = app.add_option("--prompt-ids", a->prompt_ids, "The prompt as token ids, comma-separated")->delimiter(',');
  prompt->excludes(ids);
  app.callback([prompt, ids] {
    if (prompt->count() + ids->count() == 0) throw CLI::RequiredError("--prompt or --prompt-ids");
  });
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
  app.add_option("--repetition-penalty", a->repetition_penalty,
                 "Divide positive logits (multiply negative ones) of tokens already seen by this (1: off)")
      ->check(CLI::PositiveNumber);
  app.add_option("--presence-penalty", a->presence_penalty, "Subtract this from the logit of every token already seen");
  app.add_option("--frequency-penalty", a->frequency_penalty, "Subtract this per earlier occurrence of a token");
  app.add_option("--stop", a->stop, "Stop before this text (repeatable); it is not printed");
  app.add_flag("--json", a->json, "Print one JSON object (prompt tokens, generated ids, text, timings) instead of streaming");
  app.add_option("--logprobs", a->logprobs,
                 "With --json: each token's log-probability and this many most likely alternatives (after penalties, "
                 "at the sampling temperature, before top-k/top-p/min-p)")
      ->check(CLI::Range(0, genai::kMaxTopLogprobs));
  auto* lookup = app.add_flag("--prompt-lookup", a->prompt_lookup,
                              "Speculative decoding by prompt lookup: propose the tokens that followed the latest earlier "
                              "occurrence of the text's last n-gram (the same tokens, faster where the text copies its input)");
  auto* draft = app.add_option("--draft-model", a->draft_model,
                               "Speculative decoding with this smaller model folder (same tokenizer) proposing tokens "
                               "greedily (the same tokens; its own --onnx default decoder)")
                    ->check(CLI::ExistingDirectory);
  lookup->excludes(draft);
  app.add_option("--draft-tokens", a->draft_tokens,
                 fmt::format("Tokens proposed per model run (default: {} for --prompt-lookup, {} for --draft-model)",
                             kDefaultLookupTokens, kDefaultDraftModelTokens))
      ->check(CLI::Range(1, 64));
  app.add_option("--lookup-ngram", a->lookup_ngram, "Longest n-gram --prompt-lookup matches (it tries n down to 1)")
      ->check(CLI::Range(1, 16))
      ->needs(lookup);
  add_constraint_options(app, a->constraint);
  auto* beams = app.add_option("--num-beams", a->num_beams,
                               "Beam search with this many beams (1: off), as onnxruntime-genai's; prints the best "
                               "--num-return-sequences hypotheses, one per line")
                    ->check(CLI::Range(1, 64));
  app.add_option("--length-penalty", a->beam.length_penalty,
                 "Beam search: a hypothesis scores its log-probability / length^X, length counting the prompt "
                 "(default 1; larger favours longer hypotheses, 0 none, negative shorter)")
      ->needs(beams);
  app.add_flag("--early-stopping,!--no-early-stopping", a->beam.early_stopping,
               "Beam search: stop once --num-beams hypotheses have ended (the default, as onnxruntime-genai's); "
               "--no-early-stopping: only when no open beam can beat them")
      ->needs(beams);
  app.add_option("--num-return-sequences", a->beam.num_return_sequences,
                 "Beam search: print this many best hypotheses (1 to --num-beams, default 1)")
      ->check(CLI::PositiveNumber)
      ->needs(beams);
  for (auto* opt : {temperature, top_k, top_p, min_p, lookup, draft}) beams->excludes(opt);
  return [a] { return run_generate(*a); };
}

}  // namespace ember::cli
