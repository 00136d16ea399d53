#include "genai/constraint.h"

#include <llguidance.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <map>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/cpu_time.h"
#include "base/json.h"
#include "genai/gbnf.h"

namespace ember::genai {
namespace {

// One thread computes the next masks of every GrammarMask that overlaps: a
// mask takes 0.05-1 ms where a decode step of a 150k-vocabulary model takes
// tens, so one thread keeps up with many sequences.
class MaskWorker {
 public:
  static MaskWorker& get() {
    static MaskWorker worker;
    return worker;
  }
  void post(GrammarMask* mask) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(mask);
    }
    cv_.notify_one();
  }

 private:
  MaskWorker() : thread_([this] { loop(); }) {}
  ~MaskWorker() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      GrammarMask* mask = queue_.front();
      queue_.pop_front();
      lock.unlock();
      mask->compute_mask();
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<GrammarMask*> queue_;
  bool stop_ = false;
  std::thread thread_;
};

// Cancels a matcher step that has used more than kMatcherStepBudget of its
// thread's CPU time. A step registers for as long as it runs (a Timed guard).
// The watchdog sleeps until the first moment a step could have used its
// budget (CPU time runs no faster than wall time), reads that thread's CPU
// clock, and either cancels the step or sleeps for what the step has left.
class StepWatchdog {
 public:
  static StepWatchdog& get() {
    static StepWatchdog watchdog;
    return watchdog;
  }

  class Timed {
   public:
    explicit Timed(const LlgCancellationHandle* handle) : ticket_(handle ? get().start(handle) : 0) {}
    ~Timed() {
      if (ticket_ != 0) get().finish(ticket_);
    }
    Timed(const Timed&) = delete;
    Timed& operator=(const Timed&) = delete;

   private:
    uint64_t ticket_;
  };

 private:
  using Clock = std::chrono::steady_clock;
  struct Step {
    const LlgCancellationHandle* handle;
    clockid_t cpu_clock;
    std::chrono::nanoseconds cpu_start;
    Clock::time_point check_at;
  };

  StepWatchdog() : thread_([this] { loop(); }) {}
  ~StepWatchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }

  uint64_t start(const LlgCancellationHandle* handle) {
    const clockid_t cpu_clock = this_thread_cpu_clock();
    const Step step{handle, cpu_clock, clock_time(cpu_clock), Clock::now() + kMatcherStepBudget};
    bool was_idle;
    uint64_t ticket;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      was_idle = steps_.empty();
      ticket = next_ticket_++;
      steps_.emplace(ticket, step);
    }
    // A step already waited on has a check no later than this new one's.
    if (was_idle) cv_.notify_one();
    return ticket;
  }

  void finish(uint64_t ticket) {
    std::lock_guard<std::mutex> lock(mutex_);
    steps_.erase(ticket);
  }

  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
      if (steps_.empty()) {
        cv_.wait(lock);
        continue;
      }
      Clock::time_point first = steps_.begin()->second.check_at;
      for (const auto& [ticket, step] : steps_) first = std::min(first, step.check_at);
      cv_.wait_until(lock, first);
      const Clock::time_point now = Clock::now();
      for (auto it = steps_.begin(); it != steps_.end();) {
        Step& step = it->second;
        if (step.check_at > now) {
          ++it;
          continue;
        }
        const std::chrono::nanoseconds used = clock_time(step.cpu_clock) - step.cpu_start;
        if (used >= kMatcherStepBudget) {
          llg_cancel(step.handle);
          it = steps_.erase(it);
        } else {
          step.check_at = now + (kMatcherStepBudget - used);
          ++it;
        }
      }
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<uint64_t, Step> steps_;
  uint64_t next_ticket_ = 1;
  bool stop_ = false;
  std::thread thread_;
};

// nlohmann's parse error as "line L, column C: what".
std::string json_error_text(const nlohmann::json::parse_error& e, std::string_view text) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  std::string what = e.what();
  if (const size_t colon = what.rfind(": "); colon != std::string::npos) what = what.substr(colon + 2);
  return fmt::format("line {}, column {}: {}", line, column, what);
}

