#pragma once
// OpenAI's API shapes for `ember serve`: the requests of /v1/chat/completions
// and /v1/completions read and checked into plain structs (every refusal an
// ApiError with the HTTP status, type, parameter and message OpenAI's clients
// expect), and the error object. No HTTP here: apps/serve_http.cpp binds these
// to the routes.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ember::server {

// OpenAI's error object: {"error": {"message", "type", "param", "code"}}.
struct ApiError {
  int status = 400;
  std::string type = "invalid_request_error";
  std::string message;
  std::string param;  // empty: null
  std::string code;   // empty: null
};
nlohmann::json error_body(const ApiError& error);
ApiError bad_request(std::string message, std::string param = {});

// What both endpoints share: the sampling and streaming parameters.
struct SamplingRequest {
  std::string model;  // empty: the served model
  std::optional<int64_t> max_tokens;
  std::optional<double> temperature, top_p, presence_penalty, frequency_penalty;
  std::optional<int64_t> seed;
  std::vector<std::string> stop;
  int n = 1;
  int top_logprobs = -1;  // < 0: no logprobs; else the alternatives per token (chat: top_logprobs, completions: logprobs)
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  std::string user;
  // response_format's type: "text", "json_object" or "json_schema", and for
  // json_schema its json_schema.schema as JSON text ("{}" when absent: any JSON).
  std::string response_format = "text";
  std::string json_schema;
};

struct ChatRequest : SamplingRequest {
  // As the chat template sees them: content parts joined into text, tool-call
  // arguments given as JSON text parsed into objects (as transformers' templates expect).
  nlohmann::ordered_json messages;
  nlohmann::ordered_json tools;  // null: none (or tool_choice "none")
};

struct CompletionRequest : SamplingRequest {
  std::string prompt;                   // when prompt_ids is empty
  std::vector<int64_t> prompt_ids;      // the prompt as token ids
  bool echo = false;
};

// The limits a request is checked against.
struct ApiLimits {
  int max_n = 16;
  int max_stop = 16;
  int max_top_logprobs = 20;
};

// A request body as a JSON object (at most kMaxJsonDepth deep), or the 400 naming what is wrong.
std::optional<ApiError> parse_request_body(std::string_view text, nlohmann::ordered_json& body);

// Each returns the request, or the ApiError naming the first bad field.
// The body is ordered: messages and tools reach the template in the client's key
// order (tojson prints them so). Unknown fields are ignored, as OpenAI's clients send fields servers may not know.
std::optional<ApiError> parse_chat_request(const nlohmann::ordered_json& body, const ApiLimits& limits, ChatRequest& out);
std::optional<ApiError> parse_completion_request(const nlohmann::ordered_json& body, const ApiLimits& limits,
                                                 CompletionRequest& out);

}  // namespace ember::server
