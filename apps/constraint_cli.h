#pragma once
// Structured output on the command line (`ember generate`): --json-schema FILE,
// --json-object, --regex R, --grammar FILE [--grammar-syntax], compiled over
// the model folder's tokenizer before the weights load, and the report of
// whether the output is a complete document.
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "base/status.h"
#include "genai/constraint.h"
#include "genai/generator.h"
#include "genai/tokenizer.h"
#include "genai_cli.h"

namespace ember::cli {

struct ConstraintArgs {
  std::string json_schema;  // a file
  bool json_object = false;
  std::string regex;
  std::string grammar;  // a file
  std::string grammar_syntax = "auto";
};

void add_constraint_options(CLI::App& app, ConstraintArgs& args);

// The constraint the flags ask for, checked and compiled over the folder's
// tokenizer and EOS ids; null when no flag asks for one.
Result<std::shared_ptr<const genai::Constraint>> load_constraint(const ConstraintArgs& args, const ModelArgs& model,
                                                                 const genai::Tokenizer& tokenizer);

// Puts `constraint` (may be null) into `params` and remembers the sequence's
// mask, to report once generation ends.
class ConstrainedRun {
 public:
  ConstrainedRun(std::shared_ptr<const genai::Constraint> constraint, genai::GenerationParams& params);
  bool active() const { return constraint_ != nullptr; }
  // {"type", "complete", "error"}: complete is true only when the text is a
  // whole document of the constraint (a cut by max_new_tokens is not).
  nlohmann::json report() const;
  // A line on stderr when the output is not a complete document.
  void warn_if_incomplete(const char* command, const genai::GenerationResult& result) const;

 private:
  std::shared_ptr<const genai::Constraint> constraint_;
  std::shared_ptr<genai::GrammarMask> mask_;  // also held by the sampler chain while it lives
};

}  // namespace ember::cli
