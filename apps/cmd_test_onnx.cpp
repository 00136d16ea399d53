// `ember test-onnx DIR...`: runs ONNX backend test cases and compares outputs.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <regex>

#include "base/tensor_compare.h"
#include "base/value_list.h"
#include "commands.h"
#include "onnx/model_loader.h"
#include "onnx/value_proto.h"
#include "runtime/session.h"

namespace fs = std::filesystem;

namespace ember::cli {
namespace {

// ONNX 1.12's test data stores bfloat16 tensors as uint16 bit patterns (numpy
// has no bfloat16): read them as the bfloat16 the model declares.
void read_as_declared_bfloat16(Tensor& t, DType declared) {
  if (declared == DType::kBF16 && t.dtype() == DType::kU16) t.set_dtype(DType::kBF16);
}

// Files named prefix_N.pb, ordered by N.
std::vector<fs::path> numbered_files(const fs::path& dir, const std::string& prefix) {
  std::vector<std::pair<int, fs::path>> found;
  std::regex re(prefix + "_([0-9]+)\\.pb");
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::smatch m;
    std::string name = entry.path().filename().string();
    if (std::regex_match(name, m, re)) found.emplace_back(std::stoi(m[1].str()), entry.path());
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> out;
  for (auto& [_, p] : found) out.push_back(p);
  return out;
}

// Compares tensors with ONNX's tolerance, and sequences and optionals element by element.
Status compare_values(const Tensor& actual, const Tensor& expected) {
  if (!dtype_is_container(actual.dtype()) && !dtype_is_container(expected.dtype())) {
    return compare_tensors(actual, expected, Tolerance{});
  }
  if (actual.dtype() != expected.dtype()) {
    return invalid_argument("got a {}, expected a {}", dtype_name(actual.dtype()), dtype_name(expected.dtype()));
  }
  const ValueList* a = container_list(actual);
  const ValueList* e = container_list(expected);
  if (!a || !e) return invalid_argument("a {} without its values", dtype_name(actual.dtype()));
  if (a->items.size() != e->items.size()) {
    return invalid_argument("{} with {} values, expected {}", dtype_name(actual.dtype()), a->items.size(), e->items.size());
  }
  for (size_t i = 0; i < a->items.size(); ++i) {
    Status st = compare_values(a->items[i], e->items[i]);
    if (!st.is_ok()) return st.with_context(fmt::format("{} value {}: ", dtype_name(actual.dtype()), i));
  }
  return Status::ok();
}

// The kind of value input_<index>.pb holds: a sequence or an optional when the
// model declares one (the files come in the model's input order).
DType declared_kind(const std::vector<runtime::IoInfo>& inputs, size_t index) {
  return index < inputs.size() ? inputs[index].dtype : DType::kUndefined;
}

struct Outcome {
  enum Kind { kPass, kFail, kSkip } kind;
  std::string reason;
};

Outcome run_data_set(const runtime::Session& session, const fs::path& dir) {
  std::vector<onnx::NamedTensor> inputs;
  for (const fs::path& p : numbered_files(dir, "input")) {
    auto t = onnx::read_value_proto_file(p.string(), declared_kind(session.inputs(), inputs.size()));
    if (!t.is_ok()) return {Outcome::kSkip, fmt::format("{}: {}", p.filename().string(), t.status().to_string())};
    inputs.push_back(std::move(*t));
  }
  const auto& declared = session.inputs();
  std::vector<runtime::NamedInput> named;
  for (size_t i = 0; i < inputs.size(); ++i) {
    bool has_name = std::any_of(declared.begin(), declared.end(), [&](const auto& d) { return d.name == inputs[i].name; });
    if (!has_name && i >= declared.size()) return {Outcome::kFail, fmt::format("input_{}.pb has no matching model input", i)};
    const std::string& name = has_name ? inputs[i].name : declared[i].name;
    for (const auto& d : declared) {
      if (d.name == name) read_as_declared_bfloat16(inputs[i].tensor, d.dtype);
    }
    named.push_back({name, &inputs[i].tensor});
  }
  auto outputs = session.run(named);
  if (!outputs.is_ok()) {
    auto kind = outputs.status().code() == StatusCode::kNotImplemented ? Outcome::kSkip : Outcome::kFail;
    return {kind, outputs.status().to_string()};
  }
  std::vector<fs::path> expected_files = numbered_files(dir, "output");
  if (expected_files.size() != outputs->size()) {
    return {Outcome::kFail, fmt::format("{} outputs, expected {}", outputs->size(), expected_files.size())};
  }
  for (size_t k = 0; k < expected_files.size(); ++k) {
    DType kind = dtype_is_container((*outputs)[k].dtype()) ? (*outputs)[k].dtype() : session.outputs()[k].dtype;
    auto expected = onnx::read_value_proto_file(expected_files[k].string(), kind);
    if (!expected.is_ok()) return {Outcome::kSkip, fmt::format("output_{}.pb: {}", k, expected.status().to_string())};
    read_as_declared_bfloat16(expected->tensor, (*outputs)[k].dtype());
    Status st = compare_values((*outputs)[k], expected->tensor);
    if (!st.is_ok()) return {Outcome::kFail, fmt::format("{}: output {} ('{}'): {}", dir.filename().string(), k,
                                                         session.outputs()[k].name, st.message())};
  }
  return {Outcome::kPass, ""};
}

Outcome run_case(const fs::path& dir) {
  auto session = runtime::Session::load((dir / "model.onnx").string());
  if (!session.is_ok()) {
    auto kind = session.status().code() == StatusCode::kNotImplemented ? Outcome::kSkip : Outcome::kFail;
    return {kind, session.status().to_string()};
  }
  for (const auto& in : (*session)->inputs()) {
    if (in.dtype == DType::kUndefined) {
      return {Outcome::kSkip, fmt::format("input '{}' has a type Ember does not support (a map or a sparse tensor)", in.name)};
    }
  }
  std::vector<fs::path> sets;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_directory() && entry.path().filename().string().starts_with("test_data_set_")) sets.push_back(entry.path());
  }
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return {Outcome::kFail, "no test_data_set_* folder"};
  for (const fs::path& set : sets) {
    Outcome o = run_data_set(**session, set);
    if (o.kind != Outcome::kPass) return o;
  }
  return {Outcome::kPass, ""};
}

