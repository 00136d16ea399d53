// ToolCallParser: generated text -> OpenAI tool_calls, streamed. The expectations are
// written out by hand per case; the split and fuzz tests hold the parser to its own
// one-piece answer (any split of the text gives the same content and calls) and to
// "nothing is dropped" (no calls found -> the content is the text, byte for byte).
#include "server/tool_calls.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#ifndef EMBER_SOURCE_DIR
// The standalone build (g++ ... tests/unit/tool_calls_test.cpp): the checkout holding this file.
#define EMBER_SOURCE_DIR (std::filesystem::path(__FILE__).parent_path().parent_path().parent_path().string())
#endif

namespace ember::server {
namespace {

constexpr ToolCallFormat kAllFormats[] = {ToolCallFormat::kNone, ToolCallFormat::kHermes,
                                          ToolCallFormat::kLlama3Json};

struct Streamed {
  std::string content;
  std::vector<ToolCallDelta> deltas;
  std::vector<ToolCall> calls;
};

// One line per call, so a mismatch prints readably.
std::string describe(const std::vector<ToolCall>& calls) {
  std::string s;
  for (const ToolCall& c : calls) s += c.id + " " + c.name + " " + c.arguments + "\n";
  return s;
}

std::string describe(const std::vector<ToolCallDelta>& deltas) {
  std::string s;
  for (const ToolCallDelta& d : deltas) s += std::to_string(d.index) + " " + d.id + " " + d.name + " " + d.arguments + "\n";
  return s;
}

Streamed stream(ToolCallFormat format, const std::vector<std::string>& pieces) {
  ToolCallParser parser(format, "call_r_");
  Streamed out;
  auto take = [&](ToolCallParser::Output o) {
    out.content += o.content;
    for (ToolCallDelta& d : o.tool_calls) out.deltas.push_back(std::move(d));
  };
  for (const std::string& piece : pieces) take(parser.put(piece));
  take(parser.finish());
  out.calls = parser.calls();
  return out;
}

Streamed whole(ToolCallFormat format, const std::string& text) { return stream(format, {text}); }

std::vector<std::string> bytes(const std::string& text) {
  std::vector<std::string> pieces;
  for (char c : text) pieces.emplace_back(1, c);
  return pieces;
}

std::vector<std::string> random_pieces(const std::string& text, std::mt19937& rng) {
  std::vector<std::string> pieces;
  for (size_t at = 0; at < text.size();) {
    const size_t n = std::uniform_int_distribution<size_t>(0, 12)(rng);
    pieces.push_back(text.substr(at, n));
    at += n;
  }
  return pieces;
}

// The same content and calls as the one-piece run, and deltas that match calls().
void expect_same(const Streamed& expected, const Streamed& got, const std::string& what) {
  EXPECT_EQ(got.content, expected.content) << what;
  EXPECT_EQ(describe(got.calls), describe(expected.calls)) << what;
  ASSERT_EQ(got.deltas.size(), got.calls.size()) << what;
  for (size_t i = 0; i < got.calls.size(); ++i) {
    EXPECT_EQ(got.deltas[i].index, static_cast<int>(i)) << what;
    EXPECT_EQ(got.deltas[i].id, got.calls[i].id) << what;
    EXPECT_EQ(got.deltas[i].name, got.calls[i].name) << what;
    EXPECT_EQ(got.deltas[i].arguments, got.calls[i].arguments) << what;
  }
}

const std::string kWeather = R"({"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}})";
const std::string kTime = R"({"name": "get_time", "arguments": {"tz": "Europe/Paris"}})";
const std::string kHermesTwoCalls =
    "Let me look that up <for you>.\n<tool_call>\n" + kWeather + "\n</tool_call>\n<tool_call>\n" + kTime +
    "\n</tool_call>";

// ---- detect_tool_call_format ----

