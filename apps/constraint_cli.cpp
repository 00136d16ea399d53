#include "constraint_cli.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "genai/gbnf.h"
#include "genai/model_folder.h"

namespace ember::cli {
namespace {

Result<std::string> read_text(const std::string& path, const char* flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return invalid_argument("{} {}: cannot read the file", flag, path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The chain owns its processors; this one shares the mask with ConstrainedRun,
// which reads its state after the chain is gone.
class SharedMask final : public genai::LogitsProcessor {
 public:
  explicit SharedMask(std::shared_ptr<genai::GrammarMask> mask) : mask_(std::move(mask)) {}
  std::string_view name() const override { return mask_->name(); }
  void apply(genai::SamplingStep& step) override { mask_->apply(step); }
  void accept(int64_t token) override { mask_->accept(token); }
  void reset() override { mask_->reset(); }
  std::string failure() override { return mask_->failure(); }

 private:
  std::shared_ptr<genai::GrammarMask> mask_;
};

}  // namespace

void add_constraint_options(CLI::App& app, ConstraintArgs& args) {
  auto* schema = app.add_option("--json-schema", args.json_schema,
                                "Constrain the output to a JSON document valid under this JSON Schema file (types, "
                                "properties/required, enum/const, arrays with min/maxItems, anyOf/oneOf/allOf, $ref, "
                                "string length, pattern and format)")
                     ->check(CLI::ExistingFile);
  auto* object = app.add_flag("--json-object", args.json_object, "Constrain the output to a JSON object (any object)");
  auto* regex = app.add_option("--regex", args.regex,
                               "Constrain the output to match this regular expression (Rust regex syntax, anchored at "
                               "both ends)");
  auto* grammar = app.add_option("--grammar", args.grammar,
                                 "Constrain the output to this context-free grammar file: llama.cpp GBNF (root ::= ...) "
                                 "or llguidance Lark (start: ...); see --grammar-syntax")
                      ->check(CLI::ExistingFile);
  app.add_option("--grammar-syntax", args.grammar_syntax,
                 "How --grammar is read: gbnf, lark, or auto (default: a .gbnf or .lark extension decides, else "
                 "GBNF when the first rule is written 'name ::= ...', else Lark)")
      ->check(CLI::IsMember({"auto", "gbnf", "lark"}));
  const std::vector<CLI::Option*> options{schema, object, regex, grammar};
  for (size_t i = 0; i < options.size(); ++i) {
    for (size_t j = i + 1; j < options.size(); ++j) options[i]->excludes(options[j]);
  }
}

Result<std::shared_ptr<const genai::Constraint>> load_constraint(const ConstraintArgs& args, const ModelArgs& model,
                                                                 const genai::Tokenizer& tokenizer) {
  genai::ConstraintSpec spec;
  if (!args.json_schema.empty()) {
    spec.kind = genai::ConstraintKind::kJsonSchema;
    EMBER_ASSIGN_OR_RETURN(spec.text, read_text(args.json_schema, "--json-schema"));
    spec.origin = "--json-schema " + args.json_schema;
  } else if (args.json_object) {
    spec.kind = genai::ConstraintKind::kJsonObject;
    spec.origin = "--json-object";
  } else if (!args.regex.empty()) {
    spec.kind = genai::ConstraintKind::kRegex;
    spec.text = args.regex;
    spec.origin = "--regex";
  } else if (!args.grammar.empty()) {
    EMBER_ASSIGN_OR_RETURN(spec.text, read_text(args.grammar, "--grammar"));
    bool gbnf = args.grammar_syntax == "gbnf";
    if (args.grammar_syntax == "auto") {
      if (args.grammar.ends_with(".gbnf")) {
        gbnf = true;
      } else if (!args.grammar.ends_with(".lark")) {
        gbnf = genai::looks_like_gbnf(spec.text);
      }
    }
    spec.kind = gbnf ? genai::ConstraintKind::kGbnf : genai::ConstraintKind::kLark;
    spec.origin = fmt::format("--grammar {} ({})", args.grammar, gbnf ? "GBNF" : "Lark");
  } else {
    return std::shared_ptr<const genai::Constraint>();
  }
  // The folder's config (EOS ids, logits rows) without loading the weights: a bad
  // constraint fails before the model loads, let alone before a token is generated.
  EMBER_ASSIGN_OR_RETURN(genai::GenaiConfig config, genai::load_model_folder(model.model_dir, model.onnx));
  EMBER_ASSIGN_OR_RETURN(auto vocabulary,
                         genai::ConstraintVocabulary::create(tokenizer, config.eos_token_ids, config.vocab_size));
  return genai::Constraint::compile(std::move(vocabulary), spec);
}

ConstrainedRun::ConstrainedRun(std::shared_ptr<const genai::Constraint> constraint, genai::GenerationParams& params)
    : constraint_(std::move(constraint)) {
  if (!constraint_) return;
  // EMBER_CONSTRAINT_OVERLAP=0 computes each mask inside the sampler step instead
  // of during the model run (tools/bench_structured_output.py compares the two).
  const char* overlap_env = std::getenv("EMBER_CONSTRAINT_OVERLAP");
  const bool overlap = !(overlap_env && std::string_view(overlap_env) == "0");
  params.make_constraint = [this, overlap]() -> std::unique_ptr<genai::LogitsProcessor> {
    mask_ = std::shared_ptr<genai::GrammarMask>(constraint_->make_mask(overlap).release());
    return std::make_unique<SharedMask>(mask_);
  };
}

nlohmann::json ConstrainedRun::report() const {
  if (!constraint_) return nullptr;
  const bool complete = mask_ && mask_->complete();
  const std::string error = mask_ ? mask_->failure() : std::string("no sequence was generated");
  nlohmann::json out = {{"type", genai::constraint_kind_name(constraint_->spec().kind)},
                        {"complete", complete},
                        {"error", error.empty() ? nlohmann::json(nullptr) : nlohmann::json(error)}};
  if (mask_) {
    // Mask cost per step: computing it (worker or inline) and the sampler's wait plus masking pass.
    out["masks"] = mask_->masks_computed();
    out["mask_ms_mean"] = mask_->masks_computed() ? 1e3 * mask_->mask_seconds() / mask_->masks_computed() : 0.0;
    out["apply_ms_mean"] = mask_->applied() ? 1e3 * mask_->apply_seconds() / mask_->applied() : 0.0;
  }
  return out;
}

void ConstrainedRun::warn_if_incomplete(const char* command, const genai::GenerationResult& result) const {
  if (!constraint_ || !mask_) return;
  const std::string error = mask_->failure();
  if (!error.empty()) {
    fmt::print(stderr, "{}: the constraint failed: {}\n", command, error);
  } else if (!mask_->complete()) {
    fmt::print(stderr, "{}: the output is not a complete {} document: generation stopped by {}\n", command,
               genai::constraint_kind_name(constraint_->spec().kind), genai::stop_reason_name(result.stop));
  }
}

}  // namespace ember::cli
