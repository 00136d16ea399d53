// OpenAI request parsing (src/serve/api.h) and the Prometheus text of
// src/serve/metrics.h: what is accepted, and that every refusal names its field.
#include <gtest/gtest.h>

#include "server/api.h"
#include "server/metrics.h"

namespace ember::server {
namespace {

using Json = nlohmann::ordered_json;

std::optional<ApiError> chat(const std::string& text, ChatRequest& out) {
  return parse_chat_request(Json::parse(text), ApiLimits{}, out);
}

std::optional<ApiError> completion(const std::string& text, CompletionRequest& out) {
  return parse_completion_request(Json::parse(text), ApiLimits{}, out);
}

TEST(ServeApi, ChatFieldsAreRead) {
  ChatRequest r;
  ASSERT_FALSE(chat(R"({"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 7,
      "temperature": 0.5, "top_p": 0.9, "seed": -3, "stop": ["a", "b"], "n": 2, "presence_penalty": 1,
      "frequency_penalty": -1, "logprobs": true, "top_logprobs": 3, "stream": true,
      "stream_options": {"include_usage": true}, "user": "u", "unknown_field": {"x": 1}})",
                    r));
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_DOUBLE_EQ(*r.temperature, 0.5);
  EXPECT_DOUBLE_EQ(*r.top_p, 0.9);
  EXPECT_EQ(r.seed, -3);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r.n, 2);
  EXPECT_DOUBLE_EQ(*r.presence_penalty, 1);
  EXPECT_DOUBLE_EQ(*r.frequency_penalty, -1);
  EXPECT_EQ(r.top_logprobs, 3);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.user, "u");
  EXPECT_EQ(r.messages.dump(), R"([{"role":"user","content":"hi"}])");
  EXPECT_TRUE(r.tools.is_null());
}

TEST(ServeApi, ChatDefaultsAndAliases) {
  ChatRequest r;
  ASSERT_FALSE(chat(R"({"messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 4,
      "logprobs": true, "stop": "x"})", r));
  EXPECT_EQ(r.max_tokens, 4);
  EXPECT_EQ(r.top_logprobs, 0);  // logprobs alone: the chosen token's, no alternatives
  EXPECT_EQ(r.stop, std::vector<std::string>{"x"});
  EXPECT_EQ(r.n, 1);
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.temperature.has_value());
}

TEST(ServeApi, ContentPartsJoinAndToolArgumentsParse) {
  ChatRequest r;
  ASSERT_FALSE(chat(R"({"messages": [
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "f", "arguments": "{\"x\": 1}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "2"}],
      "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]})",
                    r));
  EXPECT_EQ(r.messages[0]["content"], "ab");
  EXPECT_TRUE(r.messages[1]["tool_calls"][0]["function"]["arguments"].is_object());
  EXPECT_EQ(r.messages[1]["tool_calls"][0]["function"]["arguments"]["x"], 1);
  EXPECT_EQ(r.messages[2]["tool_call_id"], "c1");
  ASSERT_TRUE(r.tools.is_array());
  EXPECT_EQ(r.tools[0]["function"]["name"], "f");
}

TEST(ServeApi, ToolChoiceNoneDropsTools) {
  ChatRequest r;
  ASSERT_FALSE(chat(R"({"messages": [{"role": "user", "content": "hi"}], "tool_choice": "none",
      "tools": [{"type": "function", "function": {"name": "f"}}]})", r));
  EXPECT_TRUE(r.tools.is_null());
}

struct Refusal {
  const char* body;
  const char* param;  // the field the error names ("" for none)
};

TEST(ServeApi, ResponseFormatIsRead) {
  ChatRequest r;
  ASSERT_FALSE(chat(R"({"messages": [{"role": "user", "content": "x"}]})", r));
  EXPECT_EQ(r.response_format, "text");
  ASSERT_FALSE(chat(R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_object"}})", r));
  EXPECT_EQ(r.response_format, "json_object");
  ASSERT_FALSE(chat(R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema",
      "json_schema": {"name": "n", "strict": true, "schema": {"type": "object", "required": ["a"]}}}})", r));
  EXPECT_EQ(r.response_format, "json_schema");
  EXPECT_EQ(nlohmann::json::parse(r.json_schema), nlohmann::json::parse(R"({"type": "object", "required": ["a"]})"));
  ChatRequest any;
  ASSERT_FALSE(chat(R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema",
      "json_schema": {"name": "n"}}})", any));
  EXPECT_EQ(any.json_schema, "{}");
}

