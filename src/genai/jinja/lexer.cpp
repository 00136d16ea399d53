#include "genai/jinja/lexer.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "genai/jinja/value.h"

namespace ember::genai::jinja {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

std::string normalize_newlines(const std::string& source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  // jinja2's keep_trailing_newline=False drops one trailing newline.
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

void append_utf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Lexer {
 public:
  Lexer(std::string source, const LexOptions& options) : src_(std::move(source)), options_(options) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  std::vector<Token> run() {
    bool line_starting = true;
    size_t pos = 0;
    while (pos < src_.size()) {
      size_t tag = pos;
      while ((tag = src_.find('{', tag)) != std::string::npos) {
        if (tag + 1 < src_.size() && std::strchr("{%#", src_[tag + 1])) break;
        ++tag;
      }
      std::string text = src_.substr(pos, tag == std::string::npos ? std::string::npos : tag - pos);
      if (tag == std::string::npos) {
        emit(Token::Type::kText, std::move(text), pos);
        break;
      }
      const char kind = src_[tag + 1];
      const char sign = tag + 2 < src_.size() && (src_[tag + 2] == '-' || src_[tag + 2] == '+') ? src_[tag + 2] : 0;
      if (sign == '-') {
        while (!text.empty() && is_space(text.back())) text.pop_back();
      } else if (sign != '+' && options_.lstrip_blocks && kind != '{') {
        const size_t newline = text.rfind('\n');
        const size_t l_pos = newline == std::string::npos ? 0 : newline + 1;
        if ((l_pos > 0 || line_starting) &&
            std::all_of(text.begin() + static_cast<long>(l_pos), text.end(), is_space)) {
          text.resize(l_pos);
        }
      }
      if (!text.empty()) emit(Token::Type::kText, std::move(text), pos);
      pos = tag + 2 + (sign ? 1 : 0);
      if (kind == '#') {
        pos = comment(tag, pos);
      } else {
        pos = tag_body(kind == '%', tag, pos);
      }
      line_starting = src_[pos - 1] == '\n';
    }
    emit(Token::Type::kEof, "", src_.size());
    return std::move(tokens_);
  }

 private:
  void emit(Token::Type type, std::string text, size_t pos) {
    const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), pos) - 1;
    tokens_.push_back({type, std::move(text), static_cast<int>(it - line_starts_.begin()) + 1,
                       static_cast<int>(pos - *it) + 1});
  }

  [[noreturn]] void fail(const std::string& message, size_t pos) {
    emit(Token::Type::kEof, "", pos);
    throw Error(message, tokens_.back().line, tokens_.back().column);
  }

  // Whitespace after a closing tag: all of it after `-`, one newline with trim_blocks.
  size_t after_close(char sign, bool is_block, size_t pos) {
    if (sign == '-') {
      while (pos < src_.size() && is_space(src_[pos])) ++pos;
    } else if (sign != '+' && is_block && options_.trim_blocks && pos < src_.size() && src_[pos] == '\n') {
      ++pos;
    }
    return pos;
  }

  size_t comment(size_t open, size_t pos) {
    const size_t end = src_.find("#}", pos);
    if (end == std::string::npos) fail("missing end of comment tag", open);
    const char sign = end > pos && (src_[end - 1] == '-' || src_[end - 1] == '+') ? src_[end - 1] : 0;
    return after_close(sign, true, end + 2);
  }

