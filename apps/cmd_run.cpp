// `ember run MODEL --input NAME=FILE ... [--output-dir DIR]`
#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "base/value_list.h"
#include "commands.h"
#include "onnx/model_loader.h"
#include "onnx/value_proto.h"
#include "tensor_io.h"

namespace ember::cli {
namespace {

std::string preview(const Tensor& t) {
  std::string s;
  int64_t n = std::min<int64_t>(t.numel(), 8);
  for (int64_t i = 0; i < n; ++i) {
    if (i) s += ", ";
    s += dtype_is_float(t.dtype()) ? fmt::format("{:.6g}", read_double(t, i)) : fmt::format("{}", read_int(t, i));
  }
  return "[" + s + (t.numel() > n ? ", ...]" : "]");
}

struct RunArgs {
  std::string model;
  std::vector<std::string> inputs;
  std::string output_dir = ".";
};

int run_command(const RunArgs& args) {
  auto session = runtime::Session::load(args.model);
  if (!session.is_ok()) {
    fmt::print(stderr, "ember run: {}\n", session.status().to_string());
    return 1;
  }
  std::vector<std::string> names;
  std::vector<Tensor> tensors;
  bool npy = false;
  for (const std::string& spec : args.inputs) {
    auto kv = split_assignment(spec, "--input");
    if (!kv.is_ok()) {
      fmt::print(stderr, "ember run: {}\n", kv.status().to_string());
      return 1;
    }
    DType kind = DType::kUndefined;
    for (const runtime::IoInfo& info : (*session)->inputs()) {
      if (info.name == kv->first) kind = info.dtype;
    }
    auto t = read_tensor_file(kv->second, kind);
    if (!t.is_ok()) {
      fmt::print(stderr, "ember run: input '{}' from {}: {}\n", kv->first, kv->second, t.status().to_string());
      return 1;
    }
    npy = npy || kv->second.ends_with(".npy");
    names.push_back(kv->first);
    tensors.push_back(std::move(*t));
  }
  std::vector<runtime::NamedInput> named;
  for (size_t i = 0; i < names.size(); ++i) named.push_back({names[i], &tensors[i]});
  auto outputs = (*session)->run(named);
  if (!outputs.is_ok()) {
    fmt::print(stderr, "ember run: {}\n", outputs.status().to_string());
    return 1;
  }
  std::error_code ec;
  std::filesystem::create_directories(args.output_dir, ec);
  for (size_t k = 0; k < outputs->size(); ++k) {
    const Tensor& t = (*outputs)[k];
    const std::string& name = (*session)->outputs()[k].name;
    std::string base = (std::filesystem::path(args.output_dir) / fmt::format("output_{}", k)).string();
    std::ofstream(base + ".pb", std::ios::binary) << onnx::serialize_value_proto(t, name);
    if (const ValueList* list = container_list(t)) {
      fmt::print("{} {} of {} values -> {}.pb\n", name, dtype_name(t.dtype()), list->items.size(), base);
      continue;
    }
    if (npy) {
      Status st = onnx::write_npy_file(base + ".npy", t);
      if (!st.is_ok()) {
        fmt::print(stderr, "ember run: {}\n", st.to_string());
        return 1;
      }
    }
    fmt::print("{} {} {} -> {}.pb\n", name, t.describe(), preview(t), base);
  }
  return 0;
}

}  // namespace

Command add_run(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  app.add_option("model", args->model, "Path of the .onnx file")->required();
  app.add_option("--input,-i", args->inputs, "NAME=FILE: an input from a TensorProto (.pb) or NumPy (.npy) file");
  app.add_option("--output-dir,-o", args->output_dir, "Folder for output_K.pb (and output_K.npy for .npy inputs)");
  return [args]() { return run_command(*args); };
}

}  // namespace ember::cli
