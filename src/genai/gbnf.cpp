#include "genai/gbnf.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "genai/tokenizer_internal.h"

namespace ember::genai {
namespace {

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-'; }

// A recursive-descent parse in llama.cpp's grammar-parser's shape, writing Lark as it goes.
constexpr int kMaxGroupDepth = 256;

// What a piece of a rule needs to match a finite text, to find the rules that
// can never end: every way through them needs themselves again, as in
// `expr ::= "(" expr ")"`. A constraint built on one forces an endless text
// (llguidance spends the fast-forward budget on it) or leads generation into a
// dead end, so the grammar is refused.
struct Ends {
  enum class Kind { kAlways, kRule, kAll, kAny };
  Kind kind = Kind::kAlways;
  std::string rule;         // kRule
  std::vector<Ends> parts;  // kAll, kAny

  bool holds(const std::set<std::string>& ending) const {
    const auto part_holds = [&](const Ends& p) { return p.holds(ending); };
    switch (kind) {
      case Kind::kAlways: return true;
      case Kind::kRule: return ending.contains(rule);
      case Kind::kAll: return std::all_of(parts.begin(), parts.end(), part_holds);
      case Kind::kAny: return std::any_of(parts.begin(), parts.end(), part_holds);
    }
    return false;
  }
  void rules(std::vector<std::string>& out) const {
    if (kind == Kind::kRule) out.push_back(rule);
    for (const Ends& p : parts) p.rules(out);
  }
};

class GbnfParser {
 public:
  explicit GbnfParser(std::string_view src) : src_(src) {}

  Result<std::string> translate() {
    pos_ = 0;
    EMBER_RETURN_IF_ERROR(skip_space(true));
    while (pos_ < src_.size()) EMBER_RETURN_IF_ERROR(parse_rule());
    if (!defined_.contains("root")) return error_at(0, "the grammar has no 'root' rule (the start symbol)");
    for (const auto& [name, where] : used_) {
      if (!defined_.contains(name)) return error_at(where, fmt::format("rule '{}' is used but never defined", name));
    }
    EMBER_RETURN_IF_ERROR(check_rules_end());
    return "start: " + lark_name("root") + "\n" + out_;
  }

 private:
  Status error_at(size_t pos, const std::string& what) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos && i < src_.size(); ++i) {
      if (src_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return invalid_argument("GBNF line {}, column {}: {}", line, column, what);
  }
  bool at(char c) const { return pos_ < src_.size() && src_[pos_] == c; }

  std::vector<std::string> uses(const std::string& rule) const {
    std::vector<std::string> out;
    rules_.at(rule).first.rules(out);
    return out;
  }

  // Every rule root reaches can end (Ends): the rules that can, grown to a fixed point.
  Status check_rules_end() const {
    std::set<std::string> ending;
    for (bool grew = true; grew;) {
      grew = false;
      for (const auto& [name, rule] : rules_) {
        if (!ending.contains(name) && rule.first.holds(ending)) {
          ending.insert(name);
          grew = true;
        }
      }
    }
    // The rules root reaches that cannot end; every one leads into a cycle of them
    // (each needs another), and the first defined in such a cycle is the one named.
    std::set<std::string> stuck;
    std::vector<std::string> todo = {"root"};
    for (std::set<std::string> reached = {"root"}; !todo.empty();) {
      const std::string name = std::move(todo.back());
      todo.pop_back();
      if (!ending.contains(name)) stuck.insert(name);
      for (std::string& use : uses(name)) {
        if (reached.insert(use).second) todo.push_back(std::move(use));
      }
    }
    const std::string* named = nullptr;
    for (const std::string& name : stuck) {
      if (named && rules_.at(name).second > rules_.at(*named).second) continue;
      std::set<std::string> seen;
      todo = uses(name);
      bool cycles = false;
      while (!todo.empty() && !cycles) {
        const std::string next = std::move(todo.back());
        todo.pop_back();
        if (!stuck.contains(next) || !seen.insert(next).second) continue;
        cycles = next == name;
        for (std::string& use : uses(next)) todo.push_back(std::move(use));
      }
      if (cycles) named = &name;
    }
    if (!named) return Status::ok();
    return error_at(rules_.at(*named).second,
                    fmt::format("rule '{}' can never end: every way through it needs a rule that cannot end "
                                "(itself or one it uses)", *named));
  }

  // Spaces, tabs and # comments; newlines too when `newline_ok`.
  Status skip_space(bool newline_ok) {
    while (pos_ < src_.size()) {
      const char c = src_[pos_];
      if (c == ' ' || c == '\t') {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < src_.size() && src_[pos_] != '\n') ++pos_;
      } else if (newline_ok && (c == '\n' || c == '\r')) {
        ++pos_;
      } else {
        break;
      }
    }
    return Status::ok();
  }

