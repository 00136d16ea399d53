#include "base/json.h"

#include <fmt/format.h>

namespace ember {

std::string json_depth_error(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        return fmt::format("nests arrays and objects more than {} deep (at byte {})", kMaxJsonDepth, i);
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return {};
}

}  // namespace ember
