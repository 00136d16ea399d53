#include "server/api.h"

#include <fmt/format.h>

#include "base/json.h"

namespace ember::server {
namespace {

using Json = nlohmann::ordered_json;
using Error = std::optional<ApiError>;

const Json* field(const Json& body, const char* key) {
  auto it = body.find(key);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

Error number(const Json& body, const char* key, double lo, double hi, std::optional<double>& out) {
  const Json* v = field(body, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) return bad_request(fmt::format("'{}' must be a number", key), key);
  const double x = v->get<double>();
  if (!(x >= lo && x <= hi)) return bad_request(fmt::format("'{}' must be in [{}, {}], got {}", key, lo, hi, x), key);
  out = x;
  return std::nullopt;
}

Error integer(const Json& body, const char* key, int64_t lo, int64_t hi, std::optional<int64_t>& out) {
  const Json* v = field(body, key);
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) return bad_request(fmt::format("'{}' must be an integer", key), key);
  const bool above = v->is_number_unsigned() && v->get<uint64_t>() > uint64_t{INT64_MAX};
  const int64_t x = above ? 0 : v->get<int64_t>();
  if (above || x < lo || x > hi) return bad_request(fmt::format("'{}' must be in [{}, {}]", key, lo, hi), key);
  out = x;
  return std::nullopt;
}

Error boolean(const Json& body, const char* key, bool& out) {
  const Json* v = field(body, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) return bad_request(fmt::format("'{}' must be a boolean", key), key);
  out = v->get<bool>();
  return std::nullopt;
}

Error string(const Json& body, const char* key, std::string& out) {
  const Json* v = field(body, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) return bad_request(fmt::format("'{}' must be a string", key), key);
  out = v->get<std::string>();
  return std::nullopt;
}

// OpenAI's response_format: {"type": "text"}, {"type": "json_object"} or
// {"type": "json_schema", "json_schema": {"name", "description", "schema", "strict"}}.
// The schema itself is checked when the server compiles it (constraint.h).
Error parse_response_format(const Json& format, SamplingRequest& out) {
  const char* param = "response_format";
  const Json* type = format.is_object() ? field(format, "type") : nullptr;
  if (!type || !type->is_string()) return bad_request("'response_format' must be an object with a 'type'", param);
  out.response_format = type->get<std::string>();
  if (out.response_format == "text" || out.response_format == "json_object") return std::nullopt;
  if (out.response_format != "json_schema") {
    return bad_request(fmt::format("response_format type '{}' is not supported; use 'text', 'json_object' or "
                                   "'json_schema'",
                                   out.response_format),
                       param);
  }
  const Json* spec = field(format, "json_schema");
  if (!spec || !spec->is_object()) {
    return bad_request("response_format of type 'json_schema' needs a 'json_schema' object", param);
  }
  for (const char* key : {"name", "description"}) {
    if (const Json* v = field(*spec, key); v && !v->is_string()) {
      return bad_request(fmt::format("response_format.json_schema.{} must be a string", key), param);
    }
  }
  if (const Json* strict = field(*spec, "strict"); strict && !strict->is_boolean()) {
    return bad_request("response_format.json_schema.strict must be a boolean", param);
  }
  const Json* schema = field(*spec, "schema");
  if (schema && !schema->is_object() && !schema->is_boolean()) {
    return bad_request("response_format.json_schema.schema must be a JSON Schema (an object or a boolean)", param);
  }
  out.json_schema = schema ? schema->dump() : "{}";
  return std::nullopt;
}

// The fields both endpoints share; `chat` selects the names that differ.
Error parse_sampling(const Json& body, const ApiLimits& limits, bool chat, SamplingRequest& out) {
  if (!body.is_object()) return bad_request("the request body must be a JSON object");
  if (Error e = string(body, "model", out.model)) return e;
  std::optional<int64_t> max_tokens, n, seed;
  if (Error e = integer(body, "max_tokens", 1, INT32_MAX, max_tokens)) return e;
  if (chat) {
    std::optional<int64_t> max_completion_tokens;
    if (Error e = integer(body, "max_completion_tokens", 1, INT32_MAX, max_completion_tokens)) return e;
    if (max_completion_tokens) max_tokens = max_completion_tokens;
  }
  out.max_tokens = max_tokens;
  if (Error e = number(body, "temperature", 0, 2, out.temperature)) return e;
  if (Error e = number(body, "top_p", 0, 1, out.top_p)) return e;
  if (out.top_p && *out.top_p <= 0) return bad_request("'top_p' must be greater than 0", "top_p");
  if (Error e = number(body, "presence_penalty", -2, 2, out.presence_penalty)) return e;
  if (Error e = number(body, "frequency_penalty", -2, 2, out.frequency_penalty)) return e;
  if (Error e = integer(body, "seed", INT64_MIN, INT64_MAX, seed)) return e;
  out.seed = seed;
  if (Error e = integer(body, "n", 1, limits.max_n, n)) return e;
  if (n) out.n = static_cast<int>(*n);
  if (const Json* stop = field(body, "stop")) {
    if (stop->is_string()) {
      out.stop = {stop->get<std::string>()};
    } else if (stop->is_array() && static_cast<int>(stop->size()) <= limits.max_stop) {
      for (const Json& s : *stop) {
        if (!s.is_string()) return bad_request("'stop' must be a string or a list of strings", "stop");
        out.stop.push_back(s.get<std::string>());
      }
    } else {
      return bad_request(fmt::format("'stop' must be a string or a list of at most {} strings", limits.max_stop),
                         "stop");
    }
    for (const std::string& s : out.stop) {
      if (s.empty()) return bad_request("'stop' strings must not be empty", "stop");
    }
  }
  if (chat) {
    bool logprobs = false;
    std::optional<int64_t> top;
    if (Error e = boolean(body, "logprobs", logprobs)) return e;
    if (Error e = integer(body, "top_logprobs", 0, limits.max_top_logprobs, top)) return e;
    if (top && !logprobs) return bad_request("'top_logprobs' requires 'logprobs' to be true", "top_logprobs");
    if (logprobs) out.top_logprobs = static_cast<int>(top.value_or(0));
  } else {
    std::optional<int64_t> top;
    if (Error e = integer(body, "logprobs", 0, limits.max_top_logprobs, top)) return e;
    if (top) out.top_logprobs = static_cast<int>(*top);
  }
  if (Error e = boolean(body, "stream", out.stream)) return e;
  if (const Json* options = field(body, "stream_options")) {
    if (!out.stream) return bad_request("'stream_options' is only allowed when 'stream' is true", "stream_options");
    if (!options->is_object()) return bad_request("'stream_options' must be an object", "stream_options");
    if (Error e = boolean(*options, "include_usage", out.include_usage)) return e;
  }
  if (Error e = string(body, "user", out.user)) return e;
  if (const Json* format = field(body, "response_format")) {
    if (Error e = parse_response_format(*format, out)) return e;
  }
  return std::nullopt;
}

// A message's content as the template sees it: a string, or text parts joined.
Error message_content(const Json& content, size_t index, Json& out) {
  const std::string param = fmt::format("messages[{}].content", index);
  if (content.is_null() || content.is_string()) {
    out = content;
    return std::nullopt;
  }
  if (!content.is_array()) return bad_request(param + " must be a string, null or a list of content parts", param);
  std::string text;
  for (const Json& part : content) {
    const Json* type = part.is_object() ? field(part, "type") : nullptr;
    if (!type || *type != "text") {
      return bad_request(param + ": only parts of type 'text' are supported (this model reads text only)", param);
    }
    const Json* t = field(part, "text");
    if (!t || !t->is_string()) return bad_request(param + ": a text part needs a string 'text'", param);
    text += t->get<std::string>();
  }
  out = text;
  return std::nullopt;
}

// An assistant message's tool_calls, with JSON-text arguments parsed into objects.
Error message_tool_calls(const Json& calls, size_t index, Json& out) {
  const std::string param = fmt::format("messages[{}].tool_calls", index);
  if (!calls.is_array()) return bad_request(param + " must be a list", param);
  out = Json::array();
  for (const Json& call : calls) {
    const Json* function = call.is_object() ? field(call, "function") : nullptr;
    const Json* name = function && function->is_object() ? field(*function, "name") : nullptr;
    if (!name || !name->is_string()) return bad_request(param + ": each call needs function.name", param);
    Json c = Json(call);
    if (const Json* args = field(*function, "arguments"); args && args->is_string()) {
      Json parsed = parse_json<Json>(args->get<std::string>());
      if (!parsed.is_discarded()) c["function"]["arguments"] = std::move(parsed);
    }
    out.push_back(std::move(c));
  }
  return std::nullopt;
}

Error parse_tools(const Json& body, ChatRequest& out) {
  const Json* tools = field(body, "tools");
  std::string choice = "auto";
  if (const Json* tc = field(body, "tool_choice")) {
    if (tc->is_string() && (*tc == "none" || *tc == "auto")) {
      choice = tc->get<std::string>();
    } else {
      return bad_request("tool_choice 'required' or a named function needs structured output, which this server does "
                         "not have yet; use 'auto' or 'none'",
                         "tool_choice");
    }
  }
  if (!tools) return std::nullopt;
  if (!tools->is_array()) return bad_request("'tools' must be a list", "tools");
  for (size_t i = 0; i < tools->size(); ++i) {
    const Json& t = (*tools)[i];
    const Json* type = t.is_object() ? field(t, "type") : nullptr;
    const Json* function = t.is_object() ? field(t, "function") : nullptr;
    const Json* name = function && function->is_object() ? field(*function, "name") : nullptr;
    if (!type || *type != "function" || !name || !name->is_string()) {
      return bad_request(fmt::format("tools[{}] must be {{\"type\": \"function\", \"function\": {{\"name\": ...}}}}", i),
                         fmt::format("tools[{}]", i));
    }
  }
  if (choice != "none" && !tools->empty()) out.tools = Json(*tools);
  return std::nullopt;
}

}  // namespace

nlohmann::json error_body(const ApiError& error) {
  using Json = nlohmann::json;
  return {{"error",
           {{"message", error.message},
            {"type", error.type},
            {"param", error.param.empty() ? Json(nullptr) : Json(error.param)},
            {"code", error.code.empty() ? Json(nullptr) : Json(error.code)}}}};
}

ApiError bad_request(std::string message, std::string param) {
  ApiError e;
  e.message = std::move(message);
  e.param = std::move(param);
  return e;
}

std::optional<ApiError> parse_request_body(std::string_view text, nlohmann::ordered_json& body) {
  std::string why;
  body = parse_json<nlohmann::ordered_json>(text, &why);
  if (body.is_discarded()) return bad_request("the request body " + why);
  if (!body.is_object()) return bad_request("the request body must be a JSON object");
  return std::nullopt;
}

std::optional<ApiError> parse_chat_request(const nlohmann::ordered_json& body, const ApiLimits& limits, ChatRequest& out) {
  if (Error e = parse_sampling(body, limits, /*chat=*/true, out)) return e;
  const Json* messages = field(body, "messages");
  if (!messages || !messages->is_array() || messages->empty()) {
    return bad_request("'messages' must be a non-empty list", "messages");
  }
  out.messages = Json::array();
  for (size_t i = 0; i < messages->size(); ++i) {
    const Json& m = (*messages)[i];
    const Json* role = m.is_object() ? field(m, "role") : nullptr;
    if (!role || !role->is_string()) {
      return bad_request(fmt::format("messages[{}] needs a string 'role'", i), fmt::format("messages[{}].role", i));
    }
    Json message = Json::object();
    for (auto it = m.begin(); it != m.end(); ++it) {
      if (it.key() == "content") {
        if (Error e = message_content(it.value(), i, message["content"])) return e;
      } else if (it.key() == "tool_calls") {
        if (Error e = message_tool_calls(it.value(), i, message["tool_calls"])) return e;
      } else {
        message[it.key()] = Json(it.value());
      }
    }
    if (!message.contains("content")) message["content"] = nullptr;
    out.messages.push_back(std::move(message));
  }
  return parse_tools(body, out);
}

std::optional<ApiError> parse_completion_request(const nlohmann::ordered_json& body, const ApiLimits& limits,
                                                 CompletionRequest& out) {
  if (Error e = parse_sampling(body, limits, /*chat=*/false, out)) return e;
  if (Error e = boolean(body, "echo", out.echo)) return e;
  if (field(body, "suffix")) return bad_request("'suffix' is not supported", "suffix");
  if (const Json* best_of = field(body, "best_of"); best_of && *best_of != 1) {
    return bad_request("'best_of' other than 1 is not supported", "best_of");
  }
  const Json* prompt = field(body, "prompt");
  const std::string one_prompt = "'prompt' must be a string or a list of token ids (one prompt per request)";
  if (!prompt) return bad_request("'prompt' is required", "prompt");
  // A list holding one prompt is that prompt, as OpenAI's batch form with one entry.
  const Json* p = prompt;
  if (p->is_array() && p->size() == 1 && ((*p)[0].is_string() || (*p)[0].is_array())) p = &(*p)[0];
  if (p->is_string()) {
    out.prompt = p->get<std::string>();
    if (out.prompt.empty()) return bad_request("'prompt' must not be empty", "prompt");
    return std::nullopt;
  }
  if (!p->is_array() || p->empty()) return bad_request(one_prompt, "prompt");
  for (const Json& t : *p) {
    if (!t.is_number_integer() || (t.is_number_unsigned() && t.get<uint64_t>() > uint64_t{INT64_MAX})) {
      return bad_request(one_prompt, "prompt");
    }
    out.prompt_ids.push_back(t.get<int64_t>());
  }
  return std::nullopt;
}

}  // namespace ember::server
