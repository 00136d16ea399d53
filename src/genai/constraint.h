#pragma once
// Structured output: sampling constrained to a JSON Schema, any JSON object, a
// regular expression or a context-free grammar (llguidance's Lark syntax, or
// llama.cpp's GBNF translated to it by gbnf.h). The matching is llguidance's
// (crates.io, Rust, through its C API; built by cmake/llguidance.cmake): for
// each step it computes the set of tokens that keep the text a prefix of some
// document the grammar accepts, over the whole vocabulary, and EOS only where
// the grammar accepts a complete document.
//
// Three pieces: ConstraintVocabulary (each token's bytes, once per tokenizer),
// Constraint (a checked, compiled grammar, once per request) and GrammarMask
// (one sequence's matcher: the LogitsProcessor the sampler chain puts first,
// told each chosen token through accept()). GrammarMask computes the next mask
// on a worker thread as soon as it learns a token, so the computation overlaps
// the model run that produces the next logits; apply() waits for it.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "genai/logits_processors.h"
#include "genai/tokenizer.h"

struct LlgTokenizer;
struct LlgMatcher;
struct LlgCancellationHandle;

namespace ember::genai {

enum class ConstraintKind { kJsonSchema, kJsonObject, kRegex, kLark, kGbnf };
// "json_schema", "json_object", "regex", "lark", "gbnf".
const char* constraint_kind_name(ConstraintKind kind);

struct ConstraintSpec {
  ConstraintKind kind = ConstraintKind::kJsonObject;
  // The schema (JSON text), the pattern or the grammar; unused for kJsonObject.
  std::string text;
  // Where it came from, at the head of every message about it ("schema.json", "--regex").
  std::string origin;
};

// JSON Schema constraints allow at most this many whitespace characters
// between two tokens of the document (a schema's own "x-guidance" options
// replace it). llguidance's default allows any run; a weak or random-weight
// model then spends its tokens on indentation: llama.cpp bounds it likewise.
inline constexpr int kJsonMaxWhitespace = 16;

// One matcher step (a mask, or taking a token) may use at most this much of
// its thread's CPU time; past it the step is cancelled and the sequence fails
// with an error saying so. A step takes 0.05-1 ms, and llguidance's fuel
// limits keep its lexer and parser work to about 15 ms, but not the text a
// grammar forces: `(a{1000}b{1000}){100000}` is pushed a byte at a time, each
// byte a new lexer state, for about a second. CPU time, not wall time, so a
// busy machine does not fail a grammar that is merely slow.
inline constexpr std::chrono::milliseconds kMatcherStepBudget{250};

// The vocabulary as llguidance reads it: each token's bytes
// (Tokenizer::token_bytes), special tokens marked as such, and the EOS ids.
// Built once per tokenizer and shared by every constraint over it.
class ConstraintVocabulary {
 public:
  // `model_vocab`: the rows of the model's logits, which may differ from the
  // tokenizer's size (ids only one side has are never allowed). `eos_ids`:
  // the tokens that end a sequence; a mask allows them exactly when the
  // grammar accepts the text so far.
  static Result<std::shared_ptr<const ConstraintVocabulary>> create(const Tokenizer& tokenizer,
                                                                    std::span<const int64_t> eos_ids,
                                                                    int64_t model_vocab);
  ~ConstraintVocabulary();
  ConstraintVocabulary(const ConstraintVocabulary&) = delete;
  ConstraintVocabulary& operator=(const ConstraintVocabulary&) = delete;

  int64_t model_vocab() const { return model_vocab_; }
  std::span<const int64_t> eos_ids() const { return eos_ids_; }
  bool is_eos(int64_t token) const;

 private:
  friend class Constraint;
  explicit ConstraintVocabulary(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}
  static size_t tokenize(const void* user, const uint8_t* bytes, size_t n, uint32_t* out, size_t out_len);

