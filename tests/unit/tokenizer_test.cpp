// genai::Tokenizer against Hugging Face `tokenizers` (the oracle): the expected ids and
// texts are generated at test time by tests/genai/tokenizer_reference.py over the corpus
// tests/genai/tokenizer_corpus.json, for every tokenizer under third_party/tokenizers.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "genai/tokenizer.h"

namespace ember::genai {
namespace {

// llama2_metaspace: Llama-2's vocab with the Metaspace pre-tokenizer and decoder, written
// by the reference script into the build folder (no shipped file here uses Metaspace).
const char* const kTokenizers[] = {"llama3",  "qwen3",        "gemma3",   "llama2",          "deepseek_v3",
                                   "qwen2_5", "mistral_nemo", "llama3_2", "llama2_metaspace"};

const std::string kVariantsDir = std::string(EMBER_BINARY_DIR) + "/tokenizer_variants";

std::string tokenizer_path(const std::string& name) {
  const std::string dir = name == "llama2_metaspace" ? kVariantsDir : std::string(EMBER_TOKENIZERS_DIR);
  return dir + "/" + name + "/tokenizer.json";
}

// The reference rows of one tokenizer, made by one python call into a file of its own
// (ctest runs each test case as its own process, in parallel).
const nlohmann::json& reference(const std::string& name) {
  static std::map<std::string, nlohmann::json> cache;
  auto found = cache.find(name);
  if (found != cache.end()) return found->second;
  const std::string out = std::string(EMBER_BINARY_DIR) + "/tokenizer_reference_" + name + ".json";
  const std::string cmd = std::string("TOKENIZERS_PARALLELISM=false python3 ") + EMBER_SOURCE_DIR +
                          "/tests/genai/tokenizer_reference.py " + EMBER_TOKENIZERS_DIR + " " + EMBER_SOURCE_DIR +
                          "/tests/genai/tokenizer_corpus.json " + out + " " + kVariantsDir + " " + name;
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(out);
  const nlohmann::json all = in ? nlohmann::json::parse(in) : nlohmann::json::object();
  return cache[name] = all.contains(name) ? all[name] : nlohmann::json::array();
}

const Tokenizer& tokenizer(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto& slot = cache[name];
  if (!slot) {
    if (name == "llama2_metaspace") reference(name);  // writes the variant
    auto t = Tokenizer::from_file(tokenizer_path(name));
    EXPECT_TRUE(t.is_ok()) << t.status().to_string();
    slot = std::make_unique<Tokenizer>(std::move(t).value());
  }
  return *slot;
}

class TokenizerParity : public ::testing::TestWithParam<const char*> {};

TEST_P(TokenizerParity, EncodeMatchesHuggingFace) {
  const Tokenizer& tok = tokenizer(GetParam());
  const auto& rows = reference(GetParam());
  ASSERT_GT(rows.size(), 30u);
  for (const auto& row : rows) {
    const std::string text = row["text"];
    EXPECT_EQ(tok.encode(text, false), row["ids"].get<std::vector<int32_t>>()) << "text: " << text;
    EXPECT_EQ(tok.encode(text, true), row["ids_special"].get<std::vector<int32_t>>()) << "text: " << text;
  }
}

TEST_P(TokenizerParity, DecodeMatchesHuggingFace) {
  const Tokenizer& tok = tokenizer(GetParam());
  for (const auto& row : reference(GetParam())) {
    const auto ids = row["ids_special"].get<std::vector<int32_t>>();
    EXPECT_EQ(tok.decode(ids, false), row["decoded"].get<std::string>()) << "text: " << row["text"];
    EXPECT_EQ(tok.decode(ids, true), row["decoded_skip"].get<std::string>()) << "text: " << row["text"];
  }
}

// Fed one id at a time, the detokenizer never emits a broken UTF-8 sequence and its
// pieces add up to decode(all ids) — also over ids that split characters into bytes.
TEST_P(TokenizerParity, StreamingEqualsDecode) {
  const Tokenizer& tok = tokenizer(GetParam());
  for (const auto& row : reference(GetParam())) {
    const auto ids = row["ids_special"].get<std::vector<int32_t>>();
    for (bool skip : {false, true}) {
      StreamingDetokenizer stream(tok, skip);
      std::string joined;
      for (int32_t id : ids) {
        const std::string piece = stream.put(id);
        EXPECT_EQ(piece.find("\xEF\xBF\xBD"), std::string::npos) << "text: " << row["text"];
        joined += piece;
      }
      joined += stream.finish();
      EXPECT_EQ(joined, tok.decode(ids, skip)) << "text: " << row["text"];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTokenizers, TokenizerParity, ::testing::ValuesIn(kTokenizers));

// Llama-2 spells "𒀀" (U+12000) as four <0xNN> byte tokens: the first three complete no character.
TEST(Tokenizer, StreamingHoldsBackSplitCharacters) {
  const Tokenizer& tok = tokenizer("llama2");
  const std::vector<int32_t> ids = tok.encode("a𒀀b", false);
  StreamingDetokenizer stream(tok, false);
  std::string out;
  int held_back = 0;
  for (int32_t id : ids) {
    const std::string piece = stream.put(id);
    held_back += piece.empty();
    out += piece;
  }
  out += stream.finish();
  EXPECT_EQ(held_back, 3);
  EXPECT_EQ(out, tok.decode(ids, false));
  EXPECT_EQ(out, "a𒀀b");
}

// A tokenizer whose decode of a token changes with the tokens after it (found by
// fuzz_tokenizer_json: byte-fallback bytes merging across the emitted prefix) never
// settles; the stream emits after at most 16 held ids instead of holding every id
// after that point (and decoding an ever longer window at each, quadratic).
TEST(Tokenizer, StreamingHoldsAtMostSixteenIds) {
  std::ifstream file(std::string(EMBER_SOURCE_DIR) + "/tests/fuzz/regressions/tokenizer_json/streaming-never-settles-timeout",
                     std::ios::binary);
  const std::string input((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const size_t nul = input.find('\0');
  ASSERT_NE(nul, std::string::npos);
  auto tok = Tokenizer::from_json(std::string_view(input).substr(0, nul));
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  const std::vector<int32_t> ids = tok->encode(input.substr(nul + 1), true);
  ASSERT_GT(ids.size(), 4000u);
  StreamingDetokenizer stream(*tok, true);
  size_t held = 0, most_held = 0;
  for (int32_t id : ids) {
    held = stream.put(id).empty() ? held + 1 : 0;
    most_held = std::max(most_held, held);
  }
  EXPECT_LE(most_held, 16u);
}

TEST(Tokenizer, RoundTripsSpecialTokensAndLookups) {
  const Tokenizer& tok = tokenizer("qwen3");
  const int32_t im_start = tok.token_to_id("<|im_start|>");
  ASSERT_GE(im_start, 0);
  EXPECT_TRUE(tok.is_special(im_start));
  EXPECT_EQ(tok.id_to_token(im_start), "<|im_start|>");
  EXPECT_EQ(tok.token_to_id("no such token at all"), -1);
  EXPECT_GE(tok.vocab_size(), im_start + 1);
}

TEST(Tokenizer, InvalidUtf8ReadsAsReplacementCharacter) {
  const Tokenizer& tok = tokenizer("llama3");
  EXPECT_EQ(tok.encode("a\xFF" "b", false), tok.encode("a\xEF\xBF\xBD" "b", false));
}

Status load_error(const std::string& json) {
  auto t = Tokenizer::from_json(json);
  EXPECT_FALSE(t.is_ok());
  return t.status();
}

TEST(Tokenizer, RefusesMalformedFilesNamingTheField) {
  const std::string vocab = R"("vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"])";
  EXPECT_TRUE(Tokenizer::from_json(R"({"model": {"type": "BPE", )" + vocab + "}}").is_ok());
  EXPECT_NE(load_error("{not json").message().find("parse error"), std::string::npos);
  EXPECT_NE(load_error(R"({"model": {"type": "Unigram", "vocab": []}})").message().find("model.type 'Unigram'"),
            std::string::npos);
  EXPECT_NE(load_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}})").message().find(
                "model.merges[0]"),
            std::string::npos);
  EXPECT_NE(load_error(R"({"model": {"type": "BPE", )" + vocab + R"(}, "pre_tokenizer": {"type": "Whitespace"}})")
                .message()
                .find("pre_tokenizer.type 'Whitespace'"),
            std::string::npos);
  EXPECT_NE(load_error(R"({"model": {"type": "BPE", )" + vocab +
                       R"(}, "normalizer": {"type": "Sequence", "normalizers": [{"type": "BertNormalizer"}]}})")
                .message()
                .find("normalizer.normalizers[0].type 'BertNormalizer'"),
            std::string::npos);
  EXPECT_NE(load_error(R"({"model": {"type": "BPE", )" + vocab +
                       R"(}, "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(["}, "behavior": "Isolated"}})")
                .message()
                .find("pre_tokenizer.pattern"),
            std::string::npos);
  EXPECT_NE(load_error(R"({"model": {"type": "BPE", )" + vocab + R"(}, "decoder": {"type": "WordPiece"}})")
                .message()
                .find("decoder.type 'WordPiece'"),
            std::string::npos);
  EXPECT_NE(load_error(R"({"model": {"type": "BPE", )" + vocab + R"(}, "added_tokens": [{"id": 5}]})")
                .message()
                .find("added_tokens[0].content"),
            std::string::npos);
  EXPECT_FALSE(Tokenizer::from_file("/nonexistent/tokenizer.json").is_ok());
}

}  // namespace
}  // namespace ember::genai
