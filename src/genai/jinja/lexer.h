#pragma once
// Splits a template into text and tag tokens the way jinja2's lexer does with
// trim_blocks and lstrip_blocks (Hugging Face's settings): `-` strips all
// whitespace beside a tag, `+` keeps it, a trailing newline of the source is
// dropped and \r\n / \r become \n.
#include <string>
#include <vector>

namespace ember::genai::jinja {

struct Token {
  enum class Type { kText, kBlockBegin, kBlockEnd, kVarBegin, kVarEnd, kName, kString, kInt, kFloat, kOp, kEof };
  Type type;
  std::string text;  // text, name, operator, or the unescaped string literal / number spelling
  int line = 1;
  int column = 1;
};

struct LexOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
};

// Throws Error (with line and column) on an unterminated tag, comment or string.
std::vector<Token> tokenize(const std::string& source, const LexOptions& options);

}  // namespace ember::genai::jinja
