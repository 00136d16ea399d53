// Whole models from Debian's libonnx-testdata, run in Ember and in ONNX Runtime
// on the cases' own inputs, outputs compared with the whole-model tolerances.
// Where the two differ, the case's own expected output decides: a case where
// Ember matches it and ONNX Runtime does not is listed as ORT's deviation, not
// a failure. Cases ONNX Runtime (or this harness) cannot load or run, and those
// whose outputs are random draws, are counted and listed with their reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "compare.h"
#include "onnx/model_loader.h"
#include "ort_reference.h"
#include "runtime/session.h"

namespace fs = std::filesystem;

namespace ember {
namespace {

constexpr const char* kData = "/usr/share/libonnx-testdata/data";

struct Tally {
  int compared = 0;
  int unsupported = 0;
  int ort_unsupported = 0;  // ONNX Runtime 1.30 (or this harness) cannot load or run the model
  int rejected_by_both = 0;  // test data whose inputs both runtimes reject
  int random = 0;  // outputs are random draws (Bernoulli, Multinomial, Random*): nothing to compare
  std::vector<std::string> ort_cannot;    // "case: ONNX Runtime's or the harness's reason"
  std::vector<std::string> ort_deviates;  // ORT is off the case's expected output where Ember is on it
  std::vector<std::string> mismatches;
};

// ONNX's backend-test tolerance (as `ember test-onnx`).
constexpr Tolerance kOnnxTolerance{1e-3, 1e-7};

bool draws_at_random(const fs::path& model) {
  auto loaded = onnx::load_model(model.string());
  if (!loaded.is_ok()) return false;
  return std::any_of(loaded->graph->nodes.begin(), loaded->graph->nodes.end(), [](const ir::Node& n) {
    return n.op_type == "Bernoulli" || n.op_type == "Multinomial" || n.op_type.starts_with("Random");
  });
}

std::vector<fs::path> input_files(const fs::path& set) {
  std::vector<fs::path> files;
  for (int i = 0; fs::exists(set / ("input_" + std::to_string(i) + ".pb")); ++i) {
    files.push_back(set / ("input_" + std::to_string(i) + ".pb"));
  }
  return files;
}

void check_case(const fs::path& dir, Tally& tally) {
  std::string name = dir.filename().string();
  auto ember = runtime::Session::load((dir / "model.onnx").string());
  if (!ember.is_ok()) {
    ASSERT_EQ(ember.status().code(), StatusCode::kNotImplemented) << name << ": " << ember.status().to_string();
    ++tally.unsupported;
    return;
  }
  if (draws_at_random(dir / "model.onnx")) {
    ++tally.random;
    return;
  }
  auto ort = ortref::OrtSession::load((dir / "model.onnx").string());
  if (!ort.is_ok()) {  // an old opset, or a form ORT's kernels refuse (batchwise RNN layout)
    ++tally.ort_unsupported;
    tally.ort_cannot.push_back(name + ": " + ort.status().to_string());
    return;
  }
  std::vector<onnx::NamedTensor> inputs;
  for (const fs::path& p : input_files(dir / "test_data_set_0")) {
    auto t = onnx::read_tensor_proto_file(p.string());
    if (!t.is_ok()) {  // sequences and maps
      ++tally.unsupported;
      return;
    }
    inputs.push_back(std::move(*t));
  }
  const auto& declared = (*ember)->inputs();
  std::vector<runtime::NamedInput> ember_in;
  std::vector<ortref::OrtInput> ort_in;
  for (size_t i = 0; i < inputs.size() && i < declared.size(); ++i) {
    const std::string& input_name = inputs[i].name.empty() ? declared[i].name : inputs[i].name;
    // ONNX 1.12's test data stores bfloat16 as uint16 bit patterns.
    if (declared[i].dtype == DType::kBF16 && inputs[i].tensor.dtype() == DType::kU16) {
      inputs[i].tensor.set_dtype(DType::kBF16);
    }
    ember_in.push_back({input_name, &inputs[i].tensor});
    ort_in.push_back({input_name, &inputs[i].tensor});
  }
  auto ember_out = (*ember)->run(ember_in);
  if (!ember_out.is_ok() && ember_out.status().code() == StatusCode::kNotImplemented) {
    ++tally.unsupported;
    return;
  }
  auto ort_out = (*ort)->run(ort_in);
  if (!ember_out.is_ok() && !ort_out.is_ok()) {  // inputs that contradict the model's declared types
    ++tally.rejected_by_both;
    return;
  }
  if (ember_out.is_ok() && !ort_out.is_ok() && ort_out.status().code() == StatusCode::kNotImplemented) {
    ++tally.ort_unsupported;  // the harness passes no string tensors
    tally.ort_cannot.push_back(name + ": " + ort_out.status().to_string());
    return;
  }
  ASSERT_TRUE(ember_out.is_ok()) << name << ": " << ember_out.status().to_string();
  ASSERT_TRUE(ort_out.is_ok()) << name << ": " << ort_out.status().to_string();
  ASSERT_EQ(ember_out->size(), ort_out->size()) << name;
  ++tally.compared;
  for (size_t k = 0; k < ort_out->size(); ++k) {
    Status st = ortref::compare((*ember_out)[k], (*ort_out)[k]);
    if (st.is_ok()) continue;
    const std::string what = name + " output " + std::to_string(k) + ": " + st.message();
    auto expected = onnx::read_tensor_proto_file(
        (dir / "test_data_set_0" / ("output_" + std::to_string(k) + ".pb")).string());
    if (expected.is_ok() && ortref::compare((*ember_out)[k], expected->tensor, kOnnxTolerance).is_ok() &&
        !ortref::compare((*ort_out)[k], expected->tensor, kOnnxTolerance).is_ok()) {
      tally.ort_deviates.push_back(what);
    } else {
      tally.mismatches.push_back(what);
    }
  }
}

Tally check_folder(const std::string& folder) {
  Tally tally;
  std::vector<fs::path> cases;
  for (const auto& entry : fs::directory_iterator(fs::path(kData) / folder)) {
    if (fs::exists(entry.path() / "model.onnx")) cases.push_back(entry.path());
  }
  std::sort(cases.begin(), cases.end());
  for (const fs::path& c : cases) check_case(c, tally);
  std::cout << folder << ": " << tally.compared << " models compared with ONNX Runtime, " << tally.unsupported
            << " use ops or types Ember does not support, " << tally.ort_unsupported
            << " ONNX Runtime or the harness cannot run, " << tally.rejected_by_both
            << " have inputs both runtimes reject, " << tally.random << " draw at random\n";
  for (const std::string& m : tally.ort_cannot) std::cout << "  ONNX Runtime cannot run " << m << "\n";
  for (const std::string& m : tally.ort_deviates) {
    std::cout << "  ONNX Runtime is off the expected output where Ember is on it: " << m << "\n";
  }
  for (const std::string& m : tally.mismatches) ADD_FAILURE() << m;
  return tally;
}

// The floors are the counts at the time each was written; they may only go up.
TEST(WholeModelVsOrt, PytorchConverted) { EXPECT_GE(check_folder("pytorch-converted").compared, 57); }
TEST(WholeModelVsOrt, PytorchOperator) { EXPECT_GE(check_folder("pytorch-operator").compared, 23); }
TEST(WholeModelVsOrt, NodeTests) { EXPECT_GE(check_folder("node").compared, 737); }
TEST(WholeModelVsOrt, Simple) { EXPECT_GE(check_folder("simple").compared, 6); }

}  // namespace
}  // namespace ember
