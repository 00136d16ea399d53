// `ember tokenize MODEL_DIR --text TEXT [--add-special]` and
// `ember tokenize MODEL_DIR --decode 1,2,3 [--skip-special]` (contract in DESIGN.md).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "genai/tokenizer.h"

namespace ember::cli {
namespace {

struct TokenizeOptions {
  std::string model_dir;
  std::string text;
  std::string decode;
  bool add_special = false;
  bool skip_special = false;
};

Result<std::vector<int32_t>> parse_ids(const std::string& list) {
  std::vector<int32_t> ids;
  size_t pos = 0;
  while (pos <= list.size() && !list.empty()) {
    const size_t comma = std::min(list.find(',', pos), list.size());
    const std::string item = list.substr(pos, comma - pos);
    try {
      size_t used = 0;
      const long long id = std::stoll(item, &used);
      if (used != item.size() || id < 0 || id > INT32_MAX) throw std::invalid_argument(item);
      ids.push_back(static_cast<int32_t>(id));
    } catch (const std::exception&) {
      return invalid_argument("--decode: '{}' is not a token id (expected a comma-separated list such as 1,2,3)", item);
    }
    pos = comma + 1;
  }
  return ids;
}

int run_tokenize(const TokenizeOptions& o) {
  auto tokenizer = genai::Tokenizer::from_file(o.model_dir + "/tokenizer.json");
  if (!tokenizer) {
    fmt::print(stderr, "error: {}\n", tokenizer.status().to_string());
    return 1;
  }
  nlohmann::json out;
  if (!o.decode.empty()) {
    auto ids = parse_ids(o.decode);
    if (!ids) {
      fmt::print(stderr, "error: {}\n", ids.status().to_string());
      return 2;
    }
    out["text"] = tokenizer->decode(*ids, o.skip_special);
  } else {
    out["ids"] = tokenizer->encode(o.text, o.add_special);
  }
  fmt::print("{}\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  return 0;
}

}  // namespace

Command add_tokenize(CLI::App& app) {
  auto o = std::make_shared<TokenizeOptions>();
  app.add_option("model_dir", o->model_dir, "Folder holding tokenizer.json")->required();
  auto* text = app.add_option("--text", o->text, "Text to encode; prints {\"ids\": [...]}");
  auto* decode = app.add_option("--decode", o->decode, "Comma-separated ids to decode; prints {\"text\": \"...\"}");
  text->excludes(decode);
  decode->excludes(text);
  app.add_flag("--add-special", o->add_special, "Add the post-processor's special tokens (bos), as HF add_special_tokens");
  app.add_flag("--skip-special", o->skip_special, "Drop special tokens when decoding");
  return [o, text, decode] {
    if (text->count() == 0 && decode->count() == 0) {
      fmt::print(stderr, "error: tokenize needs --text TEXT or --decode IDS\n");
      return 2;
    }
    return run_tokenize(*o);
  };
}

}  // namespace ember::cli
