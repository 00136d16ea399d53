#include "serve_http.h"

#include <fmt/format.h>
#include <httplib.h>
#include <pthread.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <random>
#include <thread>

#include "genai/chat_template.h"
#include "genai/constraint.h"
#include "server/api.h"
#include "server/engine_worker.h"
#include "server/tool_calls.h"

namespace ember::cli {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;
using server::ApiError;

constexpr auto kHeartbeat = std::chrono::milliseconds(1000);

std::string dump(const OrderedJson& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }
std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

int64_t unix_time() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void send_error(httplib::Response& res, const ApiError& error) {
  res.status = error.status;
  res.set_content(dump(server::error_body(error)), "application/json");
}

ApiError api_error(int status, std::string type, std::string message, std::string code = {}) {
  ApiError e;
  e.status = status;
  e.type = std::move(type);
  e.message = std::move(message);
  e.code = std::move(code);
  return e;
}

// A choice that ended in an error (finish reason "error": its constraint or
// the engine's step failed), as OpenAI's error body. A stream sends it as an
// event, which the openai client raises as an APIError; a response, whose 200
// went out with its first heartbeat, carries its "error" member.
OrderedJson generation_error(size_t choice, const std::string& message) {
  return server::error_body(api_error(500, "server_error", fmt::format("choice {}: {}", choice, message),
                                      "generation_failed"));
}

enum class State { kLoading, kReady, kDraining };

// One choice of a response as it is assembled: its text (through the tool-call
// parser when the request has tools), logprobs and finish reason.
struct ChoiceText {
  std::unique_ptr<server::ToolCallParser> tools;
  std::string content;
  std::vector<server::ToolCall> calls;
  OrderedJson logprobs = OrderedJson::array();  // chat: entries of logprobs.content
  bool started = false;
  bool finished = false;
  std::string finish_reason;
  std::string error;  // when finish_reason is "error"
};

class ApiServer {
 public:
  explicit ApiServer(const ServeOptions& options) : options_(options) {
    std::random_device rd;
    id_base_ = (uint64_t{rd()} << 32) ^ rd();
    created_ = unix_time();
    model_name_ = options.served_model_name;
    if (model_name_.empty()) {
      std::filesystem::path dir = std::filesystem::absolute(options.model.model_dir).lexically_normal();
      if (dir.filename().empty()) dir = dir.parent_path();
      model_name_ = dir.filename().string();
    }
    routes();
  }

  httplib::Server& http() { return http_; }
  State state() const { return state_.load(); }
  void set_state(State s) { state_.store(s); }
  server::EngineWorker* worker() { return worker_.get(); }
  int64_t open_responses() const { return open_responses_.load(); }

  Status load() {
    const std::string& dir = options_.model.model_dir;
    EMBER_ASSIGN_OR_RETURN(genai::Tokenizer tokenizer, genai::Tokenizer::from_file(dir + "/tokenizer.json"));
    tokenizer_ = std::make_unique<genai::Tokenizer>(std::move(tokenizer));
    auto chat_template = genai::ChatTemplate::load(dir);
    if (chat_template.is_ok()) {
      tool_format_ = server::detect_tool_call_format(chat_template->source(/*has_tools=*/true));
      chat_template_ = std::make_unique<genai::ChatTemplate>(std::move(*chat_template));
    } else if (chat_template.status().code() != StatusCode::kNotFound) {
      return chat_template.status();
    }
    genai::EngineOptions engine_options;
    engine_options.max_running = options_.max_concurrent;
    engine_options.kv_tokens = options_.kv_tokens;
    EMBER_ASSIGN_OR_RETURN(std::unique_ptr<genai::Engine> engine, load_engine(options_.model, engine_options));
    max_length_ = engine->max_length();
    search_ = engine->config().search;
    worker_ = std::make_unique<server::EngineWorker>(std::move(engine), *tokenizer_, metrics_);
    return Status::ok();
  }

  void unload() { worker_.reset(); }

 private:
  // Every API response passes through here: the state, the key, then the handler.
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;
  Handler api(std::string endpoint, Handler handler, bool needs_model = true) {
    return [this, endpoint = std::move(endpoint), handler = std::move(handler), needs_model](
               const httplib::Request& req, httplib::Response& res) {
      if (!options_.api_key.empty() && !authorized(req)) {
        send_error(res, api_error(401, "invalid_request_error",
                                  "Incorrect or missing API key: send it as 'Authorization: Bearer KEY'",
                                  "invalid_api_key"));
      } else if (needs_model && state_.load() != State::kReady) {
        const bool loading = state_.load() == State::kLoading;
        send_error(res, api_error(503, "service_unavailable",
                                  loading ? "the model is still loading" : "the server is shutting down"));
      } else {
        res.status = 200;
        handler(req, res);
      }
      requests_.add(fmt::format("endpoint=\"{}\",status=\"{}\"", endpoint, res.status));
    };
  }

