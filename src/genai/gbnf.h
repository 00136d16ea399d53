#pragma once
// llama.cpp's GBNF grammars (grammars/README.md of llama.cpp) translated into
// llguidance's Lark syntax, which the constraint matcher reads. The parse
// follows llama.cpp's grammar-parser: `name ::= alternates` rules ending at a
// newline outside parentheses, "literals" and [character classes] with \x \u
// \U \t \n \r escapes (code points, not bytes), `.` (any character), rule
// names, ( groups ), postfix * + ? {m} {m,} {m,n}, and # comments. `root` is
// the start rule. Each rule becomes `g_<name>` (lowercased; a suffix keeps
// names apart that differ only in case); literals stay literals and classes
// become one-character regexes.
//
// One difference remains: llguidance lexes literals longest-first, so a
// grammar whose alternatives are literals that prefix one another ("a" | "aa"
// before more "a"s) may allow less than llama.cpp's character-level matcher.
#include <string>
#include <string_view>

#include "base/status.h"

namespace ember::genai {

// The Lark text for `gbnf`, or an error naming the line and column where the
// grammar is malformed, a rule used but not defined, or a missing root rule.
Result<std::string> gbnf_to_lark(std::string_view gbnf);

// True when `grammar` reads as GBNF: its first rule definition uses `::=`.
bool looks_like_gbnf(std::string_view grammar);

}  // namespace ember::genai
