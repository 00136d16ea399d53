// A structured-output request -> Constraint::compile over models/default's
// vocabulary (loaded once): the first byte picks the kind (JSON Schema, regex,
// Lark or GBNF), the rest is its text. A compiled constraint then makes a
// mask and computes the first step's allowed tokens.
#include <array>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "genai/constraint.h"
#include "genai/tokenizer.h"

namespace {

std::shared_ptr<const ember::genai::ConstraintVocabulary> g_vocabulary;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  auto tokenizer = ember::genai::Tokenizer::from_file(std::string(EMBER_SOURCE_DIR) + "/models/default/tokenizer.json");
  if (!tokenizer.is_ok()) std::abort();
  const int64_t eos[] = {tokenizer->token_to_id("<|eos|>")};
  if (eos[0] < 0) std::abort();
  auto vocabulary = ember::genai::ConstraintVocabulary::create(*tokenizer, eos, tokenizer->vocab_size());
  if (!vocabulary.is_ok()) std::abort();
  g_vocabulary = *vocabulary;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  using ember::genai::ConstraintKind;
  constexpr std::array kKinds = {ConstraintKind::kJsonSchema, ConstraintKind::kRegex, ConstraintKind::kLark,
                                 ConstraintKind::kGbnf};
  ember::genai::ConstraintSpec spec;
  spec.kind = kKinds[data[0] % kKinds.size()];
  spec.text.assign(reinterpret_cast<const char*>(data + 1), size - 1);
  spec.origin = "fuzz";
  auto constraint = ember::genai::Constraint::compile(g_vocabulary, spec);
  if (!constraint.is_ok()) return 0;
  std::unique_ptr<ember::genai::GrammarMask> mask = (*constraint)->make_mask(/*overlap=*/false);
  mask->compute_mask();
  mask->complete();
  return 0;
}
