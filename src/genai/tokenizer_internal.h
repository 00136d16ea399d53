#pragma once
// Components of genai::Tokenizer, shared by the tokenizer_*.cpp files only.
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace ember::genai::detail {

using Json = nlohmann::json;

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <typename V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

// ---- UTF-8 ----
size_t utf8_char_length(std::string_view s, size_t pos);  // bytes of the character at pos (valid UTF-8)
char32_t utf8_decode(std::string_view s, size_t pos);      // the character at pos (valid UTF-8)
void utf8_append(std::string& out, char32_t c);
bool utf8_valid(std::string_view s);
// Rust's String::from_utf8_lossy: each maximal invalid subpart becomes one U+FFFD.
std::string utf8_lossy(std::string_view bytes);

// ---- patterns ----
// A PCRE2 regex (UTF + UCP, JIT when available), compiled once, matched from any thread.
class Regex {
 public:
  static Result<std::shared_ptr<const Regex>> compile(const std::string& pattern);
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  ~Regex();
  // Non-overlapping matches left to right, as byte ranges; `text` must be valid UTF-8.
  void find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& matches) const;

 private:
  Regex() = default;
  void* code_ = nullptr;  // pcre2_code_8
};

// The `pattern` of Split / Replace: {"String": s} or {"Regex": r}.
struct Pattern {
  std::string literal;
  std::shared_ptr<const Regex> regex;
  void find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& matches) const;
};
Result<Pattern> parse_pattern(const Json& j, const std::string& where);
void replace_all(const Pattern& pattern, const std::string& content, std::string& text);

// A stretch of the input on its way to the model: text, or an added token already found.
struct Piece {
  std::string text;
  int32_t token = -1;
  bool at_start = false;  // begins at offset 0 of the input (Metaspace prepend_scheme "first")
};

// ---- normalizers ----
struct Normalizer {
  enum class Kind { kNfc, kNfd, kNfkc, kNfkd, kLowercase, kPrepend, kReplace, kStrip, kSequence };
  Kind kind = Kind::kSequence;
  std::string content;  // Prepend: the prefix; Replace: the replacement
  Pattern pattern;      // Replace
  bool strip_left = false, strip_right = false;
  std::vector<Normalizer> children;
};
Result<Normalizer> parse_normalizer(const Json& j, const std::string& where);
void normalize(const Normalizer& n, std::string& text);

// ---- pre-tokenizers ----
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };
enum class PrependScheme { kAlways, kFirst, kNever };

struct PreTokenizer {
  enum class Kind { kSplit, kByteLevel, kMetaspace, kSequence };
  Kind kind = Kind::kSequence;
  Pattern pattern;  // Split; ByteLevel with use_regex (the GPT-2 pattern)
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
  bool add_prefix_space = false;  // ByteLevel
  bool use_regex = false;         // ByteLevel
  std::string replacement;        // Metaspace
  PrependScheme prepend_scheme = PrependScheme::kAlways;
  bool split = true;  // Metaspace
  std::vector<PreTokenizer> children;
};
Result<PreTokenizer> parse_pre_tokenizer(const Json& j, const std::string& where);
// Splits the text pieces of `pieces` further; token pieces pass through.
void pre_tokenize(const PreTokenizer& p, std::vector<Piece>& pieces);
// Splits `text` at `matches` per `behavior` (HF NormalizedString::split), appending to out.
void split_by_matches(const Piece& piece, const std::vector<std::pair<size_t, size_t>>& matches,
                      SplitBehavior behavior, bool invert, std::vector<Piece>& out);

// GPT-2's bytes_to_unicode: the character standing for each byte, and back (-1: none).
const std::string& byte_level_char(uint8_t byte);
int byte_level_byte(char32_t c);

// ---- BPE model ----
class BpeModel {
 public:
  static Result<std::unique_ptr<BpeModel>> parse(const Json& model);
  // Appends the ids of one pre-tokenized word.
  void tokenize(std::string_view word, std::vector<int32_t>& ids) const;
  int32_t token_to_id(std::string_view token) const;
  const std::string* id_to_token(int32_t id) const;
  int32_t vocab_size() const { return static_cast<int32_t>(tokens_.size()); }

 private:
  struct Merge {
    int32_t rank;
    int32_t new_id;
  };
  void initial_symbols(std::string_view word, std::vector<int32_t>& symbols) const;
  void merge_symbols(std::vector<int32_t>& symbols) const;
  const Merge* find_merge(int32_t left, int32_t right) const;

  StringMap<int32_t> vocab_;
  std::vector<std::string> tokens_;  // by id; "" where the vocab has a gap
  std::vector<bool> has_token_;
  // Open addressing on the (left, right) id pair; measured faster than std::unordered_map.
  std::vector<uint64_t> merge_keys_;
  std::vector<Merge> merge_values_;
  uint64_t merge_mask_ = 0;
  int32_t unk_id_ = -1;
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  std::string prefix_;  // continuing_subword_prefix
  std::string suffix_;  // end_of_word_suffix
  int32_t byte_ids_[256];
  mutable std::mutex cache_mutex_;
  mutable StringMap<std::vector<int32_t>> cache_;
};

// ---- decoders ----
struct Decoder {
  enum class Kind { kByteLevel, kMetaspace, kByteFallback, kFuse, kStrip, kReplace, kSequence };
  Kind kind = Kind::kSequence;
  std::string content;  // Replace: the replacement; Metaspace: the replacement char; Strip: the char
  Pattern pattern;      // Replace
  PrependScheme prepend_scheme = PrependScheme::kAlways;
  int start = 0, stop = 0;  // Strip
  std::vector<Decoder> children;
};
Result<Decoder> parse_decoder(const Json& j, const std::string& where);
void decode_chain(const Decoder& d, std::vector<std::string>& tokens);
// The bytes one token stands for in the middle of a text: decode_chain's per-token
// steps (byte-level characters, <0xNN> byte tokens, the Metaspace / Replace space)
// without its first-token rules or any UTF-8 repair.
void token_bytes_chain(const Decoder& d, std::string& token);

// ---- JSON helpers ----
Result<std::string> json_string(const Json& j, const char* key, const std::string& where);
Result<bool> json_bool(const Json& j, const char* key, bool fallback, const std::string& where);
// Metaspace's prepend_scheme (pre-tokenizer and decoder alike): the field, or
// the older add_prefix_space (false: "never").
Result<PrependScheme> parse_prepend_scheme(const Json& j, const std::string& where);
Result<int64_t> json_int(const Json& j, const char* key, int64_t fallback, const std::string& where);

}  // namespace ember::genai::detail
