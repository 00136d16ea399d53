// The text of a genai_config.json -> parse_genai_config.
#include <cstdint>
#include <string_view>

#include "genai/genai_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto config = ember::genai::parse_genai_config(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