  Tokenizer tokenizer_;  // shares the loaded tables; llguidance tokenizes forced text with it
  LlgTokenizer* llg_ = nullptr;
  int64_t model_vocab_ = 0;
  std::vector<int64_t> eos_ids_;
};

class GrammarMask;

// A checked, compiled constraint. compile() refuses a malformed schema,
// pattern or grammar with a message naming where it is wrong.
class Constraint {
 public:
  static Result<std::shared_ptr<const Constraint>> compile(std::shared_ptr<const ConstraintVocabulary> vocabulary,
                                                           const ConstraintSpec& spec);
  ~Constraint();
  Constraint(const Constraint&) = delete;
  Constraint& operator=(const Constraint&) = delete;

  const ConstraintSpec& spec() const { return spec_; }
  // A matcher at the start of a document, for one sequence. With `overlap`
  // each mask is computed on the mask worker while the model runs; without,
  // inside apply().
  std::unique_ptr<GrammarMask> make_mask(bool overlap = true) const;

 private:
  Constraint() = default;
  std::shared_ptr<const ConstraintVocabulary> vocabulary_;
  ConstraintSpec spec_;
  LlgMatcher* prototype_ = nullptr;  // cloned for each sequence; never advanced
};

// One sequence's grammar mask. apply() sets the logits of every token the
// grammar does not allow next to -inf (EOS included until the document is
// complete); accept() advances the matcher. If the matcher fails (a token it
// did not allow was accepted, or llguidance ran out of its step budget) the
// failure is kept in failure() and from then on only EOS is allowed, so the
// sequence ends with StopReason::kError and the caller can report it. So does
// a step that overruns kMatcherStepBudget.
class GrammarMask final : public LogitsProcessor {
 public:
  GrammarMask(std::shared_ptr<const ConstraintVocabulary> vocabulary, LlgMatcher* matcher, bool overlap);
  ~GrammarMask() override;

  std::string_view name() const override { return "grammar"; }
  void apply(SamplingStep& step) override;
  void accept(int64_t token) override;
  void reset() override;

  // The text so far is a complete document (EOS may follow, or was taken).
  bool complete();
  // Why the matcher failed, as of the last apply() or accept(); empty while it
  // has not. A mask the worker computes for the next step and fails shows at
  // the next apply(), so which token a sequence fails at does not depend on
  // the worker's timing.
  std::string failure() override;
  // Masks computed and the time spent computing them (on whichever thread),
  // and the time apply() took: the mask's cost on the decode loop's path
  // (waiting for the worker, or computing inline, then masking the logits).
  int64_t masks_computed() const { return masks_; }
  double mask_seconds() const { return mask_seconds_; }
  int64_t applied() const { return applied_; }
  double apply_seconds() const { return apply_seconds_; }

  // The mask worker's side.
  void compute_mask();

 private:
  void mask_logits(SamplingStep& step);
  void start_mask();
  void wait_mask();
  void fail(std::string message);
  // Runs one llguidance call on matcher_ (0: success) under the step
  // watchdog; false when it failed or was cancelled.
  template <typename Call>
  bool timed_step(Call call);
  // llguidance's error after a failed step, or the budget's if it was cancelled.
  std::string step_error(const char* fallback);

  std::shared_ptr<const ConstraintVocabulary> vocabulary_;
  LlgMatcher* matcher_;
  LlgCancellationHandle* cancel_;  // the step watchdog's way to stop matcher_
  bool overlap_;
  std::vector<uint32_t> mask_;
  std::mutex mutex_;
  std::condition_variable done_;
  bool busy_ = false;    // queued or being computed on the worker
  bool stale_ = true;    // mask_ is not the current state's
  bool eos_taken_ = false;
  std::string error_;
  std::string failure_;  // error_ as the sequence's thread last saw it (apply, accept, reset): failure()
  int64_t masks_ = 0;
  double mask_seconds_ = 0;
  int64_t applied_ = 0;
  double apply_seconds_ = 0;
};

}  // namespace ember::genai