  std::string lark_name(const std::string& gbnf_name) {
    if (auto it = names_.find(gbnf_name); it != names_.end()) return it->second;
    std::string base = "g_";
    for (char c : gbnf_name) base.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    std::string name = base;
    for (int i = 2; taken_.contains(name); ++i) name = fmt::format("{}_{}", base, i);
    taken_.insert(name);
    names_[gbnf_name] = name;
    return name;
  }

  Result<std::string> parse_name() {
    const size_t begin = pos_;
    while (pos_ < src_.size() && is_name_char(src_[pos_])) ++pos_;
    if (pos_ == begin) return error_at(begin, "expecting a rule name");
    return std::string(src_.substr(begin, pos_ - begin));
  }

  Result<char32_t> parse_hex(size_t digits) {
    const size_t begin = pos_;
    char32_t value = 0;
    for (size_t i = 0; i < digits; ++i, ++pos_) {
      if (pos_ >= src_.size() || !std::isxdigit(static_cast<unsigned char>(src_[pos_]))) {
        return error_at(begin, fmt::format("expecting {} hex digits", digits));
      }
      const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(src_[pos_])));
      value = value * 16 + static_cast<char32_t>(c <= '9' ? c - '0' : c - 'a' + 10);
    }
    if (value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) {
      return error_at(begin, fmt::format("U+{:X} is not a Unicode scalar value", static_cast<uint32_t>(value)));
    }
    return value;
  }

  // One character of a literal or class: an escape or a UTF-8 sequence.
  Result<char32_t> parse_char() {
    if (pos_ >= src_.size()) return error_at(pos_, "unexpected end of input");
    if (src_[pos_] == '\\') {
      const size_t begin = pos_;
      if (++pos_ >= src_.size()) return error_at(begin, "unexpected end of input after '\\'");
      const char e = src_[pos_++];
      switch (e) {
        case 'x': return parse_hex(2);
        case 'u': return parse_hex(4);
        case 'U': return parse_hex(8);
        case 't': return U'\t';
        case 'r': return U'\r';
        case 'n': return U'\n';
        case '\\': case '"': case '[': case ']': return static_cast<char32_t>(e);
        default: return error_at(begin, fmt::format("unknown escape '\\{}'", e));
      }
    }
    const auto lead = static_cast<unsigned char>(src_[pos_]);
    const size_t len = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 0;
    if (len == 0 || pos_ + len > src_.size()) return error_at(pos_, "invalid UTF-8");
    char32_t c = len == 1 ? lead : lead & (0x7F >> len);
    for (size_t i = 1; i < len; ++i) {
      const auto b = static_cast<unsigned char>(src_[pos_ + i]);
      if ((b & 0xC0) != 0x80) return error_at(pos_, "invalid UTF-8");
      c = (c << 6) | (b & 0x3F);
    }
    pos_ += len;
    return c;
  }

  static std::string regex_char(char32_t c) { return fmt::format("\\x{{{:X}}}", static_cast<uint32_t>(c)); }

  Status parse_rule() {
    const size_t begin = pos_;
    EMBER_ASSIGN_OR_RETURN(std::string name, parse_name());
    EMBER_RETURN_IF_ERROR(skip_space(false));
    if (src_.substr(pos_, 3) != "::=") return error_at(pos_, fmt::format("expecting '::=' after rule name '{}'", name));
    if (defined_.contains(name)) return error_at(begin, fmt::format("rule '{}' is defined twice", name));
    defined_.insert(name);
    pos_ += 3;
    EMBER_RETURN_IF_ERROR(skip_space(true));
    Ends ends;
    EMBER_ASSIGN_OR_RETURN(std::string body, parse_alternates(false, ends));
    rules_.emplace(name, Rule{std::move(ends), begin});
    if (body.empty()) return error_at(begin, fmt::format("rule '{}' matches only the empty string", name));
    out_ += lark_name(name) + ": " + body + "\n";
    if (at('\r')) ++pos_;
    if (at('\n')) {
      ++pos_;
    } else if (pos_ < src_.size()) {
      return error_at(pos_, fmt::format("expecting a newline or the end after rule '{}', found '{}'", name, src_[pos_]));
    }
    return skip_space(true);
  }

  // Lark has no empty alternative: "a ::= | x" becomes "(x)?".
  Result<std::string> parse_alternates(bool nested, Ends& ends) {
    std::vector<std::string> alternatives;
    bool optional = false;
    ends = Ends{Ends::Kind::kAny, {}, {}};
    while (true) {
      Ends seq_ends;
      EMBER_ASSIGN_OR_RETURN(std::string seq, parse_sequence(nested, seq_ends));
      if (seq.empty()) {
        optional = true;
      } else {
        alternatives.push_back(std::move(seq));
        ends.parts.push_back(std::move(seq_ends));
      }
      if (!at('|')) break;
      ++pos_;
      EMBER_RETURN_IF_ERROR(skip_space(true));
    }
    if (optional) ends = Ends{};
    std::string joined;
    for (size_t i = 0; i < alternatives.size(); ++i) joined += (i ? " | " : "") + alternatives[i];
    if (!optional || joined.empty()) return joined;
    joined.insert(joined.begin(), '(');
    joined += ")?";
    return joined;
  }

  // One alternative's elements; "" when it has none.
  Result<std::string> parse_sequence(bool nested, Ends& ends) {
    std::string out;
    ends = Ends{Ends::Kind::kAll, {}, {}};
    Ends element;  // what the element being read needs to end
    bool last_repeatable = false;  // an element a postfix operator may follow
    while (pos_ < src_.size()) {
      const size_t begin = pos_;
      const char c = src_[pos_];
      if (c == '"') {
        ++pos_;
        std::string text;
        while (pos_ < src_.size() && src_[pos_] != '"') {
          if (src_[pos_] == '\n') return error_at(begin, "unterminated string literal");
          EMBER_ASSIGN_OR_RETURN(char32_t ch, parse_char());
          detail::utf8_append(text, ch);
        }
        if (!at('"')) return error_at(begin, "unterminated string literal");
        ++pos_;
        // An empty literal matches nothing: Lark has no empty string, an empty group does the same.
        if (text.empty()) {  // matches the empty string: nothing to add
          EMBER_RETURN_IF_ERROR(skip_space(nested));
          continue;
        }
        try {
          out += nlohmann::json(text).dump();
        } catch (const nlohmann::json::exception&) {  // raw bytes of invalid UTF-8 in the literal
          return error_at(begin, "the string literal is not valid UTF-8");
        }
      } else if (c == '[') {
        ++pos_;
        std::string cls = "/[";
        if (at('^')) {
          ++pos_;
          cls += "^";
        }
        bool any = false;
        while (pos_ < src_.size() && src_[pos_] != ']') {
          EMBER_ASSIGN_OR_RETURN(char32_t lo, parse_char());
          cls += regex_char(lo);
          if (at('-') && pos_ + 1 < src_.size() && src_[pos_ + 1] != ']') {
            ++pos_;
            EMBER_ASSIGN_OR_RETURN(char32_t hi, parse_char());
            if (hi < lo) return error_at(begin, "character range is out of order");
            cls.push_back('-');
            cls += regex_char(hi);
          }
          any = true;
        }
        if (!at(']')) return error_at(begin, "unterminated character class");
        if (!any) return error_at(begin, "empty character class");
        ++pos_;
        out += cls + "]/";
      } else if (is_name_char(c)) {
        EMBER_ASSIGN_OR_RETURN(std::string name, parse_name());
        if (!used_.contains(name)) used_[name] = begin;
        out += lark_name(name);
        element = Ends{Ends::Kind::kRule, name, {}};
      } else if (c == '(') {
        // Groups recurse: a bound keeps deep nesting an error, not a stack overflow.
        if (group_depth_ == kMaxGroupDepth) {
          return error_at(begin, fmt::format("groups nest more than {} deep", kMaxGroupDepth));
        }
        ++pos_;
        EMBER_RETURN_IF_ERROR(skip_space(true));
        ++group_depth_;
        Ends group_ends;
        EMBER_ASSIGN_OR_RETURN(std::string group, parse_alternates(true, group_ends));
        --group_depth_;
        if (!at(')')) return error_at(begin, "expecting ')' to close this group");
        ++pos_;
        if (group.empty()) {  // "()" matches the empty string
          EMBER_RETURN_IF_ERROR(skip_space(nested));
          continue;
        }
        out.push_back('(');
        out += group;
        out.push_back(')');
        element = std::move(group_ends);
      } else if (c == '.') {
        ++pos_;
        out += "/(?s:.)/";
      } else if (c == '*' || c == '+' || c == '?') {
        if (!last_repeatable) return error_at(begin, fmt::format("'{}' must follow an element", c));
        ++pos_;
        if (!out.empty() && out.back() == ' ') out.pop_back();
        out.push_back(c);
        out.push_back(' ');
        if (c != '+' && !ends.parts.empty()) ends.parts.back() = Ends{};  // may match nothing
        last_repeatable = false;
        EMBER_RETURN_IF_ERROR(skip_space(nested));
        continue;
      } else if (c == '{') {
        if (!last_repeatable) return error_at(begin, "'{' must follow an element");
        bool optional = false;
        EMBER_RETURN_IF_ERROR(parse_repetition(out, optional));
        if (optional && !ends.parts.empty()) ends.parts.back() = Ends{};
        last_repeatable = false;
        EMBER_RETURN_IF_ERROR(skip_space(nested));
        continue;
      } else if (c == '<' || c == '!') {
        return error_at(begin, "token references (<[id]>, <|name|>, !) are not supported; write the text instead");
      } else {
        break;
      }
      out += " ";
      ends.parts.push_back(std::move(element));
      element = Ends{};
      last_repeatable = true;
      EMBER_RETURN_IF_ERROR(skip_space(nested));
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
  }

  Result<int> parse_count() {
    const size_t begin = pos_;
    int value = 0;
    while (pos_ < src_.size() && std::isdigit(static_cast<unsigned char>(src_[pos_]))) {
      value = value * 10 + (src_[pos_++] - '0');
      if (value > 100000) return error_at(begin, "repetition count is too large");
    }
    if (pos_ == begin) return error_at(begin, "expecting a number");
    return value;
  }

  // `optional`: the minimum is 0.
  Status parse_repetition(std::string& out, bool& optional) {
    const size_t begin = pos_;
    ++pos_;  // '{'
    EMBER_RETURN_IF_ERROR(skip_space(false));
    EMBER_ASSIGN_OR_RETURN(int min, parse_count());
    EMBER_RETURN_IF_ERROR(skip_space(false));
    int max = min;
    bool unbounded = false;
    if (at(',')) {
      ++pos_;
      EMBER_RETURN_IF_ERROR(skip_space(false));
      if (at('}')) {
        unbounded = true;
      } else {
        EMBER_ASSIGN_OR_RETURN(max, parse_count());
        EMBER_RETURN_IF_ERROR(skip_space(false));
      }
    }
    if (!at('}')) return error_at(begin, "expecting '}' to close the repetition");
    ++pos_;
    if (!unbounded && max < min) return error_at(begin, "repetition maximum is below its minimum");
    if (!unbounded && max == 0) return error_at(begin, "repetition {0} matches nothing; remove the element");
    optional = min == 0;
    // Lark's {m,n} follows the element, which `out` ends with (and a space).
    if (!out.empty() && out.back() == ' ') out.pop_back();
    out += unbounded ? fmt::format("{{{},}} ", min) : fmt::format("{{{},{}}} ", min, max);
    return Status::ok();
  }

  std::string_view src_;
  size_t pos_ = 0;
  int group_depth_ = 0;
  std::string out_;
  std::set<std::string> defined_;
  using Rule = std::pair<Ends, size_t>;  // what it needs to end, where it is defined
  std::map<std::string, Rule> rules_;
  std::map<std::string, size_t> used_;  // first use
  std::map<std::string, std::string> names_;
  std::set<std::string> taken_;
};

}  // namespace

Result<std::string> gbnf_to_lark(std::string_view gbnf) { return GbnfParser(gbnf).translate(); }

bool looks_like_gbnf(std::string_view grammar) {
  size_t pos = 0;
  while (pos < grammar.size()) {
    size_t end = grammar.find('\n', pos);
    if (end == std::string_view::npos) end = grammar.size();
    std::string_view line = grammar.substr(pos, end - pos);
    pos = end + 1;
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string_view::npos || line[first] == '#' || line.substr(first, 2) == "//") continue;
    size_t name_end = first;
    while (name_end < line.size() && is_name_char(line[name_end])) ++name_end;
    const size_t op = line.find_first_not_of(" \t", name_end);
    return name_end > first && op != std::string_view::npos && line.substr(op, 3) == "::=";
  }
  return false;
}

}  // namespace ember::genai
