// A `tokenizer.json` -> Tokenizer::from_json, then encode and decode of a
// fixed text with whatever loaded (the text follows a NUL when the input has one).
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_input.h"
#include "genai/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto [json, text] = ember::fuzz::split_at_nul(data, size);
  auto tokenizer = ember::genai::Tokenizer::from_json(json);
  if (!tokenizer.is_ok()) return 0;
  std::string_view sample = text.empty() ? std::string_view("Hello, world! 123 <s> ünïcödé\n\t  ") : text;
  std::vector<int32_t> ids = tokenizer->encode(sample, /*add_special=*/true);
  std::string back = tokenizer->decode(ids, /*skip_special=*/false);
  ember::genai::StreamingDetokenizer stream(*tokenizer, /*skip_special=*/true);
  for (int32_t id : ids) stream.put(id);
  stream.finish();
  for (int32_t id = -1; id < 4; ++id) tokenizer->token_bytes(id);
  return 0;
}