  size_t tag_body(bool is_block, size_t open, size_t pos) {
    emit(is_block ? Token::Type::kBlockBegin : Token::Type::kVarBegin, "", open);
    const char* close = is_block ? "%}" : "}}";
    int depth = 0;
    while (true) {
      while (pos < src_.size() && is_space(src_[pos])) ++pos;
      if (pos >= src_.size()) fail(is_block ? "unexpected end of template: unterminated '{%' block"
                                            : "unexpected end of template: unterminated '{{' expression", open);
      const char c = src_[pos];
      if (depth == 0) {
        const bool signed_close = (c == '-' || c == '+') && src_.compare(pos + 1, 2, close) == 0;
        if (signed_close || src_.compare(pos, 2, close) == 0) {
          emit(is_block ? Token::Type::kBlockEnd : Token::Type::kVarEnd, "", pos);
          return after_close(signed_close ? c : 0, is_block, pos + (signed_close ? 3 : 2));
        }
      }
      if (is_name_start(c)) {
        size_t end = pos;
        while (end < src_.size() && is_name_char(src_[end])) ++end;
        emit(Token::Type::kName, src_.substr(pos, end - pos), pos);
        pos = end;
      } else if (is_digit(c)) {
        pos = number(pos);
      } else if (c == '\'' || c == '"') {
        pos = string(pos);
      } else {
        pos = op(pos, depth);
      }
    }
  }

  size_t number(size_t pos) {
    size_t end = pos;
    while (end < src_.size() && (is_digit(src_[end]) || src_[end] == '_')) ++end;
    bool is_float = false;
    const bool after_dot = !tokens_.empty() && tokens_.back().type == Token::Type::kOp && tokens_.back().text == ".";
    if (!after_dot && end + 1 < src_.size() && src_[end] == '.' && is_digit(src_[end + 1])) {
      is_float = true;
      ++end;
      while (end < src_.size() && (is_digit(src_[end]) || src_[end] == '_')) ++end;
    }
    if (!after_dot && end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
      size_t e = end + 1;
      if (e < src_.size() && (src_[e] == '+' || src_[e] == '-')) ++e;
      if (e < src_.size() && is_digit(src_[e])) {
        is_float = true;
        end = e;
        while (end < src_.size() && is_digit(src_[end])) ++end;
      }
    }
    std::string text = src_.substr(pos, end - pos);
    std::erase(text, '_');
    emit(is_float ? Token::Type::kFloat : Token::Type::kInt, std::move(text), pos);
    return end;
  }

  // Python's unicode-escape decoding of the literal, as jinja2 applies it.
  size_t string(size_t pos) {
    const char quote = src_[pos];
    std::string value;
    size_t i = pos + 1;
    for (; i < src_.size() && src_[i] != quote; ++i) {
      if (src_[i] != '\\' || i + 1 >= src_.size()) {
        value += src_[i];
        continue;
      }
      const char e = src_[++i];
      switch (e) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'v': value += '\v'; break;
        case 'a': value += '\a'; break;
        case '0': value += '\0'; break;
        case '\n': break;
        case '\\': case '\'': case '"': value += e; break;
        case 'x': case 'u': case 'U': {
          const size_t digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          if (i + digits >= src_.size()) fail("truncated escape in string literal", i);
          append_utf8(static_cast<uint32_t>(std::stoul(src_.substr(i + 1, digits), nullptr, 16)), value);
          i += digits;
          break;
        }
        default: value += '\\'; value += e;
      }
    }
    if (i >= src_.size()) fail("unterminated string literal", pos);
    emit(Token::Type::kString, std::move(value), pos);
    return i + 1;
  }

  size_t op(size_t pos, int& depth) {
    static const char* kTwo[] = {"//", "**", "==", "!=", "<=", ">="};
    for (const char* two : kTwo) {
      if (src_.compare(pos, 2, two) == 0) {
        emit(Token::Type::kOp, two, pos);
        return pos + 2;
      }
    }
    const char c = src_[pos];
    if (!std::strchr("+-*/%~<>=.,:|()[]{}", c)) fail(fmt::format("unexpected char '{}'", c), pos);
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    emit(Token::Type::kOp, std::string(1, c), pos);
    return pos + 1;
  }

  std::string src_;
  LexOptions options_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(const std::string& source, const LexOptions& options) {
  return Lexer(normalize_newlines(source), options).run();
}

}  // namespace ember::genai::jinja