TEST(ToolCallFormat, DetectsEachRule) {
  EXPECT_EQ(detect_tool_call_format(""), ToolCallFormat::kNone);
  EXPECT_EQ(detect_tool_call_format("{{ messages[0].content }}"), ToolCallFormat::kNone);
  EXPECT_EQ(detect_tool_call_format("{% for t in xml_tools %}{{ builtin_tools }}"), ToolCallFormat::kNone);
  EXPECT_EQ(detect_tool_call_format("{%- if tools %}{{ tools | tojson }}{% endif %}"), ToolCallFormat::kHermes);
  EXPECT_EQ(detect_tool_call_format("{{ '<tool_call>\\n' + tool_call.name }}"), ToolCallFormat::kHermes);
  EXPECT_EQ(detect_tool_call_format("{% if tools %}{{ '<|python_tag|>' }}"), ToolCallFormat::kLlama3Json);
  EXPECT_EQ(detect_tool_call_format(
                R"({%- if tools %}{{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }})"),
            ToolCallFormat::kLlama3Json);
  EXPECT_EQ(detect_tool_call_format(
                R"({{ "Respond in the format {\"name\": function name, \"parameters\": dictionary of argument name and its value}." }})"),
            ToolCallFormat::kLlama3Json);
  // <tool_call> wins over Llama markers (Hermes 3 is a Llama 3.1 fine-tune).
  EXPECT_EQ(detect_tool_call_format("<|python_tag|> <tool_call>"), ToolCallFormat::kHermes);
  EXPECT_STREQ(tool_call_format_name(ToolCallFormat::kNone), "none");
  EXPECT_STREQ(tool_call_format_name(ToolCallFormat::kHermes), "hermes");
  EXPECT_STREQ(tool_call_format_name(ToolCallFormat::kLlama3Json), "llama3_json");
}

