#pragma once
// `ember serve`: OpenAI's HTTP API over the serving engine (cpp-httplib; see
// docs/serving.md for the routes, the errors and the shutdown sequence).
#include <cstdint>
#include <string>

#include "genai_cli.h"

namespace ember::cli {

struct ServeOptions {
  ModelArgs model;
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (the listening line names it)
  int max_concurrent = 16;  // sequences the engine decodes at once
  int max_queue = 64;       // requests waiting beyond those; more are refused with 429
  int64_t kv_tokens = 0;    // the KV pool; 0: the engine's default (4 x the context)
  std::string api_key;      // when set, /v1/* and /tokenize, /detokenize need "Authorization: Bearer KEY"
  std::string served_model_name;  // default: the folder's name
  int64_t max_body_bytes = 4 << 20;
  double drain_timeout_s = 30;
};

// Listens, loads the model (/health says loading meanwhile), serves until
// SIGTERM or SIGINT, then drains: new requests get 503, running ones finish
// within drain_timeout_s or are cancelled, and it returns 0.
int run_serve(const ServeOptions& options);

}  // namespace ember::cli
