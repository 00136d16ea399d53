// Tokenizer encode throughput, bytes of text per second: "tokenizer/encode/NAME"
// for each tokenizer folder NAME under EMBER_TOKENIZER_DIRS (default: the
// tokenizer.json files scripts/setup.sh fetches). Each iteration encodes every
// text of the JSON list in EMBER_TOKENIZER_TEXTS (default: the tokenizer tests'
// multilingual corpus) separately, without added special tokens.
// tools/bench_tokenizer.py runs these against Hugging Face tokenizers.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "genai/tokenizer.h"
#include "micro_util.h"

namespace ember::bench {
namespace {

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

}  // namespace

void register_tokenizer_benchmarks() {
  std::ifstream file(env_or("EMBER_TOKENIZER_TEXTS", EMBER_SOURCE_DIR "/tests/genai/tokenizer_corpus.json"));
  const nlohmann::json list = nlohmann::json::parse(file, nullptr, /*allow_exceptions=*/false);
  if (!list.is_array()) return;
  auto texts = std::make_shared<std::vector<std::string>>();
  int64_t bytes = 0;
  for (const auto& t : list) {
    texts->push_back(t.get<std::string>());
    bytes += static_cast<int64_t>(texts->back().size());
  }
  const std::filesystem::path root = env_or("EMBER_TOKENIZER_DIRS", EMBER_TOKENIZERS_DIR);
  std::error_code ec;
  std::vector<std::filesystem::path> dirs;
  for (const auto& entry : std::filesystem::directory_iterator(root, ec)) {
    if (std::filesystem::exists(entry.path() / "tokenizer.json")) dirs.push_back(entry.path());
  }
  std::sort(dirs.begin(), dirs.end());
  for (const auto& dir : dirs) {
    const std::string name = "tokenizer/encode/" + dir.filename().string();
    const std::string path = (dir / "tokenizer.json").string();
    benchmark::RegisterBenchmark(name.c_str(), [path, texts, bytes](benchmark::State& state) {
      auto tokenizer = genai::Tokenizer::from_file(path);
      if (!tokenizer.is_ok()) {
        state.SkipWithError(tokenizer.status().to_string().c_str());
        return;
      }
      int64_t tokens = 0;
      for (auto _ : state) {
        for (const std::string& text : *texts) tokens += static_cast<int64_t>(tokenizer->encode(text, false).size());
      }
      state.SetBytesProcessed(state.iterations() * bytes);
      state.counters["tokens"] = benchmark::Counter(static_cast<double>(tokens) / static_cast<double>(state.iterations()));
    })->UseRealTime();
  }
}

}  // namespace ember::bench
