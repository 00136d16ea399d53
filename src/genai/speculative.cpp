#include "genai/speculative.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/json.h"
#include "genai/generator.h"
#include "genai/logits_processors.h"

namespace ember::genai {
namespace {

Result<nlohmann::json> read_tokenizer_json(const std::string& dir) {
  const std::string path = dir + "/tokenizer.json";
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("cannot open {}", path);
  std::stringstream text;
  text << in.rdbuf();
  std::string why;
  auto parsed = parse_json<nlohmann::json>(text.str(), &why);
  if (parsed.is_discarded()) return invalid_argument("{} {}", path, why);
  return parsed;
}

}  // namespace

PromptLookupDrafter::PromptLookupDrafter(int min_ngram, int max_ngram)
    : min_ngram_(std::max(1, min_ngram)), max_ngram_(std::max(min_ngram_, max_ngram)) {}

Status PromptLookupDrafter::propose(std::span<const int64_t> history, int max_tokens, std::vector<int64_t>& out) {
  out.clear();
  const auto length = static_cast<int64_t>(history.size());
  if (max_tokens < 1) return Status::ok();
  for (int64_t n = std::min<int64_t>(max_ngram_, length - 1); n >= min_ngram_; --n) {
    const std::span<const int64_t> suffix = history.subspan(static_cast<size_t>(length - n));
    // The most recent earlier occurrence, which has a token after it.
    for (int64_t start = length - n - 1; start >= 0; --start) {
      if (!std::equal(suffix.begin(), suffix.end(), history.begin() + start)) continue;
      const int64_t from = start + n;
      const int64_t to = std::min(length, from + max_tokens);
      out.assign(history.begin() + from, history.begin() + to);
      return Status::ok();
    }
  }
  return Status::ok();
}

Status DraftModelDrafter::propose(std::span<const int64_t> history, int max_tokens, std::vector<int64_t>& out) {
  out.clear();
  if (history.empty()) return invalid_argument("draft model: no history to continue");
  const auto length = static_cast<int64_t>(history.size());
  // The draft's cache must hold the history and max_tokens - 1 drafts.
  const int64_t room = draft_.max_length() - length + 1;
  const int k = static_cast<int>(std::min<int64_t>(max_tokens, room));
  if (k < 1) return Status::ok();
  const std::span<const int64_t> cached = draft_.cached_tokens();
  const auto common = static_cast<int64_t>(
      std::mismatch(cached.begin(), cached.end(), history.begin(), history.end()).first - cached.begin());
  // Rerun at least the last history token: its logits give the first draft.
  EMBER_RETURN_IF_ERROR(draft_.truncate(std::min(common, length - 1)));
  // The new history tokens in runs that compute what one-token steps would.
  for (size_t at = draft_.cached_tokens().size(); at < history.size();) {
    const size_t n = std::min(history.size() - at, static_cast<size_t>(draft_.decode_run_limit()));
    EMBER_RETURN_IF_ERROR(draft_.append(history.subspan(at, n)));
    at += n;
  }
  for (int i = 0; i < k; ++i) {
    out.push_back(argmax(draft_.last_logits()));
    if (i + 1 < k) EMBER_RETURN_IF_ERROR(draft_.append(std::span(&out.back(), 1)));
  }
  return Status::ok();
}

Status check_draft_model(const Generator& target, const Generator& draft) {
  const GenaiConfig &t = target.config(), &d = draft.config();
  if (&target == &draft) return invalid_argument("draft model {}: the target cannot draft for itself on one cache", d.dir);
  // Embedding tables padded past the tokenizer (Qwen2.5-7B's 152064 against 0.5B's 151936) still share it.
  if (d.vocab_size > t.vocab_size) {
    return invalid_argument("draft model {}: its vocabulary has {} tokens, more than the target's ({}) {}", d.dir,
                            d.vocab_size, t.dir, t.vocab_size);
  }
  EMBER_ASSIGN_OR_RETURN(nlohmann::json target_tokenizer, read_tokenizer_json(t.dir));
  EMBER_ASSIGN_OR_RETURN(nlohmann::json draft_tokenizer, read_tokenizer_json(d.dir));
  for (const char* key : {"model", "added_tokens"}) {
    if (target_tokenizer.value(key, nlohmann::json()) != draft_tokenizer.value(key, nlohmann::json())) {
      return invalid_argument("draft model {}: its tokenizer.json's \"{}\" differs from the target's ({}): a draft "
                              "model must share the target's tokenizer",
                              d.dir, key, t.dir);
    }
  }
  return Status::ok();
}

}  // namespace ember::genai
