#pragma once
// Deeply nested inputs for the tests of parsers' nesting bounds.
#include <string>

namespace ember::test {

// `open` depth times, `inner`, then `close` depth times: nested("[", "1", "]", 2) is "[[1]]".
inline std::string nested(const std::string& open, const std::string& inner, const std::string& close, int depth) {
  std::string out;
  out.reserve((open.size() + close.size()) * static_cast<size_t>(depth) + inner.size());
  for (int i = 0; i < depth; ++i) out += open;
  out += inner;
  for (int i = 0; i < depth; ++i) out += close;
  return out;
}

}  // namespace ember::test
