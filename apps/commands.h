#pragma once
// Subcommands of the `ember` command line. Each registers its options on the
// CLI11 app and returns the function that runs it (exit status).
#include <functional>

#include <CLI/CLI.hpp>

namespace ember::cli {

using Command = std::function<int()>;

Command add_test_onnx(CLI::App& app);
Command add_run(CLI::App& app);
Command add_perf(CLI::App& app);
Command add_info(CLI::App& app);
Command add_ops(CLI::App& app);
Command add_tokenize(CLI::App& app);
Command add_bench(CLI::App& app);
Command add_chat_template(CLI::App& app);
Command add_generate(CLI::App& app);
Command add_chat(CLI::App& app);
Command add_serve(CLI::App& app);

}  // namespace ember::cli
