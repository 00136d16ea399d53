// ONNX model bytes -> load (with external data from a folder) -> shape
// inference and kernel creation (Session::create). Every input must end in a
// model or an error, never a crash, a leak, a hang or an unbounded allocation.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/buffer.h"
#include "onnx/model_loader.h"
#include "runtime/session.h"

namespace {

// The folder external data is read from: "weights.bin", 64 KiB of a byte
// pattern (the seed corpus's external-data models point into it).
std::string g_base_dir;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Tensors a fuzzed model asks for past 1 GiB are refused by Ember's limit,
  // with an error, below libFuzzer's 2 GiB malloc limit.
  ember::set_memory_limit(size_t{1} << 30);
  char dir_template[] = "/tmp/ember_fuzz_model_XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (!dir) std::abort();
  g_base_dir = dir;
  std::atexit([] { std::filesystem::remove_all(g_base_dir); });
  std::vector<char> weights(64 << 10);
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<char>(i * 31 + 7);
  std::ofstream(g_base_dir + "/weights.bin", std::ios::binary).write(weights.data(), weights.size());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto model = ember::onnx::load_model_from_bytes(std::span<const uint8_t>(data, size), g_base_dir, nullptr);
  if (!model.is_ok()) return 0;
  ember::runtime::SessionOptions options;
  options.num_threads = 1;
  auto session = ember::runtime::Session::create(model->graph, options);
  return 0;
}
