// UTF-8 helpers, PCRE2 regexes and the JSON accessors of the tokenizer components.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "genai/tokenizer_internal.h"

namespace ember::genai::detail {

size_t utf8_char_length(std::string_view s, size_t pos) {
  const auto b = static_cast<uint8_t>(s[pos]);
  if (b < 0x80) return 1;
  if (b < 0xE0) return 2;
  if (b < 0xF0) return 3;
  return 4;
}

char32_t utf8_decode(std::string_view s, size_t pos) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data() + pos);
  if (p[0] < 0x80) return p[0];
  if (p[0] < 0xE0) return (char32_t(p[0] & 0x1F) << 6) | (p[1] & 0x3F);
  if (p[0] < 0xF0) return (char32_t(p[0] & 0x0F) << 12) | (char32_t(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
  return (char32_t(p[0] & 0x07) << 18) | (char32_t(p[1] & 0x3F) << 12) | (char32_t(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
}

void utf8_append(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

namespace {

// Length of the valid sequence at pos, or 0 with `consumed` = bytes of its maximal
// invalid subpart (Unicode 15, table 3-7 "well-formed UTF-8 byte sequences").
size_t valid_sequence(std::string_view s, size_t pos, size_t& consumed) {
  const auto b0 = static_cast<uint8_t>(s[pos]);
  consumed = 1;
  if (b0 < 0x80) return 1;
  size_t need;
  uint8_t lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  for (size_t k = 1; k <= need; ++k) {
    if (pos + k >= s.size()) return 0;
    const auto b = static_cast<uint8_t>(s[pos + k]);
    const uint8_t first_lo = k == 1 ? lo : 0x80, first_hi = k == 1 ? hi : 0xBF;
    if (b < first_lo || b > first_hi) return 0;
    consumed = k + 1;
  }
  return need + 1;
}

}  // namespace

bool utf8_valid(std::string_view s) {
  size_t pos = 0, consumed = 0;
  while (pos < s.size()) {
    if (static_cast<uint8_t>(s[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const size_t n = valid_sequence(s, pos, consumed);
    if (n == 0) return false;
    pos += n;
  }
  return true;
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t pos = 0, consumed = 0;
  while (pos < bytes.size()) {
    const size_t n = valid_sequence(bytes, pos, consumed);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      pos += consumed;
    } else {
      out.append(bytes.substr(pos, n));
      pos += n;
    }
  }
  return out;
}

Result<std::shared_ptr<const Regex>> Regex::compile(const std::string& pattern) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF | PCRE2_UCP,
                                   &error, &offset, nullptr);
  if (!code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    return invalid_model("regex '{}' does not compile at offset {}: {}", pattern, offset,
                         reinterpret_cast<const char*>(message));
  }
  // Without JIT (an unsupported platform) pcre2_match interprets the pattern instead.
  (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  std::shared_ptr<Regex> regex(new Regex());
  regex->code_ = code;
  return std::shared_ptr<const Regex>(std::move(regex));
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

namespace {

// Per-thread match state: an ovector of one pair suffices (only the whole match is
// read), and a JIT stack larger than the 32 KiB default for long whitespace runs.
struct MatchState {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  MatchState() { pcre2_jit_stack_assign(context, nullptr, stack); }
  ~MatchState() {
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(stack);
    pcre2_match_data_free(data);
  }
};

}  // namespace

void Regex::find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& matches) const {
  thread_local MatchState state;
  const auto* code = static_cast<const pcre2_code*>(code_);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  while (start <= text.size()) {
    const int rc = pcre2_match(code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, state.data, state.context);
    if (rc < 0) break;  // PCRE2_ERROR_NOMATCH, or a resource limit: no further matches
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(state.data);
    matches.emplace_back(ov[0], ov[1]);
    if (ov[1] > ov[0]) {
      start = ov[1];
    } else {
      if (ov[1] >= text.size()) break;
      start = ov[1] + utf8_char_length(text, ov[1]);
    }
  }
}

void Pattern::find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& matches) const {
  if (regex) {
    regex->find_all(text, matches);
    return;
  }
  if (literal.empty()) return;
  for (size_t pos = text.find(literal); pos != std::string_view::npos; pos = text.find(literal, pos + literal.size())) {
    matches.emplace_back(pos, pos + literal.size());
  }
}

Result<Pattern> parse_pattern(const Json& j, const std::string& where) {
  if (!j.is_object()) return invalid_model("tokenizer.json: {}.pattern must be an object", where);
  Pattern p;
  if (j.contains("String")) {
    EMBER_ASSIGN_OR_RETURN(p.literal, json_string(j, "String", where + ".pattern"));
    return p;
  }
  if (j.contains("Regex")) {
    EMBER_ASSIGN_OR_RETURN(std::string source, json_string(j, "Regex", where + ".pattern"));
    auto regex = Regex::compile(source);
    if (!regex) return regex.status().with_context("tokenizer.json: " + where + ".pattern: ");
    p.regex = std::move(regex).value();
    return p;
  }
  return invalid_model("tokenizer.json: {}.pattern needs \"String\" or \"Regex\"", where);
}

void replace_all(const Pattern& pattern, const std::string& content, std::string& text) {
  std::vector<std::pair<size_t, size_t>> matches;
  pattern.find_all(text, matches);
  if (matches.empty()) return;
  std::string out;
  out.reserve(text.size() + matches.size() * content.size());
  size_t prev = 0;
  for (auto [b, e] : matches) {
    out.append(text, prev, b - prev);
    out += content;
    prev = e;
  }
  out.append(text, prev, std::string::npos);
  text = std::move(out);
}

Result<std::string> json_string(const Json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) {
    return invalid_model("tokenizer.json: {}.{} must be a string", where, key);
  }
  return it->get<std::string>();
}

Result<bool> json_bool(const Json& j, const char* key, bool fallback, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) return invalid_model("tokenizer.json: {}.{} must be a boolean", where, key);
  return it->get<bool>();
}

Result<int64_t> json_int(const Json& j, const char* key, int64_t fallback, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number_integer()) return invalid_model("tokenizer.json: {}.{} must be an integer", where, key);
  return it->get<int64_t>();
}

}  // namespace ember::genai::detail
