// Differential test: random small graphs run in Ember and in ONNX Runtime must agree.
// EMBER_RANDOM_GRAPH_SEED and EMBER_RANDOM_GRAPH_COUNT change the seed and count;
// graph i uses seed + i, so a failing graph is reproduced by its own seed.
// ctest: every ISA level
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "compare.h"
#include "model_builder.h"
#include "ort_reference.h"
#include "random_graph.h"
#include "runtime/session.h"

namespace ember::ortref {
namespace {

constexpr uint64_t kDefaultSeed = 20240611;
constexpr int kDefaultCount = 200;

uint64_t env_or(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

// Basic optimizations only (constant folding, redundant node removal): the
// extended level rewrites MatMul+Mul into FusedMatMul with a float alpha, which
// rounds f64 scales to f32 and so is not a faithful f64 reference.
const OrtOptions kReferenceOptions{1, OrtOptLevel::kBasic};

enum class Outcome { kPass, kSkip, kFail };

struct GraphResult {
  Outcome outcome = Outcome::kPass;
  std::string detail;  // skip reason or failure message
};

std::span<const uint8_t> as_bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// The positional form, twice into the same output vector: the second run reuses
// the first one's storage, which is the path benchmarks and servers take.
GraphResult check_positional_runs(const runtime::Session& session, const RandomGraph& g,
                                  const std::vector<Tensor>& expected) {
  std::vector<const Tensor*> ordered;
  for (const runtime::IoInfo& info : session.inputs()) {
    auto it = std::find_if(g.inputs.begin(), g.inputs.end(), [&](const auto& in) { return in.first == info.name; });
    ordered.push_back(it == g.inputs.end() ? nullptr : &it->second);
  }
  std::vector<Tensor> outputs;
  for (int run = 0; run < 2; ++run) {
    Status s = session.run(ordered, outputs);
    if (!s.is_ok()) return {Outcome::kFail, fmt::format("Ember positional run {} failed: {}", run, s.to_string())};
  }
  for (size_t i = 0; i < expected.size() && i < outputs.size(); ++i) {
    Status s = compare(outputs[i], expected[i], g.tolerances[i]);
    if (!s.is_ok())
      return {Outcome::kFail, fmt::format("output '{}' of a repeated run: {}", g.outputs[i], s.message())};
  }
  if (outputs.size() != expected.size())
    return {Outcome::kFail, fmt::format("Ember positional run returned {} outputs", outputs.size())};
  return {};
}

// The model is written to `path` because Session loads from files only.
GraphResult run_graph(const RandomGraph& g, const std::string& path) {
  auto ort = OrtSession::load_from_bytes(as_bytes(g.model), kReferenceOptions);
  if (!ort.is_ok()) return {Outcome::kFail, "ONNX Runtime rejected the graph: " + ort.status().to_string()};
  std::vector<OrtInput> ort_inputs;
  std::vector<runtime::NamedInput> ember_inputs;
  for (const auto& [name, value] : g.inputs) {
    ort_inputs.push_back({name, &value});
    ember_inputs.push_back({name, &value});
  }
  auto expected = (*ort)->run(ort_inputs);
  if (!expected.is_ok()) return {Outcome::kFail, "ONNX Runtime failed to run: " + expected.status().to_string()};

  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(g.model.data(), static_cast<std::streamsize>(g.model.size()));
  }
  auto session = runtime::Session::load(path);
  if (!session.is_ok()) {
    if (session.status().code() == StatusCode::kNotImplemented) return {Outcome::kSkip, session.status().message()};
    return {Outcome::kFail, "Ember failed to load: " + session.status().to_string()};
  }
  auto actual = (*session)->run(ember_inputs);
  if (!actual.is_ok()) {
    if (actual.status().code() == StatusCode::kNotImplemented) return {Outcome::kSkip, actual.status().message()};
    return {Outcome::kFail, "Ember failed to run: " + actual.status().to_string()};
  }
  if (actual->size() != expected->size())
    return {Outcome::kFail,
            fmt::format("Ember returned {} outputs, ONNX Runtime {}", actual->size(), expected->size())};
  for (size_t i = 0; i < expected->size(); ++i) {
    Status s = compare((*actual)[i], (*expected)[i], g.tolerances[i]);
    if (!s.is_ok()) return {Outcome::kFail, fmt::format("output '{}': {}", g.outputs[i], s.message())};
  }
  return check_positional_runs(**session, g, *expected);
}

TEST(RandomGraph, EmberMatchesOnnxRuntime) {
  const uint64_t seed = env_or("EMBER_RANDOM_GRAPH_SEED", kDefaultSeed);
  const int count = static_cast<int>(env_or("EMBER_RANDOM_GRAPH_COUNT", kDefaultCount));
  std::printf("random graphs: seed %llu, count %d\n", static_cast<unsigned long long>(seed), count);
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("ember_random_graph_{}", getpid());
  std::filesystem::create_directories(dir);

  int passed = 0, skipped = 0, failed = 0;
  std::map<std::string, int> skip_reasons;
  std::map<std::string, std::pair<int, int>> op_runs;  // op -> (graphs run, graphs skipped)
  for (int i = 0; i < count; ++i) {
    const RandomGraph g = make_random_graph(seed + static_cast<uint64_t>(i));
    const std::string path = (dir / fmt::format("graph_{}.onnx", g.seed)).string();
    GraphResult r = run_graph(g, path);
    for (const std::string& op : g.op_types) (r.outcome == Outcome::kSkip ? op_runs[op].second : op_runs[op].first)++;
    if (r.outcome == Outcome::kPass) {
      ++passed;
      std::filesystem::remove(path);
    } else if (r.outcome == Outcome::kSkip) {
      ++skipped;
      ++skip_reasons[r.detail.substr(0, 100)];
      std::filesystem::remove(path);
    } else {
      ++failed;
      // The inputs go next to the model, for `ember run MODEL --input NAME=FILE`.
      for (const auto& [name, value] : g.inputs) {
        std::ofstream f(dir / fmt::format("graph_{}.{}.pb", g.seed, name), std::ios::binary);
        f << tensor_proto_bytes(value, name);
      }
      ADD_FAILURE() << "graph " << i << " (seed " << g.seed << ", model and inputs kept in " << dir.string()
                    << "): " << r.detail << "\n" << g.description;
    }
  }
  std::printf("random graphs: %d run (%d passed, %d failed), %d skipped as not implemented in Ember\n",
              passed + failed, passed, failed, skipped);
  for (const auto& [reason, n] : skip_reasons) std::printf("  skipped %3d: %s\n", n, reason.c_str());
  for (const auto& [op, runs] : op_runs)
    std::printf("  %-10s in %3d graphs run, %3d skipped\n", op.c_str(), runs.first, runs.second);
  if (failed == 0) std::filesystem::remove_all(dir);
  EXPECT_GE(2 * (passed + failed), count) << "fewer than half of the random graphs ran in Ember";
}

// The generator itself: every graph it makes is valid for ONNX Runtime, and the
// same seed gives the same graph.
TEST(RandomGraph, GeneratorIsDeterministicAndValid) {
  for (uint64_t s = 1; s <= 50; ++s) {
    RandomGraph a = make_random_graph(s), b = make_random_graph(s);
    ASSERT_EQ(a.model, b.model) << "seed " << s;
    auto ort = OrtSession::load_from_bytes(as_bytes(a.model));
    ASSERT_TRUE(ort.is_ok()) << ort.status().to_string() << "\n" << a.description;
    std::vector<OrtInput> inputs;
    for (const auto& [name, value] : a.inputs) inputs.push_back({name, &value});
    auto out = (*ort)->run(inputs);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string() << "\n" << a.description;
  }
}

}  // namespace
}  // namespace ember::ortref