// llama.cpp's template collection (scripts/setup.sh fetches it; ignored by git).
TEST(ToolCallFormat, LlamaCppTemplates) {
  const std::filesystem::path dir = std::filesystem::path(EMBER_SOURCE_DIR) / "third_party/chat_templates/llama.cpp";
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << dir << " is absent (scripts/setup.sh fetches it)";
  std::map<std::string, ToolCallFormat> detected;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".jinja") continue;
    std::ifstream file(entry.path(), std::ios::binary);
    std::stringstream text;
    text << file.rdbuf();
    detected[entry.path().stem().string()] = detect_tool_call_format(text.str());
  }
  std::map<ToolCallFormat, int> counts;
  for (const auto& [name, format] : detected) {
    std::printf("  %-55s %s\n", name.c_str(), tool_call_format_name(format));
    ++counts[format];
  }
  std::printf("%zu templates: %d hermes, %d llama3_json, %d none\n", detected.size(), counts[ToolCallFormat::kHermes],
              counts[ToolCallFormat::kLlama3Json], counts[ToolCallFormat::kNone]);
  const std::map<std::string, ToolCallFormat> named = {
      {"Qwen-Qwen2.5-7B-Instruct", ToolCallFormat::kHermes},
      {"Qwen-Qwen3-0.6B", ToolCallFormat::kHermes},
      {"Qwen-QwQ-32B", ToolCallFormat::kHermes},
      {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", ToolCallFormat::kHermes},
      {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use", ToolCallFormat::kHermes},
      {"meta-llama-Llama-3.1-8B-Instruct", ToolCallFormat::kLlama3Json},
      {"meta-llama-Llama-3.2-3B-Instruct", ToolCallFormat::kLlama3Json},
      {"meta-llama-Llama-3.3-70B-Instruct", ToolCallFormat::kLlama3Json},
      {"microsoft-Phi-3.5-mini-instruct", ToolCallFormat::kNone},
      {"google-gemma-2-2b-it", ToolCallFormat::kNone},
      {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", ToolCallFormat::kNone},
  };
  int checked = 0;
  for (const auto& [name, format] : named) {
    const auto it = detected.find(name);
    if (it == detected.end()) continue;  // the collection changes upstream
    EXPECT_EQ(tool_call_format_name(it->second), std::string(tool_call_format_name(format))) << name;
    ++checked;
  }
  EXPECT_GE(checked, 6) << "most named templates are missing from " << dir;
}

// ---- kNone ----

TEST(ToolCallParser, NonePassesEverythingThroughAtOnce) {
  ToolCallParser parser(ToolCallFormat::kNone, "call_");
  const std::string text = "<tool_call>\n" + kWeather + "\n</tool_call>";
  EXPECT_EQ(parser.put(text).content, text);
  EXPECT_EQ(parser.put("<").content, "<");
  EXPECT_EQ(parser.put(" \n").content, " \n");
  const ToolCallParser::Output end = parser.finish();
  EXPECT_EQ(end.content, "");
  EXPECT_TRUE(end.tool_calls.empty());
  EXPECT_TRUE(parser.calls().empty());
}

// ---- kHermes ----

TEST(ToolCallParser, HermesOneCall) {
  ToolCallParser parser(ToolCallFormat::kHermes, "call_abc_");
  ToolCallParser::Output out = parser.put("<tool_call>\n" + kWeather + "\n</tool_call>");
  EXPECT_EQ(out.content, "");
  ASSERT_EQ(out.tool_calls.size(), 1u);
  EXPECT_EQ(out.tool_calls[0].index, 0);
  EXPECT_EQ(out.tool_calls[0].id, "call_abc_0");
  EXPECT_EQ(out.tool_calls[0].name, "get_weather");
  EXPECT_EQ(out.tool_calls[0].arguments, R"({"city":"Paris","unit":"celsius"})");
  out = parser.finish();
  EXPECT_EQ(out.content, "");
  EXPECT_TRUE(out.tool_calls.empty());
  EXPECT_EQ(describe(parser.calls()), "call_abc_0 get_weather {\"city\":\"Paris\",\"unit\":\"celsius\"}\n");
}

TEST(ToolCallParser, HermesContentThenTwoCalls) {
  const Streamed s = whole(ToolCallFormat::kHermes, kHermesTwoCalls);
  EXPECT_EQ(s.content, "Let me look that up <for you>.\n");
  EXPECT_EQ(describe(s.calls),
            "call_r_0 get_weather {\"city\":\"Paris\",\"unit\":\"celsius\"}\n"
            "call_r_1 get_time {\"tz\":\"Europe/Paris\"}\n");
  EXPECT_EQ(describe(s.deltas),
            "0 call_r_0 get_weather {\"city\":\"Paris\",\"unit\":\"celsius\"}\n"
            "1 call_r_1 get_time {\"tz\":\"Europe/Paris\"}\n");
}

TEST(ToolCallParser, HermesContentAfterCall) {
  const Streamed s = whole(ToolCallFormat::kHermes, "<tool_call>" + kTime + "</tool_call>\n\nDone.  \n");
  EXPECT_EQ(s.content, "\n\nDone.  \n");
  EXPECT_EQ(describe(s.calls), "call_r_0 get_time {\"tz\":\"Europe/Paris\"}\n");
  const Streamed both = whole(ToolCallFormat::kHermes, "A \n<tool_call>" + kTime + "</tool_call> B <tool_call>" +
                                                           kTime + "</tool_call>\n C");
  EXPECT_EQ(both.content, "A \n B \n C");
  EXPECT_EQ(both.calls.size(), 2u);
}

// Whitespace that only separates calls from each other or from the message's ends is
// not content: a message of calls alone has empty content.
TEST(ToolCallParser, HermesWhitespaceBetweenCallsIsNotContent) {
  const std::string text = "\n \n<tool_call>\n" + kTime + "\n</tool_call>\n\n<tool_call>" + kWeather + "</tool_call>\n";
  ToolCallParser parser(ToolCallFormat::kHermes, "call_");
  std::string content;
  size_t deltas = 0;
  for (const std::string& piece : bytes(text)) {
    const ToolCallParser::Output out = parser.put(piece);
    content += out.content;
    deltas += out.tool_calls.size();
  }
  EXPECT_EQ(deltas, 2u);
  content += parser.finish().content;
  EXPECT_EQ(content, "");
  // Whitespace alone, with no call, is the content.
  EXPECT_EQ(whole(ToolCallFormat::kHermes, "\n \n").content, "\n \n");
}

TEST(ToolCallParser, HermesArgumentForms) {
  const Streamed s = whole(ToolCallFormat::kHermes,
                           "<tool_call>{\"name\": \"a\", \"arguments\": \"{\\\"x\\\": 1}\"}</tool_call>"
                           "<tool_call>{\"name\": \"b\", \"parameters\": {\"y\": [1, {\"z\": null}]}}</tool_call>"
                           "<tool_call>{\"name\": \"c\"}</tool_call>"
                           "<tool_call>{\"arguments\": {}, \"name\": \"d\"}</tool_call>"
                           "<tool_call>{\"name\": \"e\", \"arguments\": {\"s\": \"caf\u00e9 \\u00e9\"}}</tool_call>"
                           "<tool_call>{\"name\": \"f\", \"arguments\": {\"q\": \"say \\\"}\\\" \\\\\"}}</tool_call>");
  EXPECT_EQ(s.content, "");
  EXPECT_EQ(describe(s.calls),
            "call_r_0 a {\"x\": 1}\n"                 // a string is kept as it is
            "call_r_1 b {\"y\":[1,{\"z\":null}]}\n"   // an object is serialized compactly
            "call_r_2 c {}\n"                         // no arguments: none
            "call_r_3 d {}\n"
            "call_r_4 e {\"s\":\"caf\u00e9 \u00e9\"}\n"
            "call_r_5 f {\"q\":\"say \\\"}\\\" \\\\\"}\n");  // escaped quotes and braces inside strings
}

TEST(ToolCallParser, HermesMalformedCallsAreContentUnchanged) {
  for (const std::string& body : {
           std::string("{\"name\": \"f\", \"arguments\": {\"x\": }}"),  // invalid JSON
           std::string("{\"arguments\": {\"x\": 1}}"),                 // no name
           std::string("{\"name\": 42, \"arguments\": {}}"),           // name not a string
           std::string("{\"name\": \"\", \"arguments\": {}}"),         // empty name
           std::string("{\"name\": \"f\", \"arguments\": [1, 2]}"),    // arguments not an object
           std::string("[{\"name\": \"f\"}]"),                         // not an object
           std::string("{\"name\": \"f\"} trailing"),                  // more than one value
           std::string("{'name': 'f', 'arguments': {}}"),              // Python, not JSON
           std::string("{\"name\": \"f\xff\", \"arguments\": {}}"),    // invalid UTF-8
           std::string(""),
       }) {
    const std::string text = "Hi.\n<tool_call>\n" + body + "\n</tool_call>\nBye";
    const Streamed s = whole(ToolCallFormat::kHermes, text);
    EXPECT_EQ(s.content, text) << body;
    EXPECT_TRUE(s.calls.empty()) << body;
  }
  // A malformed call between good ones stays content; the good ones are calls.
  const Streamed s = whole(ToolCallFormat::kHermes, "<tool_call>" + kTime + "</tool_call>\n<tool_call>{oops}</tool_call>\n<tool_call>" + kWeather + "</tool_call>");
  EXPECT_EQ(s.content, "\n<tool_call>{oops}</tool_call>\n");
  EXPECT_EQ(s.calls.size(), 2u);
  EXPECT_EQ(s.calls[1].id, "call_r_1");
}

TEST(ToolCallParser, HermesUnclosedCallIsContentAtFinish) {
  ToolCallParser parser(ToolCallFormat::kHermes, "call_");
  EXPECT_EQ(parser.put("Sure.\n").content, "Sure.\n");
  EXPECT_EQ(parser.put("<tool_call>\n").content, "");
  EXPECT_EQ(parser.put(kWeather).content, "");  // held: it may still close
  const ToolCallParser::Output end = parser.finish();
  EXPECT_EQ(end.content, "<tool_call>\n" + kWeather);
  EXPECT_TRUE(end.tool_calls.empty());
  EXPECT_TRUE(parser.calls().empty());
  // After a good call, an unclosed one is still returned.
  const Streamed s = whole(ToolCallFormat::kHermes, "<tool_call>" + kTime + "</tool_call>\n<tool_call>{\"name\": \"x\"");
  EXPECT_EQ(s.content, "\n<tool_call>{\"name\": \"x\"");
  EXPECT_EQ(s.calls.size(), 1u);
}

// Content streams as it comes; only a tail that could begin "<tool_call>" waits (and
// whitespace while it is all there is), and it goes as soon as it cannot match.
TEST(ToolCallParser, HermesHoldsBackOnlyWhatCouldBeATag) {
  ToolCallParser parser(ToolCallFormat::kHermes, "call_");
  EXPECT_EQ(parser.put("a < b").content, "a < b");
  EXPECT_EQ(parser.put(" if x<").content, " if x");
  EXPECT_EQ(parser.put("y").content, "<y");
  EXPECT_EQ(parser.put("<tool_c").content, "");
  EXPECT_EQ(parser.put("ar").content, "<tool_car");
  EXPECT_EQ(parser.put("<tool_call").content, "");
  EXPECT_EQ(parser.put("s>").content, "<tool_calls>");
  EXPECT_EQ(parser.put("<</").content, "<</");
  EXPECT_EQ(parser.put("\n\n").content, "\n\n");
  EXPECT_EQ(parser.put("ok").content, "ok");
  EXPECT_EQ(parser.put(" <tool_call>").content, " ");
  const ToolCallParser::Output call = parser.put(kTime + "</tool_call>");
  EXPECT_EQ(call.content, "");
  ASSERT_EQ(call.tool_calls.size(), 1u);  // reported the moment it closes, not at finish
  EXPECT_EQ(call.tool_calls[0].name, "get_time");
  EXPECT_EQ(parser.finish().content, "");
}

TEST(ToolCallParser, HermesHeldTailIsContentAtFinish) {
  ToolCallParser parser(ToolCallFormat::kHermes, "call_");
  EXPECT_EQ(parser.put("x <tool_ca").content, "x ");
  EXPECT_EQ(parser.finish().content, "<tool_ca");
  ToolCallParser spaces(ToolCallFormat::kHermes, "call_");
  EXPECT_EQ(spaces.put("\n\n").content, "");  // may separate the start from a call
  EXPECT_EQ(spaces.put(" ").content, "");
  EXPECT_EQ(spaces.finish().content, "\n\n ");
}

// Every split point of a sample with content, two calls and trailing content, and
// every byte on its own, give what the one-piece run gives.
TEST(ToolCallParser, HermesEverySplitPoint) {
  const std::string text = kHermesTwoCalls + "\n\nAnything < else?\n<tool_call>{broken</tool_call> <tool_";
  const Streamed expected = whole(ToolCallFormat::kHermes, text);
  EXPECT_EQ(expected.content, "Let me look that up <for you>.\n\n\nAnything < else?\n<tool_call>{broken</tool_call> <tool_");
  EXPECT_EQ(expected.calls.size(), 2u);
  for (size_t i = 0; i <= text.size(); ++i) {
    expect_same(expected, stream(ToolCallFormat::kHermes, {text.substr(0, i), text.substr(i)}), "split at " + std::to_string(i));
  }
  expect_same(expected, stream(ToolCallFormat::kHermes, bytes(text)), "one byte at a time");
}

// ---- kLlama3Json ----

TEST(ToolCallParser, Llama3OneCall) {
  ToolCallParser parser(ToolCallFormat::kLlama3Json, "call_q_");
  const std::string text = R"({"name": "get_weather", "parameters": {"city": "Paris"}})";
  EXPECT_EQ(parser.put(text).content, "");  // the whole message is held until the end
  const ToolCallParser::Output end = parser.finish();
  EXPECT_EQ(end.content, "");
  EXPECT_EQ(describe(end.tool_calls), "0 call_q_0 get_weather {\"city\":\"Paris\"}\n");
  EXPECT_EQ(describe(parser.calls()), "call_q_0 get_weather {\"city\":\"Paris\"}\n");
}

TEST(ToolCallParser, Llama3SeveralCallsPythonTagAndArgumentForms) {
  const std::string a = R"({"name": "a", "parameters": {"x": 1}})";
  const std::string b = R"({"name": "b", "arguments": {"y": "z"}})";
  const std::string c = R"({"name": "c", "parameters": "{\"k\": \"}\"}"})";  // a string, escaped braces
  for (const std::string& text : {a + "; " + b + ";" + c, a + "\n" + b + "\n\n" + c + "\n", " \n" + a + b + c + ";",
                                 "<|python_tag|>" + a + "; " + b + "; " + c, "\n<|python_tag|> " + a + ";\n" + b + c}) {
    const Streamed s = whole(ToolCallFormat::kLlama3Json, text);
    EXPECT_EQ(s.content, "") << text;
    EXPECT_EQ(describe(s.calls), "call_r_0 a {\"x\":1}\ncall_r_1 b {\"y\":\"z\"}\ncall_r_2 c {\"k\": \"}\"}\n") << text;
  }
}

TEST(ToolCallParser, Llama3OtherTextIsContent) {
  // Not starting like a call: streamed at once.
  ToolCallParser parser(ToolCallFormat::kLlama3Json, "call_");
  EXPECT_EQ(parser.put("  ").content, "");  // leading whitespace waits for the first character
  EXPECT_EQ(parser.put("The answer").content, "  The answer");
  EXPECT_EQ(parser.put(" is {\"name\": \"f\", \"parameters\": {}}").content, " is {\"name\": \"f\", \"parameters\": {}}");
  EXPECT_EQ(parser.finish().content, "");
  EXPECT_TRUE(parser.calls().empty());
  // A prefix of <|python_tag|> waits, then goes once it cannot match.
  ToolCallParser tag(ToolCallFormat::kLlama3Json, "call_");
  EXPECT_EQ(tag.put("<|py").content, "");
  EXPECT_EQ(tag.put("pi").content, "<|pypi");
  // Starting like a call but not one: all of it, unchanged, at finish.
  for (const std::string& text : {
           std::string(R"({"name": "Bob", "age": 3})"),                        // no parameters: plain JSON
           std::string(R"({"name": "f", "parameters": {"x": 1}} and more)"),  // trailing text
           std::string(R"({"name": "f", "parameters": {"x": 1})"),            // unbalanced
           std::string(R"({"name": "f", "parameters": {"x": 1}}; {"nam)"),    // second call broken
           std::string(" {\"a\": }"),
           std::string("<|python_tag|>brave_search.call(query=\"paris\")"),   // built-in tool syntax
           std::string("<|python_tag|>"),
           std::string("{"),
       }) {
    const Streamed s = whole(ToolCallFormat::kLlama3Json, text);
    EXPECT_EQ(s.content, text);
    EXPECT_TRUE(s.calls.empty()) << text;
  }
  EXPECT_EQ(whole(ToolCallFormat::kLlama3Json, " \n").content, " \n");
  EXPECT_EQ(whole(ToolCallFormat::kLlama3Json, "<|pyth").content, "<|pyth");
}

TEST(ToolCallParser, Llama3EverySplitPoint) {
  const std::string text = "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris; {x}\"}};\n" + kTime;
  const Streamed expected = whole(ToolCallFormat::kLlama3Json, text);
  EXPECT_EQ(describe(expected.calls),
            "call_r_0 get_weather {\"city\":\"Paris; {x}\"}\ncall_r_1 get_time {\"tz\":\"Europe/Paris\"}\n");
  for (size_t i = 0; i <= text.size(); ++i) {
    expect_same(expected, stream(ToolCallFormat::kLlama3Json, {text.substr(0, i), text.substr(i)}), "split at " + std::to_string(i));
  }
  expect_same(expected, stream(ToolCallFormat::kLlama3Json, bytes(text)), "one byte at a time");
}

// ---- any input ----

// Texts built from the pieces that matter (tags, braces, quotes, whitespace, whole
// calls) and from random bytes, in every format: any split gives the one-piece answer,
// and text with no call found comes back as content byte for byte.
TEST(ToolCallParser, RandomTextsAndSplitsAgree) {
  const std::vector<std::string> fragments = {
      "<tool_call>", "</tool_call>", "<tool_", "</tool", "<", ">", "{", "}", "[", "]", "\"", "\\", ":", ";", ",",
      "\n", " ", "\t", "name", "\"name\": \"f\"", "\"arguments\": ", "\"parameters\": {}", "<|python_tag|>",
      "<|py", "hello", "\xff", "\xc3\xa9", "\xe2\x82", kWeather, kTime, "<tool_call>" + kTime + "</tool_call>"};
  std::mt19937 rng(20240601);
  int with_calls = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string text;
    const int n = std::uniform_int_distribution<int>(0, 24)(rng);
    for (int i = 0; i < n; ++i) {
      if (round % 3 == 0) {
        text += static_cast<char>(std::uniform_int_distribution<int>(0, 255)(rng));
      } else {
        text += fragments[std::uniform_int_distribution<size_t>(0, fragments.size() - 1)(rng)];
      }
    }
    for (ToolCallFormat format : kAllFormats) {
      const Streamed expected = whole(format, text);
      if (expected.calls.empty()) {
        EXPECT_EQ(expected.content, text) << tool_call_format_name(format);
      }
      if (format == ToolCallFormat::kNone) {
        EXPECT_TRUE(expected.calls.empty());
      }
      with_calls += !expected.calls.empty();
      const std::string what = std::string(tool_call_format_name(format)) + " round " + std::to_string(round);
      expect_same(expected, stream(format, random_pieces(text, rng)), what + " random pieces");
      if (round % 10 == 0) expect_same(expected, stream(format, bytes(text)), what + " bytes");
      if (HasFailure()) return;
    }
  }
  EXPECT_GT(with_calls, 300);  // the fragments do make calls, not only noise
}

