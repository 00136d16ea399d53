// JSON from outside Ember nests at most kMaxJsonDepth deep (base/json.h), checked
// where it is parsed: the bound itself, and the readers that go through it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/json.h"
#include "genai/genai_config.h"
#include "genai/tokenizer.h"
#include "nested_text.h"

namespace ember {
namespace {

using test::nested;

TEST(Json, DepthIsCountedOutsideStringsUpToTheBound) {
  EXPECT_EQ(json_depth_error(nested("[", "", "]", 128)), "");
  EXPECT_EQ(json_depth_error(nested("{\"a\":", "1", "}", 128)), "");
  EXPECT_EQ(json_depth_error(nested("[", "", "]", 129)), "nests arrays and objects more than 128 deep (at byte 128)");
  EXPECT_EQ(json_depth_error("{\"a\": " + nested("[", "", "]", 128) + "}"),
            "nests arrays and objects more than 128 deep (at byte 133)");
  // Brackets in strings, escaped quotes included, are text.
  EXPECT_EQ(json_depth_error("[\"" + std::string(1000, '[') + "\\\"" + std::string(1000, '{') + "\"]"), "");
  EXPECT_NE(json_depth_error("[\"\\\\\"" + nested("[", "", "]", 200) + "]"), "");
  EXPECT_EQ(json_depth_error(""), "");
}

TEST(Json, ParseJsonRefusesWithTheReason) {
  std::string why;
  EXPECT_EQ(parse_json<nlohmann::json>("{\"a\": [1, 2]}", &why), nlohmann::json::parse("{\"a\": [1, 2]}"));
  EXPECT_TRUE(parse_json<nlohmann::json>("{\"a\": ", &why).is_discarded());
  EXPECT_EQ(why, "is not valid JSON");
  EXPECT_TRUE(parse_json<nlohmann::ordered_json>(nested("[", "", "]", 100000), &why).is_discarded());
  EXPECT_EQ(why, "nests arrays and objects more than 128 deep (at byte 128)");
}

// A document deep enough to overflow the stack of any recursive walk, through
// each reader that parses a file or request of its own.
TEST(Json, ReadersRefuseDeepDocumentsByName) {
  const std::string deep = nested("{\"a\":", "1", "}", 100000);
  auto config = genai::parse_genai_config(deep);
  ASSERT_FALSE(config.is_ok());
  EXPECT_EQ(config.status().message(), "genai_config.json nests arrays and objects more than 128 deep (at byte 640)");
  auto tokenizer = genai::Tokenizer::from_json(deep);
  ASSERT_FALSE(tokenizer.is_ok());
  EXPECT_EQ(tokenizer.status().message(), "tokenizer.json nests arrays and objects more than 128 deep (at byte 640)");
}

}  // namespace
}  // namespace ember
