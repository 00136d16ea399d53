#pragma once
// What the fuzz targets share: an input split at its first NUL byte into two
// texts (a template and its messages, a constraint kind and its text), so a
// seed stays readable and libFuzzer's mutations reach both halves.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <utility>

namespace ember::fuzz {

inline std::pair<std::string_view, std::string_view> split_at_nul(const uint8_t* data, size_t size) {
  std::string_view all(reinterpret_cast<const char*>(data), size);
  size_t nul = all.find('\0');
  if (nul == std::string_view::npos) return {all, {}};
  return {all.substr(0, nul), all.substr(nul + 1)};
}

}  // namespace ember::fuzz
