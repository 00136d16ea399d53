// TextStream: streamed text cut at the first stop string. The expected text is
// an independent computation: decode all tokens at once (Tokenizer::decode) and
// cut at the earliest occurrence of any stop string.
#include "genai/text_stream.h"

#include <gtest/gtest.h>

#include "genai/tokenizer_internal.h"

#include <string>
#include <vector>

namespace ember::genai {
namespace {

Tokenizer llama3() {
  auto t = Tokenizer::from_file(std::string(EMBER_TOKENIZERS_DIR) + "/llama3/tokenizer.json");
  EXPECT_TRUE(t.is_ok()) << t.status().to_string();
  return std::move(*t);
}

struct Streamed {
  std::vector<std::string> pieces;  // one per put(), then finish()'s
  std::string text;
  bool stopped = false;
  size_t stopped_at = 0;  // tokens put when stopped() first held
};

Streamed stream(const Tokenizer& tok, const std::vector<int32_t>& ids, const std::vector<std::string>& stops) {
  TextStream s(tok, stops);
  Streamed out;
  for (size_t i = 0; i < ids.size(); ++i) {
    out.pieces.push_back(s.put(ids[i]));
    out.text += out.pieces.back();
    if (s.stopped() && !out.stopped) {
      out.stopped = true;
      out.stopped_at = i + 1;
    }
  }
  out.pieces.push_back(s.finish());
  out.text += out.pieces.back();
  EXPECT_EQ(out.text, s.text());
  return out;
}

std::string cut_at_first(const std::string& text, const std::vector<std::string>& stops) {
  size_t first = std::string::npos;
  for (const std::string& stop : stops) first = std::min(first, text.find(stop));
  return first == std::string::npos ? text : text.substr(0, first);
}

const char* const kTexts[] = {
    "Hello, world! The answer is 42.\nUser: what next?\nAssistant: nothing.",
    "Ünïcödé façade — naïve café; 東京タワー and 🌍🚀 emoji, then END and more after END.",
    "def f(x):\n    return x  # comment\n\n###\n\tTabs and    spaces   ",
};

TEST(TextStream, MatchesWholeDecodeCutAtTheFirstStop) {
  const Tokenizer tok = llama3();
  int cases = 0;
  for (const char* text : kTexts) {
    const std::vector<int32_t> ids = tok.encode(text, false);
    const std::string whole = tok.decode(ids, true);
    // Stop strings taken from the text itself (so they occur, often across
    // token boundaries), plus ones that never occur but share prefixes.
    std::vector<std::vector<std::string>> stop_sets = {{}, {"zzz"}, {"\nUser:"}, {"END"}, {"🚀"}, {"ö"}, {"###"}};
    for (size_t at = 0; at + 5 <= whole.size(); at += 7) {
      if ((static_cast<unsigned char>(whole[at]) & 0xC0u) == 0x80u) continue;
      std::string stop = whole.substr(at, 5);
      while (!stop.empty() && !detail::utf8_valid(stop)) stop.pop_back();  // a character cut at the end
      if (!stop.empty()) stop_sets.push_back({stop, whole.substr(at, 1) + "\x01"});
    }
    for (const auto& stops : stop_sets) {
      const Streamed s = stream(tok, ids, stops);
      const std::string expected = cut_at_first(whole, stops);
      EXPECT_EQ(s.text, expected) << "stops[0]=" << (stops.empty() ? "" : stops[0]);
      EXPECT_EQ(s.stopped, expected.size() != whole.size());
      for (const std::string& p : s.pieces) EXPECT_TRUE(detail::utf8_valid(p)) << p;
      ++cases;
    }
  }
  EXPECT_GT(cases, 30);
}

TEST(TextStream, HoldsBackOnlyWhatCouldStartAStop) {
  const Tokenizer tok = llama3();
  const std::vector<int32_t> ids = tok.encode("one two three", false);
  ASSERT_EQ(ids.size(), 3u);
  // " tw" could begin " two!" until "three" arrives; "one" is printed at once.
  TextStream s(tok, {" two!"});
  EXPECT_EQ(s.put(ids[0]), "one");
  EXPECT_EQ(s.put(ids[1]), "");
  EXPECT_EQ(s.put(ids[2]), " two three");
  EXPECT_FALSE(s.stopped());
  EXPECT_EQ(s.finish(), "");
  // The stop completes at the last token; earlier text is out, nothing after.
  TextStream t(tok, {"o thr", "three"});
  EXPECT_EQ(t.put(ids[0]), "one");
  EXPECT_EQ(t.put(ids[1]), " tw");
  EXPECT_EQ(t.put(ids[2]), "");
  EXPECT_TRUE(t.stopped());
  EXPECT_EQ(t.text(), "one tw");
  EXPECT_EQ(t.put(ids[0]), "");
  EXPECT_EQ(t.finish(), "");
}

TEST(TextStream, FinishReleasesTheHeldBackTail) {
  const Tokenizer tok = llama3();
  const std::vector<int32_t> ids = tok.encode("wait for it", false);
  TextStream s(tok, {"it is"});
  std::string text;
  for (int32_t id : ids) text += s.put(id);
  EXPECT_EQ(text, "wait for ");
  EXPECT_EQ(s.finish(), "it");
  EXPECT_FALSE(s.stopped());
}

TEST(TextStream, BadStopStringsAreNamed) {
  EXPECT_TRUE(validate_stop_strings({"a", "</s>", "日本"}).is_ok());
  auto empty = validate_stop_strings({"a", ""});
  ASSERT_FALSE(empty.is_ok());
  EXPECT_NE(empty.message().find("stop string 2 is empty"), std::string::npos) << empty.to_string();
  auto broken = validate_stop_strings({"\xE6\x97"});
  ASSERT_FALSE(broken.is_ok());
  EXPECT_NE(broken.message().find("stop string 1 is not valid UTF-8"), std::string::npos) << broken.to_string();
}

}  // namespace
}  // namespace ember::genai