// The llguidance constraint type and text for `spec`.
Result<std::pair<std::string, std::string>> llguidance_grammar(const ConstraintSpec& spec) {
  const std::string bounded_whitespace = fmt::format("[\\x20\\x0A\\x0D\\x09]{{1,{}}}", kJsonMaxWhitespace);
  switch (spec.kind) {
    case ConstraintKind::kJsonObject: {
      const nlohmann::json schema = {{"type", "object"}, {"x-guidance", {{"whitespace_pattern", bounded_whitespace}}}};
      return std::make_pair(std::string("json_schema"), schema.dump());
    }
    case ConstraintKind::kJsonSchema: {
      nlohmann::json schema;
      if (std::string deep = json_depth_error(spec.text); !deep.empty()) {
        return invalid_argument("{}: the JSON Schema {}", spec.origin, deep);
      }
      try {
        schema = nlohmann::json::parse(spec.text);
      } catch (const nlohmann::json::parse_error& e) {
        return invalid_argument("{}: the JSON Schema is not valid JSON: {}", spec.origin, json_error_text(e, spec.text));
      } catch (const nlohmann::json::exception& e) {  // a number past double's range, ...
        return invalid_argument("{}: the JSON Schema cannot be read: {}", spec.origin, e.what());
      }
      if (!schema.is_object() && !schema.is_boolean()) {
        return invalid_argument("{}: a JSON Schema must be an object or a boolean, not {}", spec.origin,
                                schema.type_name());
      }
      if (schema.is_object() && !schema.contains("x-guidance")) {
        schema["x-guidance"] = {{"whitespace_pattern", bounded_whitespace}};
      }
      return std::make_pair(std::string("json_schema"), schema.dump());
    }
    case ConstraintKind::kRegex: return std::make_pair(std::string("regex"), spec.text);
    case ConstraintKind::kLark: return std::make_pair(std::string("lark"), spec.text);
    case ConstraintKind::kGbnf: {
      auto lark = gbnf_to_lark(spec.text);
      if (!lark.is_ok()) return lark.status().with_context(spec.origin + ": ");
      return std::make_pair(std::string("lark"), std::move(*lark));
    }
  }
  return invalid_argument("{}: unknown constraint kind", spec.origin);
}

// llguidance's messages may end with the grammar itself (verbose errors); the first lines say what and where.
std::string trim_message(std::string message, size_t max_lines = 12) {
  size_t pos = 0;
  for (size_t line = 0; line < max_lines && pos != std::string::npos; ++line) {
    pos = message.find('\n', pos == 0 ? 0 : pos + 1);
  }
  if (pos != std::string::npos) message = message.substr(0, pos) + "\n...";
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  return message;
}

// The subschemas of `node` (a schema object) with their JSON Pointer steps.
std::vector<std::pair<std::string, const nlohmann::json*>> subschemas(const nlohmann::json& node) {
  std::vector<std::pair<std::string, const nlohmann::json*>> out;
  auto pointer_step = [](const std::string& key) {
    std::string step;
    for (char c : key) step += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
    return step;
  };
  for (const char* key : {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}) {
    if (auto it = node.find(key); it != node.end() && it->is_object()) {
      for (const auto& [name, sub] : it->items()) out.emplace_back(std::string(key) + "/" + pointer_step(name), &sub);
    }
  }
  for (const char* key : {"anyOf", "allOf", "oneOf", "prefixItems", "items"}) {
    if (auto it = node.find(key); it != node.end() && it->is_array()) {
      for (size_t i = 0; i < it->size(); ++i) out.emplace_back(fmt::format("{}/{}", key, i), &(*it)[i]);
    }
  }
  for (const char* key : {"items", "additionalProperties", "additionalItems", "not", "if", "then", "else", "contains",
                          "propertyNames", "unevaluatedItems", "unevaluatedProperties"}) {
    if (auto it = node.find(key); it != node.end() && it->is_object()) out.emplace_back(key, &*it);
  }
  return out;
}

// Where in `root` llguidance's refusal comes from: the JSON Pointer of the
// deepest subschema that llguidance also refuses on its own (with the root's
// definitions, so references still resolve). llguidance's messages name the
// problem ("Invalid type: strnig") but not its place.
std::string locate_schema_error(const LlgConstraintInit& init, const nlohmann::json& root) {
  auto refused = [&](const nlohmann::json& sub) {
    nlohmann::json alone = sub;
    for (const char* key : {"$defs", "definitions"}) {
      if (root.contains(key) && !alone.contains(key)) alone[key] = root[key];
    }
    alone["x-guidance"] = root.value("x-guidance", nlohmann::json::object());
    char message[256];
    return llg_validate_grammar(&init, "json_schema", alone.dump().c_str(), message, sizeof(message)) < 0;
  };
  std::string path = "#";
  const nlohmann::json* node = &root;
  for (int depth = 0; depth < 64; ++depth) {
    const nlohmann::json* next = nullptr;
    for (const auto& [step, sub] : subschemas(*node)) {
      if (sub->is_object() && refused(*sub)) {
        path += "/" + step;
        next = sub;
        break;
      }
    }
    if (!next) break;
    node = next;
  }
  return path;
}

}  // namespace