void collect_cases(const fs::path& dir, std::vector<fs::path>& cases) {
  if (fs::exists(dir / "model.onnx")) {
    cases.push_back(dir);
    return;
  }
  std::vector<fs::path> children;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_directory()) children.push_back(entry.path());
  }
  std::sort(children.begin(), children.end());
  for (const fs::path& c : children) collect_cases(c, cases);
}

}  // namespace

Command add_test_onnx(CLI::App& app) {
  auto dirs = std::make_shared<std::vector<std::string>>();
  app.add_option("dirs", *dirs, "Test case folders, or folders of them")->required()->check(CLI::ExistingDirectory);
  return [dirs]() {
    std::vector<fs::path> cases;
    for (const std::string& d : *dirs) collect_cases(d, cases);
    int passed = 0, failed = 0, skipped = 0;
    for (const fs::path& c : cases) {
      Outcome o = run_case(c);
      std::string name = c.filename().string();
      switch (o.kind) {
        case Outcome::kPass: ++passed; fmt::print("PASS {}\n", name); break;
        case Outcome::kFail: ++failed; fmt::print("FAIL {}: {}\n", name, o.reason); break;
        case Outcome::kSkip: ++skipped; fmt::print("SKIP {}: {}\n", name, o.reason); break;
      }
      std::fflush(stdout);
    }
    fmt::print("{} passed, {} failed, {} skipped\n", passed, failed, skipped);
    return failed == 0 ? 0 : 1;
  };
}

}  // namespace ember::cli
