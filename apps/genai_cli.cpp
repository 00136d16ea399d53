#include "genai_cli.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

namespace ember::cli {

void add_model_options(CLI::App& app, ModelArgs& args, const std::string& folder_help) {
  app.add_option("model_dir", args.model_dir, folder_help)->required()->check(CLI::ExistingDirectory);
  app.add_option("--threads", args.threads, "Threads (default: the folder's setting, else one per physical core)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-context", args.max_context,
                 "KV cache capacity in tokens, prompt included (default: the folder's search.max_length)")
      ->check(CLI::PositiveNumber);
  app.add_option("--onnx", args.onnx,
                 "Decoder file inside the folder, e.g. onnx/model_q4.onnx (default: genai_config.json's, else "
                 "model.onnx, else onnx/model.onnx)");
}

namespace {

// A percentage line on stderr while the weights are prepacked, when stderr is a
// terminal (empty otherwise); done() clears it.
struct LoadLine {
  bool terminal = isatty(STDERR_FILENO) == 1;
  runtime::LoadProgress progress(const ModelArgs& args) const {
    if (!terminal) return {};
    const std::string name = std::filesystem::path(args.model_dir).filename().string();
    return [name, shown = -1](int64_t done, int64_t total) mutable {
      const int percent = total > 0 ? static_cast<int>(100 * done / total) : 100;
      if (percent == shown) return;
      shown = percent;
      fmt::print(stderr, "\rloading {}: {:3d}% of {:.0f} MB", name, percent, static_cast<double>(total) / 1e6);
      std::fflush(stderr);
    };
  }
  void done(const genai::GenaiConfig* config) const {
    if (terminal) fmt::print(stderr, "\r\x1b[2K");
    if (config) {
      for (const std::string& warning : config->warnings) fmt::print(stderr, "warning: {}\n", warning);
    }
  }
};

}  // namespace

Result<std::unique_ptr<genai::Generator>> load_generator(const ModelArgs& args, int capacity, int max_batch) {
  genai::GeneratorOptions options;
  options.num_threads = args.threads;
  options.max_length = capacity;
  options.max_batch = max_batch;
  options.decoder_file = args.onnx;
  const LoadLine line;
  options.progress = line.progress(args);
  auto generator = genai::Generator::load(args.model_dir, options);
  line.done(generator.is_ok() ? &(*generator)->config() : nullptr);
  return generator;
}

Result<std::unique_ptr<genai::Engine>> load_engine(const ModelArgs& args, genai::EngineOptions options) {
  options.num_threads = args.threads;
  options.max_length = args.max_context;
  options.decoder_file = args.onnx;
  const LoadLine line;
  options.progress = line.progress(args);
  auto engine = genai::Engine::load(args.model_dir, options);
  line.done(engine.is_ok() ? &(*engine)->config() : nullptr);
  return engine;
}

std::function<bool(int64_t)> print_stream(genai::TextStream& stream) {
  return [&stream](int64_t token) {
    const std::string piece = stream.put(static_cast<int32_t>(token));
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    return !stream.stopped();
  };
}

}  // namespace ember::cli
