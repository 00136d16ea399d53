// Fuzzed text through real tokenizers (models/default and the eight of
// third_party/tokenizers, loaded once): the first byte picks the tokenizer, the
// rest is encoded and decoded, and read again as token ids (two bytes each,
// spread over the vocabulary, some out of range) for decode and the streaming detokenizer.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string_view>
#include <vector>

#include "genai/tokenizer.h"

namespace {

std::vector<ember::genai::Tokenizer> g_tokenizers;

void add(const std::filesystem::path& file) {
  auto tokenizer = ember::genai::Tokenizer::from_file(file.string());
  if (!tokenizer.is_ok()) {
    std::fprintf(stderr, "%s: %s\n", file.c_str(), tokenizer.status().message().c_str());
    std::abort();
  }
  g_tokenizers.push_back(std::move(*tokenizer));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // models/default, then third_party's by name: the order make_seeds.py numbers them in.
  add(std::filesystem::path(EMBER_SOURCE_DIR) / "models/default/tokenizer.json");
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(EMBER_TOKENIZERS_DIR, ec)) {
    if (std::filesystem::exists(entry.path() / "tokenizer.json")) files.push_back(entry.path() / "tokenizer.json");
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) add(file);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const ember::genai::Tokenizer& tokenizer = g_tokenizers[data[0] % g_tokenizers.size()];
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  for (bool special : {false, true}) {
    std::vector<int32_t> ids = tokenizer.encode(text, special);
    tokenizer.decode(ids, !special);
  }
  std::vector<int32_t> ids;
  for (size_t i = 1; i + 1 < size; i += 2) {
    int64_t raw = data[i] | data[i + 1] << 8;  // spread over the vocabulary, a few ids below 0 and past it
    ids.push_back(static_cast<int32_t>(raw * (tokenizer.vocab_size() + 16) / 65536 - 8));
  }
  tokenizer.decode(ids, false);
  ember::genai::StreamingDetokenizer stream(tokenizer, true);
  for (int32_t id : ids) stream.put(id);
  stream.finish();
  return 0;
}