TEST(ServeApi, ChatRefusalsNameTheField) {
  const Refusal cases[] = {
      {R"({"messages": []})", "messages"},
      {R"({"messages": "hi"})", "messages"},
      {R"({"messages": [{"content": "hi"}]})", "messages[0].role"},
      {R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", "messages[0].content"},
      {R"({"messages": [{"role": "user", "content": "x"}], "temperature": -1})", "temperature"},
      {R"({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"})", "temperature"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_p": 0})", "top_p"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0})", "max_tokens"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 1.5})", "max_tokens"},
      {R"({"messages": [{"role": "user", "content": "x"}], "n": 17})", "n"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": [""]})", "stop"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": [1]})", "stop"},
      {R"({"messages": [{"role": "user", "content": "x"}], "presence_penalty": 3})", "presence_penalty"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", "top_logprobs"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": 21})", "top_logprobs"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stream_options": {"include_usage": true}})",
       "stream_options"},
      {R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "xml"}})", "response_format"},
      {R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema"}})",
       "response_format"},
      {R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema",
          "json_schema": {"name": "a", "schema": [1]}}})",
       "response_format"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "required"})", "tool_choice"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]})", "tools[0]"},
      {R"({"messages": [{"role": "user", "content": "x"}], "seed": 18446744073709551615})", "seed"},
      {R"([1, 2])", ""},
  };
  for (const Refusal& c : cases) {
    ChatRequest r;
    auto e = chat(c.body, r);
    ASSERT_TRUE(e.has_value()) << c.body;
    EXPECT_EQ(e->status, 400) << c.body;
    EXPECT_EQ(e->type, "invalid_request_error");
    EXPECT_EQ(e->param, c.param) << c.body << ": " << e->message;
    EXPECT_FALSE(e->message.empty());
  }
}

TEST(ServeApi, CompletionPrompts) {
  CompletionRequest r;
  ASSERT_FALSE(completion(R"({"prompt": "hello", "echo": true, "logprobs": 2})", r));
  EXPECT_EQ(r.prompt, "hello");
  EXPECT_TRUE(r.echo);
  EXPECT_EQ(r.top_logprobs, 2);
  CompletionRequest ids;
  ASSERT_FALSE(completion(R"({"prompt": [1, 2, 3]})", ids));
  EXPECT_EQ(ids.prompt_ids, (std::vector<int64_t>{1, 2, 3}));
  CompletionRequest one;
  ASSERT_FALSE(completion(R"({"prompt": [[4, 5]]})", one));
  EXPECT_EQ(one.prompt_ids, (std::vector<int64_t>{4, 5}));
  CompletionRequest text_list;
  ASSERT_FALSE(completion(R"({"prompt": ["x"]})", text_list));
  EXPECT_EQ(text_list.prompt, "x");
  const Refusal cases[] = {
      {R"({})", "prompt"},
      {R"({"prompt": ""})", "prompt"},
      {R"({"prompt": ["a", "b"]})", "prompt"},
      {R"({"prompt": [1, "a"]})", "prompt"},
      {R"({"prompt": []})", "prompt"},
      {R"({"prompt": "x", "suffix": "y"})", "suffix"},
      {R"({"prompt": "x", "best_of": 2})", "best_of"},
      {R"({"prompt": "x", "logprobs": true})", "logprobs"},
      {R"({"prompt": "x", "echo": 1})", "echo"},
  };
  for (const Refusal& c : cases) {
    CompletionRequest bad;
    auto e = completion(c.body, bad);
    ASSERT_TRUE(e.has_value()) << c.body;
    EXPECT_EQ(e->param, c.param) << c.body << ": " << e->message;
  }
}

TEST(ServeApi, ErrorBodyIsOpenAIs) {
  ApiError e = bad_request("nope", "temperature");
  EXPECT_EQ(error_body(e).dump(),
            R"({"error":{"code":null,"message":"nope","param":"temperature","type":"invalid_request_error"}})");
  e.param.clear();
  e.code = "c";
  EXPECT_EQ(error_body(e)["error"]["param"], nullptr);
  EXPECT_EQ(error_body(e)["error"]["code"], "c");
}

TEST(ServeMetrics, HistogramIsCumulativeWithInf) {
  Histogram h({0.1, 1});
  h.observe(0.05);
  h.observe(0.1);  // on a bound: counted in that bucket (le)
  h.observe(0.5);
  h.observe(7);
  std::string out;
  h.render("x", out);
  EXPECT_EQ(out,
            "x_bucket{le=\"0.1\"} 2\n"
            "x_bucket{le=\"1\"} 3\n"
            "x_bucket{le=\"+Inf\"} 4\n"
            "x_sum 7.65\n"
            "x_count 4\n");
}

TEST(ServeMetrics, CountersRenderSortedByLabels) {
  LabeledCounter c;
  c.add("endpoint=\"b\",status=\"200\"");
  c.add("endpoint=\"a\",status=\"400\"", 2);
  c.add("endpoint=\"b\",status=\"200\"");
  std::string out;
  render_header("req", "counter", "Requests", out);
  c.render("req", out);
  EXPECT_EQ(out,
            "# HELP req Requests\n# TYPE req counter\n"
            "req{endpoint=\"a\",status=\"400\"} 2\n"
            "req{endpoint=\"b\",status=\"200\"} 2\n");
}

}  // namespace
}  // namespace ember::server