const char* constraint_kind_name(ConstraintKind kind) {
  switch (kind) {
    case ConstraintKind::kJsonSchema: return "json_schema";
    case ConstraintKind::kJsonObject: return "json_object";
    case ConstraintKind::kRegex: return "regex";
    case ConstraintKind::kLark: return "lark";
    case ConstraintKind::kGbnf: return "gbnf";
  }
  return "unknown";
}

// ---- ConstraintVocabulary ----

size_t ConstraintVocabulary::tokenize(const void* user, const uint8_t* bytes, size_t n, uint32_t* out,
                                      size_t out_len) {
  // Called from Rust: no exception may cross into it (none is expected from encode()).
  try {
    const auto* self = static_cast<const ConstraintVocabulary*>(user);
    const std::vector<int32_t> ids =
        self->tokenizer_.encode(std::string_view(reinterpret_cast<const char*>(bytes), n), /*add_special=*/false);
    for (size_t i = 0; i < ids.size() && i < out_len; ++i) out[i] = static_cast<uint32_t>(ids[i]);
    return ids.size();
  } catch (...) {
    return 0;
  }
}

Result<std::shared_ptr<const ConstraintVocabulary>> ConstraintVocabulary::create(const Tokenizer& tokenizer,
                                                                                 std::span<const int64_t> eos_ids,
                                                                                 int64_t model_vocab) {
  const int64_t tokenizer_vocab = tokenizer.vocab_size();
  const int64_t n = std::max(model_vocab, tokenizer_vocab);
  if (model_vocab <= 0) return invalid_argument("constraint vocabulary: the model has {} logits", model_vocab);
  std::vector<uint32_t> eos;
  for (int64_t id : eos_ids) {
    if (id < 0 || id >= n) return invalid_argument("constraint vocabulary: EOS id {} is outside [0, {})", id, n);
    eos.push_back(static_cast<uint32_t>(id));
  }
  if (eos.empty()) return invalid_argument("constraint vocabulary: the model names no EOS token");
  std::shared_ptr<ConstraintVocabulary> v(new ConstraintVocabulary(tokenizer));
  v->model_vocab_ = model_vocab;
  v->eos_ids_.assign(eos_ids.begin(), eos_ids.end());
  std::vector<uint32_t> lens(static_cast<size_t>(n), 0);
  std::string bytes;
  for (int64_t id = 0; id < std::min(n, tokenizer_vocab); ++id) {
    std::string token = tokenizer.token_bytes(static_cast<int32_t>(id));
    if (token.empty()) continue;
    // llguidance's mark of a special token: grammars may name them (<|im_end|>), text never matches them.
    if (tokenizer.is_special(static_cast<int32_t>(id)) || v->is_eos(id)) token.insert(token.begin(), '\xFF');
    bytes += token;
    lens[static_cast<size_t>(id)] = static_cast<uint32_t>(token.size());
  }
  LlgTokenizerInitV2 init = {};
  init.struct_size = sizeof(init);
  init.vocab_size = static_cast<uint32_t>(n);
  init.tok_eos = eos[0];
  init.tok_eos_extra = eos.size() > 1 ? eos.data() + 1 : nullptr;
  init.tok_eos_extra_count = static_cast<uint32_t>(eos.size() - 1);
  init.token_lens = lens.data();
  init.token_bytes = reinterpret_cast<const uint8_t*>(bytes.data());
  // Our encode() reads invalid UTF-8 as U+FFFD, as a Python str would.
  init.tokenize_assumes_string = true;
  init.tokenize_fn = &ConstraintVocabulary::tokenize;
  init.tokenize_user_data = v.get();
  char error[1024] = {};
  v->llg_ = llg_new_tokenizer_v2(&init, error, sizeof(error));
  if (!v->llg_) return invalid_argument("constraint vocabulary: llguidance refused the tokenizer: {}", error);
  return std::shared_ptr<const ConstraintVocabulary>(std::move(v));
}