TEST(ToolCallParser, HugeAndDeeplyNestedInput) {
  const std::string deep = "{\"name\": \"f\", \"arguments\": " + std::string(200000, '[') + "}";
  std::string nested;  // valid JSON, 200000 objects deep: parses, but would overflow the stack when serialized
  for (int i = 0; i < 200000; ++i) nested += "{\"a\":";
  nested = "{\"name\": \"f\", \"parameters\": " + nested + "1" + std::string(200000, '}') + "}";
  for (const std::string& text : {"<tool_call>" + deep + "</tool_call>", deep, std::string(200000, '{'),
                                  "<tool_call>" + nested + "</tool_call>", nested}) {
    for (ToolCallFormat format : kAllFormats) {
      const Streamed s = whole(format, text);
      EXPECT_EQ(s.content, text);
      EXPECT_TRUE(s.calls.empty());
    }
  }
  // 8 MiB streamed in small pieces inside an unclosed call: linear time, nothing lost.
  ToolCallParser parser(ToolCallFormat::kHermes, "call_");
  EXPECT_EQ(parser.put("<tool_call>").content, "");
  const std::string chunk = "{\"k\": \"</tool_cal\"} \n";
  for (int i = 0; i < (8 << 20) / static_cast<int>(chunk.size()); ++i) ASSERT_EQ(parser.put(chunk).content, "");
  EXPECT_EQ(parser.finish().content.size(), 11 + ((8 << 20) / chunk.size()) * chunk.size());
  // The same amount of whitespace between content pieces.
  ToolCallParser spaces(ToolCallFormat::kHermes, "call_");
  size_t returned = 0;
  for (int i = 0; i < (1 << 20); ++i) returned += spaces.put(i % 4096 == 0 ? "x\n" : "\n").content.size();
  returned += spaces.finish().content.size();
  EXPECT_EQ(returned, (1u << 20) + (1u << 20) / 4096);
  // Llama 3: a megabyte of leading whitespace, one byte at a time, before plain text.
  ToolCallParser llama(ToolCallFormat::kLlama3Json, "call_");
  for (int i = 0; i < (1 << 20); ++i) ASSERT_EQ(llama.put("\n").content, "");
  EXPECT_EQ(llama.put("Hi").content.size(), (1u << 20) + 2);
}

}  // namespace
}  // namespace ember::server