  bool authorized(const httplib::Request& req) const {
    const std::string expected = "Bearer " + options_.api_key;
    const std::string got = req.get_header_value("Authorization");
    if (got.size() != expected.size()) return false;
    unsigned diff = 0;
    for (size_t i = 0; i < got.size(); ++i) diff |= static_cast<unsigned char>(got[i] ^ expected[i]);
    return diff == 0;
  }

  void routes() {
    http_.set_payload_max_length(static_cast<size_t>(options_.max_body_bytes));
    // An idle keep-alive connection holds its thread (and the exit after a drain) this long.
    http_.set_keep_alive_timeout(1);
    // Request threads: every streaming client holds one for its response.
    const size_t threads = static_cast<size_t>(options_.max_concurrent + options_.max_queue + 8);
    http_.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    http_.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request&,
                                                                        httplib::Response& res) {
      if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
      if (res.status == 413) {
        send_error(res, api_error(413, "invalid_request_error",
                                  fmt::format("the request body is over {} bytes", options_.max_body_bytes)));
      } else if (res.status == 404) {
        send_error(res, api_error(404, "invalid_request_error", "no such route"));
      } else {
        send_error(res, api_error(res.status, "invalid_request_error", fmt::format("HTTP {}", res.status)));
      }
      return httplib::Server::HandlerResponse::Handled;
    }));
    http_.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
      std::string what = "unknown";
      try {
        std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      send_error(res, api_error(500, "server_error", "internal error: " + what));
    });
    http_.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
      const State s = state_.load();
      res.status = s == State::kReady ? 200 : 503;
      const char* status = s == State::kReady ? "ok" : s == State::kLoading ? "loading" : "draining";
      res.set_content(dump(Json{{"status", status}}), "application/json");
    });
    http_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(metrics(), "text/plain; version=0.0.4");
    });
    http_.Get("/v1/models", api("models", [this](const httplib::Request&, httplib::Response& res) {
      OrderedJson model = {{"id", model_name_}, {"object", "model"}, {"created", created_}, {"owned_by", "ember"},
                           {"max_model_len", max_length_}};
      res.set_content(dump(OrderedJson{{"object", "list"}, {"data", OrderedJson::array({model})}}),
                      "application/json");
    }, /*needs_model=*/false));
    http_.Post("/v1/chat/completions", api("chat", [this](const httplib::Request& req, httplib::Response& res) {
      chat(req, res);
    }));
    http_.Post("/v1/completions", api("completions", [this](const httplib::Request& req, httplib::Response& res) {
      completions(req, res);
    }));
    http_.Post("/tokenize", api("tokenize", [this](const httplib::Request& req, httplib::Response& res) {
      tokenize(req, res);
    }));
    http_.Post("/detokenize", api("detokenize", [this](const httplib::Request& req, httplib::Response& res) {
      detokenize(req, res);
    }));
  }

  std::optional<ApiError> check_model(const std::string& model) const {
    if (model.empty() || model == model_name_) return std::nullopt;
    ApiError e = server::bad_request(fmt::format("The model '{}' does not exist; this server serves '{}'", model,
                                                model_name_),
                                    "model");
    e.status = 404;  // as OpenAI answers an unknown model (the client's NotFoundError)
    e.code = "model_not_found";
    return e;
  }

  // The chat template's rendering of `messages` (and tools), encoded as
  // apply_chat_template(tokenize=True) does: no special tokens added.
  std::optional<ApiError> render(const server::ChatRequest& r, std::vector<int64_t>& prompt) const {
    if (!chat_template_) return server::bad_request("this model folder has no chat template; use /v1/completions");
    genai::ChatTemplateInput input;
    input.messages = r.messages;
    input.tools = r.tools;
    input.add_generation_prompt = true;
    auto text = chat_template_->render(input);
    if (!text.is_ok()) return server::bad_request("the chat template refused the messages: " + text.status().message(), "messages");
    const std::vector<int32_t> ids = tokenizer_->encode(*text, /*add_special=*/false);
    prompt.assign(ids.begin(), ids.end());
    return std::nullopt;
  }

  // The job for a request: the folder's search defaults, then the request's fields.
  std::optional<ApiError> job_spec(const server::SamplingRequest& r, std::vector<int64_t> prompt, const char* prompt_param,
                                   server::JobSpec& spec) const {
    const auto n = static_cast<int64_t>(prompt.size());
    const int64_t room = max_length_ - n;
    if (room < 1) {
      ApiError e = server::bad_request(fmt::format("This model's maximum context length is {} tokens; the prompt has {} "
                                                  "tokens and leaves no room for a completion",
                                                  max_length_, n),
                                      prompt_param);
      e.code = "context_length_exceeded";
      return e;
    }
    if (r.max_tokens && *r.max_tokens > room) {
      ApiError e = server::bad_request(fmt::format("This model's maximum context length is {} tokens; you requested {} "
                                                  "tokens ({} in the prompt, {} for the completion)",
                                                  max_length_, n + *r.max_tokens, n, *r.max_tokens),
                                      "max_tokens");
      e.code = "context_length_exceeded";
      return e;
    }
    spec.params = genai::params_from_search(search_, n);
    spec.params.max_new_tokens = static_cast<int>(r.max_tokens.value_or(room));
    genai::SamplingParams& s = spec.params.sampling;
    // As `ember generate` reads its flags: a sampling parameter turns sampling on.
    if (r.temperature || r.top_p) s.greedy = false;
    if (r.temperature) s.temperature = static_cast<float>(*r.temperature);
    if (r.top_p) s.top_p = static_cast<float>(*r.top_p);
    if (r.presence_penalty) s.presence_penalty = static_cast<float>(*r.presence_penalty);
    if (r.frequency_penalty) s.frequency_penalty = static_cast<float>(*r.frequency_penalty);
    if (r.seed) s.seed = static_cast<uint64_t>(*r.seed);
    spec.params.top_logprobs = r.top_logprobs;
    spec.prompt = std::move(prompt);
    spec.n = r.n;
    spec.stop = r.stop;
    if (r.response_format != "text") {
      auto constraint = compile_response_format(r);
      if (!constraint.is_ok()) return server::bad_request(constraint.status().message(), "response_format");
      spec.params.make_constraint = [c = *constraint]() -> std::unique_ptr<genai::LogitsProcessor> {
        return c->make_mask();
      };
    }
    return std::nullopt;
  }

  // response_format's constraint (`ember generate --json-schema`'s path), over
  // the vocabulary built at the first such request.
  Result<std::shared_ptr<const genai::Constraint>> compile_response_format(const server::SamplingRequest& r) const {
    std::shared_ptr<const genai::ConstraintVocabulary> vocabulary;
    {
      std::lock_guard<std::mutex> lock(constraint_mutex_);
      if (!constraint_vocabulary_) {
        const genai::GenaiConfig& config = worker_->engine().config();
        EMBER_ASSIGN_OR_RETURN(constraint_vocabulary_,
                               genai::ConstraintVocabulary::create(*tokenizer_, config.eos_token_ids, config.vocab_size));
      }
      vocabulary = constraint_vocabulary_;
    }
    genai::ConstraintSpec spec;
    spec.kind = r.response_format == "json_object" ? genai::ConstraintKind::kJsonObject
                                                   : genai::ConstraintKind::kJsonSchema;
    spec.text = r.json_schema;
    spec.origin = "response_format";
    return genai::Constraint::compile(std::move(vocabulary), spec);
  }

  // Submits the job, or says why not: the queue is full (429), the engine refused it (400).
  std::shared_ptr<server::Job> submit(server::JobSpec spec, httplib::Response& res) {
    if (worker_->active_jobs() >= options_.max_concurrent + options_.max_queue) {
      send_error(res, api_error(429, "rate_limit_exceeded",
                                fmt::format("the server is at its limit of {} running and {} queued requests; retry "
                                            "later",
                                            options_.max_concurrent, options_.max_queue)));
      return nullptr;
    }
    auto job = worker_->submit(std::move(spec));
    if (!job.is_ok()) {
      send_error(res, server::bad_request(job.status().message()));
      return nullptr;
    }
    return *job;
  }

  std::string next_id(const char* prefix) {
    return fmt::format("{}-{:016x}{:08x}", prefix, id_base_, next_id_.fetch_add(1));
  }

  OrderedJson usage_json(const server::JobUsage& u) const {
    return {{"prompt_tokens", u.prompt_tokens},
            {"completion_tokens", u.completion_tokens},
            {"total_tokens", u.prompt_tokens + u.completion_tokens},
            {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
  }

  std::string token_text(int64_t token) const {
    const int32_t id = static_cast<int32_t>(token);
    return tokenizer_->decode(std::span<const int32_t>(&id, 1), /*skip_special=*/false);
  }

  OrderedJson token_bytes(const std::string& text) const {
    OrderedJson bytes = OrderedJson::array();
    for (unsigned char c : text) bytes.push_back(c);
    return bytes;
  }

  // Chat: {"token", "logprob", "bytes", "top_logprobs": [...]} per token.
  OrderedJson chat_logprobs(const std::vector<genai::TokenLogprobs>& lps) const {
    OrderedJson entries = OrderedJson::array();
    for (const genai::TokenLogprobs& lp : lps) {
      const std::string text = token_text(lp.token);
      OrderedJson top = OrderedJson::array();
      for (const auto& [token, logprob] : lp.top) {
        const std::string t = token_text(token);
        top.push_back({{"token", t}, {"logprob", logprob}, {"bytes", token_bytes(t)}});
      }
      entries.push_back({{"token", text}, {"logprob", lp.logprob}, {"bytes", token_bytes(text)}, {"top_logprobs", top}});
    }
    return entries;
  }

  // Feeds a choice's new text through its tool-call parser (when the request has tools).
  server::ToolCallParser::Output settle(ChoiceText& c, const std::string& text, bool last) const {
    server::ToolCallParser::Output out;
    if (c.tools) {
      out = c.tools->put(text);
      if (last) {
        server::ToolCallParser::Output rest = c.tools->finish();
        out.content += rest.content;
        out.tool_calls.insert(out.tool_calls.end(), rest.tool_calls.begin(), rest.tool_calls.end());
      }
    } else {
      out.content = text;
    }
    return out;
  }

  // The worker's finish reason in the API: a choice the server cancelled is
  // "abort" (vLLM's name; OpenAI has none).
  static std::string api_reason(const std::string& reason) { return reason == "cancelled" ? "abort" : reason; }

  static std::string final_reason(const ChoiceText& c) {
    if (c.finish_reason == "stop" && !c.calls.empty()) return "tool_calls";
    return api_reason(c.finish_reason);
  }

  // The end of a stream: the usage chunk when the client asked for it, then [DONE].
  std::string stream_end(const OrderedJson& head, const server::Job& job, bool include_usage) const {
    std::string out;
    if (include_usage) {
      OrderedJson chunk = head;
      chunk["choices"] = OrderedJson::array();
      chunk["usage"] = usage_json(job.usage());
      out += "data: " + dump(chunk) + "\n\n";
    }
    return out + "data: [DONE]\n\n";
  }

  void chat(const httplib::Request& req, httplib::Response& res) {
    OrderedJson body;
    if (auto e = server::parse_request_body(req.body, body)) return send_error(res, *e);
    server::ChatRequest r;
    if (auto e = server::parse_chat_request(body, limits_, r)) return send_error(res, *e);
    if (auto e = check_model(r.model)) return send_error(res, *e);
    std::vector<int64_t> prompt;
    if (auto e = render(r, prompt)) return send_error(res, *e);
    server::JobSpec spec;
    if (auto e = job_spec(r, std::move(prompt), "messages", spec)) return send_error(res, *e);
    std::shared_ptr<server::Job> job = submit(std::move(spec), res);
    if (!job) return;
    auto state = std::make_shared<std::vector<ChoiceText>>(static_cast<size_t>(r.n));
    const std::string id = next_id("chatcmpl");
    for (int c = 0; c < r.n; ++c) {
      if (!r.tools.is_null()) {
        (*state)[static_cast<size_t>(c)].tools =
            std::make_unique<server::ToolCallParser>(tool_format_, fmt::format("call_{}_{}_", id.substr(9), c));
      }
    }
    const bool with_logprobs = r.top_logprobs >= 0;
    const OrderedJson head = {{"id", id}, {"object", r.stream ? "chat.completion.chunk" : "chat.completion"},
                              {"created", unix_time()}, {"model", model_name_}, {"system_fingerprint", "ember"}};
    if (r.stream) {
      const bool include_usage = r.include_usage;
      stream(res, job, [this, state, head, with_logprobs, include_usage, job](
                           const std::vector<server::ChoiceEvent>& events, bool all_done) {
        std::string out;
        for (const server::ChoiceEvent& ev : events) {
          ChoiceText& c = (*state)[static_cast<size_t>(ev.choice)];
          OrderedJson delta = OrderedJson::object();
          if (!c.started) {
            c.started = true;
            delta["role"] = "assistant";
            delta["content"] = "";
          }
          server::ToolCallParser::Output piece = settle(c, ev.text, ev.finished);
          if (!piece.content.empty()) delta["content"] = piece.content;
          if (!piece.tool_calls.empty()) {
            OrderedJson calls = OrderedJson::array();
            for (const server::ToolCallDelta& d : piece.tool_calls) {
              calls.push_back({{"index", d.index}, {"id", d.id}, {"type", "function"},
                               {"function", {{"name", d.name}, {"arguments", d.arguments}}}});
              c.calls.push_back({d.id, d.name, d.arguments});
            }
            delta["tool_calls"] = calls;
          }
          const bool has_logprobs = with_logprobs && !ev.logprobs.empty();
          if (delta.size() > 0 || has_logprobs) {
            OrderedJson choice = {{"index", ev.choice}, {"delta", delta},
                                  {"logprobs", has_logprobs ? OrderedJson{{"content", chat_logprobs(ev.logprobs)}}
                                                            : OrderedJson(nullptr)},
                                  {"finish_reason", nullptr}};
            out += sse(head, OrderedJson::array({choice}), include_usage);
          }
          if (ev.finished) {
            c.finish_reason = ev.finish_reason;
            OrderedJson choice = {{"index", ev.choice}, {"delta", OrderedJson::object()}, {"logprobs", nullptr},
                                  {"finish_reason", final_reason(c)}};
            out += sse(head, OrderedJson::array({choice}), include_usage);
            if (!ev.error.empty()) out += "data: " + dump(generation_error(ev.choice, ev.error)) + "\n\n";
          }
        }
        if (all_done) out += stream_end(head, *job, include_usage);
        return out;
      });
      return;
    }
    respond_when_done(res, job, [this, state, head, with_logprobs, job](const std::vector<server::ChoiceEvent>& events,
                                                                        bool all_done) {
      for (const server::ChoiceEvent& ev : events) {
        ChoiceText& c = (*state)[static_cast<size_t>(ev.choice)];
        server::ToolCallParser::Output piece = settle(c, ev.text, ev.finished);
        c.content += piece.content;
        for (const server::ToolCallDelta& d : piece.tool_calls) c.calls.push_back({d.id, d.name, d.arguments});
        if (with_logprobs) {
          for (auto& entry : chat_logprobs(ev.logprobs)) c.logprobs.push_back(std::move(entry));
        }
        if (ev.finished) {
          c.finish_reason = ev.finish_reason;
          c.error = ev.error;
        }
      }
      if (!all_done) return std::string();
      OrderedJson response = head;
      OrderedJson choices = OrderedJson::array();
      for (size_t i = 0; i < state->size(); ++i) {
        const ChoiceText& c = (*state)[i];
        if (!c.error.empty() && !response.contains("error")) response["error"] = generation_error(i, c.error)["error"];
        OrderedJson message = {{"role", "assistant"},
                               {"content", c.content.empty() && !c.calls.empty() ? OrderedJson(nullptr)
                                                                                 : OrderedJson(c.content)}};
        if (!c.calls.empty()) {
          OrderedJson calls = OrderedJson::array();
          for (const server::ToolCall& call : c.calls) {
            calls.push_back({{"id", call.id}, {"type", "function"},
                             {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
          }
          message["tool_calls"] = calls;
        }
        choices.push_back({{"index", i}, {"message", message},
                           {"logprobs", with_logprobs ? OrderedJson{{"content", c.logprobs}} : OrderedJson(nullptr)},
                           {"finish_reason", final_reason(c)}});
      }
      response["choices"] = choices;
      response["usage"] = usage_json(job->usage());
      return dump(response);
    });
  }

  void completions(const httplib::Request& req, httplib::Response& res) {
    OrderedJson body;
    if (auto e = server::parse_request_body(req.body, body)) return send_error(res, *e);
    server::CompletionRequest r;
    if (auto e = server::parse_completion_request(body, limits_, r)) return send_error(res, *e);
    if (auto e = check_model(r.model)) return send_error(res, *e);
    std::vector<int64_t> prompt = r.prompt_ids;
    std::string prompt_text = r.prompt;
    if (prompt.empty()) {
      const std::vector<int32_t> ids = tokenizer_->encode(r.prompt, /*add_special=*/true);
      prompt.assign(ids.begin(), ids.end());
    } else if (r.echo) {
      const std::vector<int32_t> ids(prompt.begin(), prompt.end());
      prompt_text = tokenizer_->decode(ids, /*skip_special=*/true);
    }
    server::JobSpec spec;
    if (auto e = job_spec(r, std::move(prompt), "prompt", spec)) return send_error(res, *e);
    std::shared_ptr<server::Job> job = submit(std::move(spec), res);
    if (!job) return;
    const std::string id = next_id("cmpl");
    const OrderedJson head = {{"id", id}, {"object", "text_completion"}, {"created", unix_time()},
                              {"model", model_name_}, {"system_fingerprint", "ember"}};
    struct CompletionChoice {
      std::string text;
      OrderedJson tokens = OrderedJson::array(), token_logprobs = OrderedJson::array(),
                  top_logprobs = OrderedJson::array(), text_offset = OrderedJson::array();
      int64_t offset = 0;
      bool started = false;
      std::string finish_reason;
      std::string error;  // when finish_reason is "error"
    };
    auto state = std::make_shared<std::vector<CompletionChoice>>(static_cast<size_t>(r.n));
    const bool with_logprobs = r.top_logprobs >= 0;
    const std::string echo = r.echo ? prompt_text : std::string();
    for (CompletionChoice& c : *state) c.offset = static_cast<int64_t>(echo.size());
    // Adds an event's tokens to `c`'s logprobs (text offsets count from the start of the choice's text).
    auto add_logprobs = [this](CompletionChoice& c, const server::ChoiceEvent& ev) {
      for (const genai::TokenLogprobs& lp : ev.logprobs) {
        const std::string t = token_text(lp.token);
        c.tokens.push_back(t);
        c.token_logprobs.push_back(lp.logprob);
        OrderedJson top = OrderedJson::object();
        for (const auto& [token, logprob] : lp.top) top[token_text(token)] = logprob;
        c.top_logprobs.push_back(top);
        c.text_offset.push_back(c.offset);
        c.offset += static_cast<int64_t>(t.size());
      }
    };
    auto logprobs_json = [](const CompletionChoice& c) {
      return OrderedJson{{"tokens", c.tokens}, {"token_logprobs", c.token_logprobs}, {"top_logprobs", c.top_logprobs},
                         {"text_offset", c.text_offset}};
    };
    if (r.stream) {
      const bool include_usage = r.include_usage;
      stream(res, job, [this, state, head, with_logprobs, include_usage, job, echo, add_logprobs, logprobs_json](
                           const std::vector<server::ChoiceEvent>& events, bool all_done) {
        std::string out;
        for (const server::ChoiceEvent& ev : events) {
          CompletionChoice& c = (*state)[static_cast<size_t>(ev.choice)];
          CompletionChoice piece;
          piece.offset = c.offset;
          if (with_logprobs) add_logprobs(piece, ev);
          c.offset = piece.offset;
          std::string text = c.started ? ev.text : echo + ev.text;
          c.started = true;
          if (!text.empty() || (with_logprobs && !ev.logprobs.empty()) || ev.finished) {
            OrderedJson choice = {{"index", ev.choice}, {"text", text},
                                  {"logprobs", with_logprobs ? logprobs_json(piece) : OrderedJson(nullptr)},
                                  {"finish_reason",
                                   ev.finished ? OrderedJson(api_reason(ev.finish_reason)) : OrderedJson(nullptr)}};
            out += sse(head, OrderedJson::array({choice}), include_usage);
          }
          if (ev.finished && !ev.error.empty()) out += "data: " + dump(generation_error(ev.choice, ev.error)) + "\n\n";
        }
        if (all_done) out += stream_end(head, *job, include_usage);
        return out;
      });
      return;
    }
    respond_when_done(res, job, [this, state, head, with_logprobs, job, echo, add_logprobs, logprobs_json](
                                    const std::vector<server::ChoiceEvent>& events, bool all_done) {
      for (const server::ChoiceEvent& ev : events) {
        CompletionChoice& c = (*state)[static_cast<size_t>(ev.choice)];
        c.text += ev.text;
        if (with_logprobs) add_logprobs(c, ev);
        if (ev.finished) {
          c.finish_reason = api_reason(ev.finish_reason);
          c.error = ev.error;
        }
      }
      if (!all_done) return std::string();
      OrderedJson response = head;
      OrderedJson choices = OrderedJson::array();
      for (size_t i = 0; i < state->size(); ++i) {
        const CompletionChoice& c = (*state)[i];
        if (!c.error.empty() && !response.contains("error")) response["error"] = generation_error(i, c.error)["error"];
        choices.push_back({{"index", i}, {"text", echo + c.text},
                           {"logprobs", with_logprobs ? logprobs_json(c) : OrderedJson(nullptr)},
                           {"finish_reason", c.finish_reason}});
      }
      response["choices"] = choices;
      response["usage"] = usage_json(job->usage());
      return dump(response);
    });
  }

  // One SSE event of a chunk with `choices` (usage null on every chunk when the
  // client asked for a usage chunk at the end, as OpenAI sends them).
  static std::string sse(const OrderedJson& head, OrderedJson choices, bool include_usage) {
    OrderedJson chunk = head;
    chunk["choices"] = std::move(choices);
    if (include_usage) chunk["usage"] = nullptr;
    return "data: " + dump(chunk) + "\n\n";
  }

  // What a response does with the job's events: the text to write now (all_done: the last call).
  using Render = std::function<std::string(const std::vector<server::ChoiceEvent>&, bool all_done)>;

  // Streams Server-Sent Events: each batch of events as it comes, an SSE
  // comment when nothing came for a second (a client that has gone is found by
  // the failed write, and its job cancelled).
  void stream(httplib::Response& res, const std::shared_ptr<server::Job>& job, Render render) {
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    provide(res, "text/event-stream", job, std::move(render), /*incremental=*/true);
  }

  // A JSON body once the job is done. Until then a space every second (JSON
  // allows leading whitespace): a client that has gone is found by the failed
  // write, and its job cancelled.
  void respond_when_done(httplib::Response& res, const std::shared_ptr<server::Job>& job, Render render) {
    provide(res, "application/json", job, std::move(render), /*incremental=*/false);
  }

  void provide(httplib::Response& res, const char* content_type, const std::shared_ptr<server::Job>& job, Render render,
               bool incremental) {
    ++open_responses_;
    res.status = 200;
    res.set_chunked_content_provider(
        content_type,
        [job, render = std::move(render), incremental](size_t, httplib::DataSink& sink) {
          std::vector<server::ChoiceEvent> events;
          const bool got = job->wait(events, kHeartbeat);
          const bool all_done = job->done();
          std::string out = got || all_done ? render(events, all_done) : std::string();
          if (!got && !all_done) out = incremental ? ": keep-alive\n\n" : " ";
          if (!out.empty() && !sink.write(out.data(), out.size())) {
            job->cancel();
            return false;
          }
          if (all_done) sink.done();
          return true;
        },
        [this, job](bool success) {
          if (!success) job->cancel();
          --open_responses_;
        });
  }

  void tokenize(const httplib::Request& req, httplib::Response& res) {
    OrderedJson body;
    if (auto e = server::parse_request_body(req.body, body)) return send_error(res, *e);
    std::vector<int64_t> tokens;
    if (body.contains("messages")) {
      server::ChatRequest r;
      if (auto e = server::parse_chat_request(body, limits_, r)) return send_error(res, *e);
      if (auto e = render(r, tokens)) return send_error(res, *e);
    } else {
      const OrderedJson* text = body.contains("prompt") ? &body["prompt"] : body.contains("content") ? &body["content"] : nullptr;
      if (!text || !text->is_string()) {
        return send_error(res, server::bad_request("'prompt' (a string) or 'messages' is required", "prompt"));
      }
      bool add_special = true;
      if (auto it = body.find("add_special_tokens"); it != body.end()) {
        if (!it->is_boolean()) return send_error(res, server::bad_request("'add_special_tokens' must be a boolean"));
        add_special = it->get<bool>();
      }
      const std::vector<int32_t> ids = tokenizer_->encode(text->get<std::string>(), add_special);
      tokens.assign(ids.begin(), ids.end());
    }
    res.set_content(dump(OrderedJson{{"tokens", tokens}, {"count", tokens.size()}, {"max_model_len", max_length_}}),
                    "application/json");
  }

  void detokenize(const httplib::Request& req, httplib::Response& res) {
    OrderedJson body;
    if (auto e = server::parse_request_body(req.body, body)) return send_error(res, *e);
    const OrderedJson* tokens = body.contains("tokens") ? &body["tokens"] : nullptr;
    std::vector<int32_t> ids;
    const std::string bad = "'tokens' must be a list of token ids in the vocabulary";
    if (!tokens || !tokens->is_array()) return send_error(res, server::bad_request(bad, "tokens"));
    const int64_t vocab = worker_->engine().config().vocab_size;
    for (const OrderedJson& t : *tokens) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= vocab) {
        return send_error(res, server::bad_request(bad, "tokens"));
      }
      ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
    }
    res.set_content(dump(OrderedJson{{"prompt", tokenizer_->decode(ids, /*skip_special=*/false)}}), "application/json");
  }

  std::string metrics() const {
    std::string out;
    server::render_header("ember_requests_total", "counter", "HTTP requests by endpoint and status", out);
    requests_.render("ember_requests_total", out);
    server::render_header("ember_requests_finished_total", "counter", "Generated choices by finish reason", out);
    metrics_.finished.render("ember_requests_finished_total", out);
    auto counter = [&](const char* name, const char* help, double value) {
      server::render_header(name, "counter", help, out);
      server::render_sample(name, value, out);
    };
    auto gauge = [&](const char* name, const char* help, double value) {
      server::render_header(name, "gauge", help, out);
      server::render_sample(name, value, out);
    };
    counter("ember_prompt_tokens_total", "Prompt tokens of finished choices", static_cast<double>(metrics_.prompt_tokens));
    counter("ember_generation_tokens_total", "Generated tokens", static_cast<double>(metrics_.generation_tokens));
    counter("ember_prompt_tokens_cached_total", "Prompt tokens whose KV came from the prefix cache",
            static_cast<double>(metrics_.cached_prompt_tokens));
    auto histogram = [&](const char* name, const char* help, const server::Histogram& h) {
      server::render_header(name, "histogram", help, out);
      h.render(name, out);
    };
    histogram("ember_time_to_first_token_seconds", "From the request's arrival to its first token",
              metrics_.time_to_first_token);
    histogram("ember_inter_token_latency_seconds", "Between consecutive tokens of a choice", metrics_.inter_token);
    histogram("ember_request_duration_seconds", "From the request's arrival to its last token",
              metrics_.request_duration);
    const State s = state_.load();
    gauge("ember_ready", "1 when the model is loaded and the server takes requests", s == State::kReady ? 1 : 0);
    if (worker_) {
      const genai::EngineStats st = worker_->stats();
      gauge("ember_requests_active", "API requests submitted and not finished",
            static_cast<double>(worker_->active_jobs()));
      gauge("ember_requests_running", "Sequences decoding", static_cast<double>(st.running));
      gauge("ember_requests_waiting", "Sequences queued for the engine", static_cast<double>(st.waiting));
      gauge("ember_kv_blocks_total", "Blocks of the KV pool", static_cast<double>(st.pool.num_blocks));
      gauge("ember_kv_blocks_used", "KV blocks held by sequences", static_cast<double>(st.pool.referenced_blocks));
      gauge("ember_kv_blocks_cached", "KV blocks kept for prefix reuse", static_cast<double>(st.pool.cached_blocks));
      gauge("ember_kv_usage_ratio", "Share of the KV pool held by sequences",
            st.pool.num_blocks > 0 ? static_cast<double>(st.pool.referenced_blocks) / static_cast<double>(st.pool.num_blocks) : 0);
      counter("ember_prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache",
              static_cast<double>(st.prompt_tokens_admitted));
      counter("ember_prefix_cache_hits_total", "Prompt tokens found in the prefix cache",
              static_cast<double>(st.prefix_tokens_reused));
      counter("ember_preemptions_total", "Sequences preempted for KV space", static_cast<double>(st.preemptions));
      counter("ember_engine_steps_total", "Model runs of the engine", static_cast<double>(st.steps));
    }
    return out;
  }

  const ServeOptions& options_;
  httplib::Server http_;
  std::atomic<State> state_{State::kLoading};
  std::string model_name_;
  int64_t created_ = 0;
  uint64_t id_base_ = 0;
  std::atomic<uint64_t> next_id_{0};
  server::ApiLimits limits_;

  std::unique_ptr<genai::Tokenizer> tokenizer_;
  mutable std::mutex constraint_mutex_;
  mutable std::shared_ptr<const genai::ConstraintVocabulary> constraint_vocabulary_;
  std::unique_ptr<genai::ChatTemplate> chat_template_;  // null: the folder has none
  server::ToolCallFormat tool_format_ = server::ToolCallFormat::kNone;
  int64_t max_length_ = 0;
  genai::SearchConfig search_;
  server::GenerationMetrics metrics_;
  server::LabeledCounter requests_;
  std::unique_ptr<server::EngineWorker> worker_;
  std::atomic<int64_t> open_responses_{0};
};

// Waits until `done` or the deadline; false at the deadline.
template <typename F>
bool wait_until(F done, Clock::time_point deadline) {
  while (!done()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

}  // namespace

int run_serve(const ServeOptions& options) {
  // SIGTERM and SIGINT are taken by one thread (sigwait), so every other
  // thread, started after this, has them blocked; SIGPIPE from a client gone
  // is an error on the write, not the end of the process.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  ApiServer server(options);
  // Debian's cpp-httplib 0.11 listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG,
  // compiled into the library): 8 clients connecting at once overflowed it, and the
  // one whose SYN was dropped waited for the kernel's retry, 1 s (the side-by-side with
  // llama-server, docs/benchmarks/2026-12-03-serve-vs-llama-cpp.md). The listening
  // socket is caught as it is made and, once bound, listened on again with the system's
  // maximum.
  int listen_fd = -1;
  server.http().set_socket_options([&listen_fd](socket_t sock) {
    httplib::default_socket_options(sock);
    listen_fd = sock;
  });
  int port = options.port;
  if (port == 0) {
    port = server.http().bind_to_any_port(options.host);
    if (port < 0) port = 0;
  } else if (!server.http().bind_to_port(options.host, port)) {
    port = 0;
  }
  if (port == 0) {
    fmt::print(stderr, "ember serve: cannot listen on {}:{}\n", options.host, options.port);
    return 1;
  }
  if (listen_fd < 0 || ::listen(listen_fd, SOMAXCONN) != 0) {
    fmt::print(stderr, "ember serve: cannot raise the listen backlog on {}:{}: {}\n", options.host, port,
               std::strerror(errno));
    return 1;
  }
  std::thread listener([&server] { server.http().listen_after_bind(); });
  fmt::print(stderr, "ember serve: listening on http://{}:{}\n", options.host, port);

  std::mutex mutex;
  std::condition_variable signalled_cv;
  bool signalled = false;
  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    {
      std::lock_guard lock(mutex);
      signalled = true;
    }
    signalled_cv.notify_all();
  });

  int rc = 0;
  if (Status s = server.load(); !s.is_ok()) {
    fmt::print(stderr, "ember serve: {}\n", s.to_string());
    rc = 1;
  } else {
    server.set_state(State::kReady);
    fmt::print(stderr, "ember serve: ready\n");
    std::unique_lock lock(mutex);
    signalled_cv.wait(lock, [&] { return signalled; });
  }
  server.set_state(State::kDraining);
  if (server.worker()) {
    fmt::print(stderr, "ember serve: draining ({} requests running)\n", server.worker()->active_jobs());
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(options.drain_timeout_s));
    if (!wait_until([&] { return server.worker()->active_jobs() == 0; }, deadline)) {
      fmt::print(stderr, "ember serve: cancelling {} requests at the drain deadline\n", server.worker()->active_jobs());
      server.worker()->cancel_all();
    }
    // The responses write their last events; a client that stopped reading does not hold the exit.
    wait_until([&] { return server.worker()->active_jobs() == 0 && server.open_responses() == 0; },
               Clock::now() + std::chrono::seconds(5));
  }
  server.http().stop();
  listener.join();
  if (!signalled) {
    {
      std::lock_guard lock(mutex);
      signalled = true;
    }
    pthread_kill(signal_thread.native_handle(), SIGTERM);
  }
  signal_thread.join();
  server.unload();
  fmt::print(stderr, "ember serve: stopped\n");
  return rc;
}

}  // namespace ember::cli