ConstraintVocabulary::~ConstraintVocabulary() { llg_free_tokenizer(llg_); }

bool ConstraintVocabulary::is_eos(int64_t token) const {
  return std::find(eos_ids_.begin(), eos_ids_.end(), token) != eos_ids_.end();
}

// ---- Constraint ----

Result<std::shared_ptr<const Constraint>> Constraint::compile(std::shared_ptr<const ConstraintVocabulary> vocabulary,
                                                              const ConstraintSpec& spec) {
  EMBER_ASSIGN_OR_RETURN(auto grammar, llguidance_grammar(spec));
  if (spec.kind != ConstraintKind::kJsonObject && spec.text.empty()) {
    return invalid_argument("{}: the {} is empty", spec.origin, constraint_kind_name(spec.kind));
  }
  LlgConstraintInit init = {};
  llg_constraint_init_set_defaults(&init, vocabulary->llg_);
  init.log_stderr_level = 0;  // warnings would interleave with generated text; errors come back as Status
  init.log_buffer_level = 0;
  LlgMatcher* matcher = llg_new_matcher(&init, grammar.first.c_str(), grammar.second.c_str());
  if (const char* error = llg_matcher_get_error(matcher)) {
    std::string message = trim_message(error);
    llg_free_matcher(matcher);
    std::string where;
    if (spec.kind == ConstraintKind::kJsonSchema) {
      const nlohmann::json schema = parse_json<nlohmann::json>(grammar.second);
      if (schema.is_object()) where = " at " + locate_schema_error(init, schema);
    }
    return invalid_argument("{}: invalid {}{}: {}", spec.origin, constraint_kind_name(spec.kind), where, message);
  }
  std::shared_ptr<Constraint> c(new Constraint());
  c->vocabulary_ = std::move(vocabulary);
  c->spec_ = spec;
  c->prototype_ = matcher;
  return std::shared_ptr<const Constraint>(std::move(c));
}

Constraint::~Constraint() { llg_free_matcher(prototype_); }

std::unique_ptr<GrammarMask> Constraint::make_mask(bool overlap) const {
  return std::make_unique<GrammarMask>(vocabulary_, llg_clone_matcher(prototype_), overlap);
}

// ---- GrammarMask ----

GrammarMask::GrammarMask(std::shared_ptr<const ConstraintVocabulary> vocabulary, LlgMatcher* matcher, bool overlap)
    : vocabulary_(std::move(vocabulary)),
      matcher_(matcher),
      cancel_(llg_matcher_get_cancellation_handle(matcher_)),
      overlap_(overlap) {
  mask_.resize(llg_matcher_get_mask_byte_size(matcher_) / sizeof(uint32_t));
  if (const char* error = llg_matcher_get_error(matcher_)) error_ = error;
  // Before the mask worker, so that the watchdog outlives it at exit.
  StepWatchdog::get();
  // The first mask overlaps the prompt's prefill.
  start_mask();
}

GrammarMask::~GrammarMask() {
  wait_mask();
  llg_free_matcher(matcher_);
  llg_free_cancellation_handle(cancel_);
}

void GrammarMask::compute_mask() {
  const auto start = std::chrono::steady_clock::now();
  const bool ok = timed_step(
      [this] { return llg_matcher_compute_mask_into(matcher_, mask_.data(), mask_.size() * sizeof(uint32_t)); });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::lock_guard<std::mutex> lock(mutex_);
  ++masks_;
  mask_seconds_ += seconds;
  if (!ok && error_.empty()) error_ = step_error("llguidance could not compute the mask");
  stale_ = false;
  busy_ = false;
  done_.notify_all();
}

void GrammarMask::start_mask() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stale_ = true;
    if (!error_.empty() || !overlap_) return;
    busy_ = true;
  }
  MaskWorker::get().post(this);
}

void GrammarMask::wait_mask() {
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [this] { return !busy_; });
}

template <typename Call>
bool GrammarMask::timed_step(Call call) {
  int32_t result;
  {
    StepWatchdog::Timed timed(cancel_);
    result = call();
  }
  return result == 0 && !llg_matcher_is_cancelled(matcher_);  // the watchdog may cancel just as the step returns
}

