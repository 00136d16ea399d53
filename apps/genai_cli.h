#pragma once
// What `ember generate`, `chat` and `bench` share: the model folder and its
// options (--threads, --max-context, --onnx), loading the generator or the
// serving engine with a progress line on a terminal, and streaming generated text to stdout.
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "base/status.h"
#include "genai/engine.h"
#include "genai/generator.h"
#include "genai/text_stream.h"

namespace ember::cli {

struct ModelArgs {
  std::string model_dir;
  int threads = 0;
  int max_context = 0;  // KV cache capacity in tokens; 0: the command's default
  std::string onnx;     // the decoder file inside the folder; empty: the folder's own
};

void add_model_options(CLI::App& app, ModelArgs& args, const std::string& folder_help);

// Loads the folder's decoder with a KV cache of `capacity` tokens (0: the
// folder's search.max_length). While the weights are prepacked, stderr shows
// the percentage loaded when it is a terminal.
// max_batch: the rows the KV cache holds (beam search: one per beam).
Result<std::unique_ptr<genai::Generator>> load_generator(const ModelArgs& args, int capacity = 0, int max_batch = 1);
// The serving engine over the folder's decoder, with the same progress line;
// --threads, --max-context and --onnx override `options`.
Result<std::unique_ptr<genai::Engine>> load_engine(const ModelArgs& args, genai::EngineOptions options);

// Writes each piece of `stream` to stdout as it comes; false once a stop string appeared.
std::function<bool(int64_t)> print_stream(genai::TextStream& stream);

}  // namespace ember::cli
