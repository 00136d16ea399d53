#pragma once
// ONNX Runtime as the reference: loaded with dlopen at first use (from the
// EMBER_ORT_LIBRARY environment variable, else the path baked in at build time),
// driven through its C API, with inputs and outputs as ember::Tensor.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "base/tensor.h"

namespace ember::ortref {

// ONNX Runtime's GraphOptimizationLevel values.
enum class OrtOptLevel : int { kDisableAll = 0, kBasic = 1, kExtended = 2, kAll = 99 };

struct OrtOptions {
  // One intra-op thread by default: the reference answer does not depend on the
  // machine, and benchmarks compare single-threaded runs unless asked otherwise.
  int intra_op_threads = 1;
  OrtOptLevel optimization = OrtOptLevel::kAll;
  // A plugin EP (registered with register_ep_library) to append by its EP name,
  // through SessionOptionsAppendExecutionProvider_V2 with its device; "": none.
  std::string plugin_ep;
  // session.disable_cpu_ep_fallback: creating the session fails unless the
  // plugin EP claims every node.
  bool disable_cpu_ep_fallback = false;
  // Options for the plugin EP (keys without the ep.<name>. prefix: "num_threads").
  std::vector<std::pair<std::string, std::string>> plugin_ep_options;
  // Further session config entries (AddSessionConfigEntry), e.g.
  // {"session.intra_op.allow_spinning", "0"}.
  std::vector<std::pair<std::string, std::string>> config_entries;
  // session.record_ep_graph_assignment_info, which OrtSession::ep_assignment needs.
  bool record_ep_assignment = false;
};

// The nodes ONNX Runtime assigned to one execution provider, as recorded after
// its basic optimizations (for a compiling EP: one entry per fused partition).
struct EpAssignedSubgraph {
  std::string ep_name;
  std::vector<std::string> node_names;
  std::vector<std::string> op_types;  // "domain:OpType" ("" domain for ONNX), per node
};

// Plugin execution provider libraries in the harness's environment
// (RegisterExecutionProviderLibrary / UnregisterExecutionProviderLibrary).
Status register_ep_library(const std::string& registration_name, const std::string& path);
Status unregister_ep_library(const std::string& registration_name);
// The EP name of every device the environment offers (CPUExecutionProvider, ...).
Result<std::vector<std::string>> ep_device_names();

struct OrtInput {
  std::string name;
  const Tensor* tensor;
};

// "1.30.0": the loaded library's version, or an error when it cannot be loaded.
Result<std::string> ort_version();

class OrtSession {
 public:
  static Result<std::unique_ptr<OrtSession>> load(const std::string& path, OrtOptions options = {});
  static Result<std::unique_ptr<OrtSession>> load_from_bytes(std::span<const uint8_t> bytes, OrtOptions options = {});
  ~OrtSession();
  OrtSession(const OrtSession&) = delete;
  OrtSession& operator=(const OrtSession&) = delete;

  const std::vector<std::string>& input_names() const { return input_names_; }
  const std::vector<std::string>& output_names() const { return output_names_; }
  // Session_GetEpGraphAssignmentInfo: fails unless the session was created with
  // record_ep_assignment.
  Result<std::vector<EpAssignedSubgraph>> ep_assignment() const;

  // Runs on `inputs` (copied into ONNX Runtime's memory) and returns every graph
  // output, in graph order, as an owning Tensor.
  Result<std::vector<Tensor>> run(std::span<const OrtInput> inputs) const;

  // Inputs wrapped once without copying, for timed loops. The tensors must stay
  // alive and unmoved while the PreparedInputs is used.
  class PreparedInputs {
   public:
    PreparedInputs() = default;
    PreparedInputs(PreparedInputs&& other) noexcept;
    PreparedInputs& operator=(PreparedInputs&& other) noexcept;
    ~PreparedInputs();

   private:
    friend class OrtSession;
    void release();
    std::vector<std::string> names_;
    std::vector<const char*> name_ptrs_;
    std::vector<void*> values_;   // OrtValue*
    std::vector<void*> outputs_;  // per graph output: a caller-bound OrtValue* or nullptr
  };
  // `outputs` names graph outputs that ONNX Runtime writes into the given
  // tensors' memory; an output bound to an input's tensor shares its buffer (as
  // onnxruntime-genai binds present KV to past KV: past_present_share_buffer).
  Result<PreparedInputs> prepare(std::span<const OrtInput> inputs, std::span<const OrtInput> outputs = {}) const;
  // One run whose unbound outputs ONNX Runtime allocates and are released
  // uncopied, as in ONNX Runtime's own perf tool.
  Status run_prepared(const PreparedInputs& inputs) const;

 private:
  OrtSession() = default;
  static Result<std::unique_ptr<OrtSession>> create(const std::string& path, std::span<const uint8_t> bytes,
                                                    const OrtOptions& options);
  Status read_names();

  void* session_ = nullptr;  // OrtSession*, an opaque type of the C API
  std::vector<std::string> input_names_;
  std::vector<std::string> output_names_;
  std::vector<const char*> output_name_ptrs_;
};

}  // namespace ember::ortref