std::string GrammarMask::step_error(const char* fallback) {
  if (llg_matcher_is_cancelled(matcher_)) {
    return fmt::format("a step of the matcher used more than {} ms of CPU time and was stopped (a grammar that "
                       "forces a very long text, such as a large counted repetition, cannot be followed)",
                       kMatcherStepBudget.count());
  }
  const char* error = llg_matcher_get_error(matcher_);
  return error ? trim_message(error) : fallback;
}

void GrammarMask::fail(std::string message) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (error_.empty()) error_ = std::move(message);
  failure_ = error_;
}

void GrammarMask::apply(SamplingStep& step) {
  const auto start = std::chrono::steady_clock::now();
  mask_logits(step);
  ++applied_;
  apply_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void GrammarMask::mask_logits(SamplingStep& step) {
  wait_mask();
  bool stale;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stale = stale_;
    failure_ = error_;
  }
  if (stale && failure_.empty()) {
    compute_mask();
    std::lock_guard<std::mutex> lock(mutex_);
    failure_ = error_;
  }
  std::span<float> logits = step.mutable_logits();
  const size_t n = logits.size();
  if (!failure_.empty()) {
    // Only EOS: the sequence ends and its caller reads failure().
    std::fill(logits.begin(), logits.end(), -INFINITY);
    for (int64_t eos : vocabulary_->eos_ids()) {
      if (eos >= 0 && static_cast<size_t>(eos) < n) logits[static_cast<size_t>(eos)] = 0.0f;
    }
    return;
  }
  const size_t words = std::min(mask_.size(), (n + 31) / 32);
  for (size_t w = 0; w < words; ++w) {
    const uint32_t bits = mask_[w];
    if (bits == ~0u) continue;
    const size_t base = w * 32;
    const size_t end = std::min(n, base + 32);
    if (bits == 0) {
      std::fill(logits.begin() + static_cast<ptrdiff_t>(base), logits.begin() + static_cast<ptrdiff_t>(end), -INFINITY);
      continue;
    }
    // The disallowed tokens of a mixed word, a byte at a time: free text allows
    // most of them. (No ctz: GCC's rep bsf reads as BMI's tzcnt to the ISA check.)
    uint32_t banned = ~bits;
    if (end - base < 32) banned &= (1u << (end - base)) - 1;
    for (size_t byte = 0; byte < 4; ++byte) {
      const uint32_t eight = banned >> (8 * byte) & 0xFFu;
      if (eight == 0) continue;
      for (size_t j = 0; j < 8; ++j) {
        if (eight >> j & 1u) logits[base + 8 * byte + j] = -INFINITY;
      }
    }
  }
  if (words * 32 < n) std::fill(logits.begin() + static_cast<ptrdiff_t>(words * 32), logits.end(), -INFINITY);
}

void GrammarMask::accept(int64_t token) {
  wait_mask();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    failure_ = error_;
    if (!error_.empty() || eos_taken_) return;
  }
  if (vocabulary_->is_eos(token)) {
    bool accepting;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      accepting = llg_matcher_is_accepting(matcher_);
      eos_taken_ = accepting;
    }
    if (!accepting) fail(fmt::format("EOS (token {}) came before the document was complete", token));
    return;
  }
  if (token < 0 || token >= vocabulary_->model_vocab()) {
    fail(fmt::format("token {} is not allowed here: the model has {} logits", token, vocabulary_->model_vocab()));
    return;
  }
  if (!timed_step([&] { return llg_matcher_consume_token(matcher_, static_cast<uint32_t>(token)); })) {
    fail(fmt::format("token {} is not allowed here: {}", token, step_error("llguidance refused it")));
    return;
  }
  start_mask();
}

void GrammarMask::reset() {
  wait_mask();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error_.empty()) return;  // llguidance cannot reset a failed matcher
    eos_taken_ = false;
  }
  if (llg_matcher_reset(matcher_) != 0) {
    const char* error = llg_matcher_get_error(matcher_);
    fail(error ? trim_message(error) : "llguidance could not reset the matcher");
    return;
  }
  start_mask();
}

bool GrammarMask::complete() {
  wait_mask();
  std::lock_guard<std::mutex> lock(mutex_);
  if (!error_.empty()) return false;
  return eos_taken_ || llg_matcher_is_accepting(matcher_);
}

std::string GrammarMask::failure() { return failure_; }

}  // namespace ember::genai
