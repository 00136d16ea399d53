// `ember serve MODEL_DIR [--host 127.0.0.1] [--port 8080] [--threads N]
// [--max-concurrent N] [--max-queue N] [--kv-tokens N] [--api-key KEY]
// [--served-model-name NAME] [--max-body-bytes N] [--drain-timeout S]
// [--max-context N] [--onnx FILE]`: OpenAI's HTTP API over the serving engine
// (serve_http.h, docs/serving.md).
#include "commands.h"
#include "serve_http.h"

namespace ember::cli {

Command add_serve(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  add_model_options(app, o->model, "Model folder (onnxruntime-genai or optimum / transformers.js) with tokenizer.json");
  app.add_option("--host", o->host, "Address to listen on (0.0.0.0 for every interface)")->capture_default_str();
  app.add_option("--port", o->port, "Port to listen on (0: any free port, named on stderr)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  app.add_option("--max-concurrent", o->max_concurrent, "Sequences decoded at once")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-queue", o->max_queue, "Requests queued beyond those before new ones get 429")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--kv-tokens", o->kv_tokens, "KV cache pool in tokens (default: 4 x the context)")
      ->check(CLI::PositiveNumber);
  app.add_option("--api-key", o->api_key, "Require 'Authorization: Bearer KEY' on /v1/* and /tokenize, /detokenize");
  app.add_option("--served-model-name", o->served_model_name, "The model's name in the API (default: the folder's name)");
  app.add_option("--max-body-bytes", o->max_body_bytes, "Larger request bodies get 413")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--drain-timeout", o->drain_timeout_s,
                 "Seconds running requests may take to finish after SIGTERM before they are cancelled")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  return [o] { return run_serve(*o); };
}

}  // namespace ember::cli
