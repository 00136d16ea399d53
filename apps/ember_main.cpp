// `ember`: the command line that tests, benchmarks and users call (contracts in
// DESIGN.md).
#include <cstdio>
#include <map>

#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"ember: a CPU runtime for ONNX models"};
  app.require_subcommand(1);
  std::map<CLI::App*, ember::cli::Command> commands;
  auto add = [&](const char* name, const char* help, ember::cli::Command (*make)(CLI::App&)) {
    CLI::App* sub = app.add_subcommand(name, help);
    commands[sub] = make(*sub);
  };
  add("test-onnx", "Run ONNX backend test cases (model.onnx + test_data_set_*) and compare outputs",
      ember::cli::add_test_onnx);
  add("run", "Run a model on TensorProto (.pb) or NumPy (.npy) inputs and write its outputs", ember::cli::add_run);
  add("perf", "Time a model on random inputs of its declared shapes", ember::cli::add_perf);
  add("info", "Show a model's inputs, outputs, op histogram and unsupported ops", ember::cli::add_info);
  add("ops", "Print the support matrix: every op with a kernel or a shape rule, its opsets and string support",
      ember::cli::add_ops);
  add("tokenize", "Encode text to token ids or decode ids with a model folder's tokenizer.json", ember::cli::add_tokenize);
  add("bench", "Prompt-processing and token-generation throughput of a model folder, like llama-bench", ember::cli::add_bench);
  add("chat-template", "Render a model folder's chat template over a JSON message list", ember::cli::add_chat_template);
  add("generate", "Generate text from a prompt with an onnxruntime-genai model folder", ember::cli::add_generate);
  add("chat", "Chat with an onnxruntime-genai model folder (a REPL; /system, /reset, /stats, /exit)", ember::cli::add_chat);
  add("serve", "Serve a model folder over OpenAI's HTTP API (chat, completions, streaming, metrics)",
      ember::cli::add_serve);
  CLI11_PARSE(app, argc, argv);
  for (auto& [sub, run] : commands) {
    if (sub->parsed()) return run();
  }
  return 2;
}
