#pragma once
// Session: load -> optimize -> choose kernels -> plan memory -> run.
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/tensor.h"
#include "ir/graph.h"
#include "runtime/executor_stats.h"
#include "runtime/load_progress.h"

namespace ember::runtime {

struct SessionOptions {
  bool optimize = true;  // constant folding, dead-node elimination, fusions
  // Threads a run may use (the caller's thread included); 0: EMBER_NUM_THREADS,
  // else one per physical core. All sessions share one worker pool.
  int num_threads = 0;
  // Hears how far kernel creation (weight prepacking) has got; may be empty.
  LoadProgress progress;
};

struct IoInfo {
  std::string name;
  DType dtype = DType::kUndefined;
  bool has_shape = false;
  std::vector<ir::Dim> shape;
  bool has_default = false;  // an input with an initializer: may be omitted
};

// What a run computes for one output (Session::prepare).
struct PlannedOutput {
  DType dtype = DType::kUndefined;
  Shape shape;
  bool known = false;  // false: the shape is found only while running (after NonZero, ...)
};

struct NamedInput {
  std::string name;
  const Tensor* tensor;
};

// Runs of one input signature, prepared by Session::prepare. One run at a time
// (several PreparedRuns of one session may run concurrently); the session must
// outlive it.
class PreparedRun {
 public:
  virtual ~PreparedRun() = default;
  // As Session::run and run_bound, for inputs of the prepared dtypes and shapes
  // (anything else is an error).
  virtual Status run(std::span<const Tensor* const> inputs, std::vector<Tensor>& outputs) = 0;
  virtual Status run_bound(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs) = 0;
};

class Session {
 public:
  static Result<std::unique_ptr<Session>> load(const std::string& path, SessionOptions options = {});
  static Result<std::unique_ptr<Session>> create(std::shared_ptr<ir::Graph> graph, SessionOptions options = {});
  // A serialized ModelProto held in memory (no external data).
  static Result<std::unique_ptr<Session>> load_from_bytes(std::span<const uint8_t> bytes, SessionOptions options = {});
  virtual ~Session() = default;

  virtual const std::vector<IoInfo>& inputs() const = 0;
  virtual const std::vector<IoInfo>& outputs() const = 0;

  // Runs with inputs given by name (inputs with defaults may be left out).
  // Outputs come back in graph-output order. Safe to call from several threads.
  virtual Result<std::vector<Tensor>> run(std::span<const NamedInput> inputs) const = 0;
  // Positional form for hot loops: `inputs` in inputs() order (nullptr for an
  // omitted input with a default); `outputs` is resized and its storage reused
  // when a previous output of the same size is no longer shared.
  virtual Status run(std::span<const Tensor* const> inputs, std::vector<Tensor>& outputs) const = 0;
  // Positional form writing into the caller's buffers: `outputs` in outputs()
  // order; a non-null outputs[k] must have exactly the dtype and shape this run
  // computes and receives the output in place; a null one is computed and
  // dropped. A bound output may be the very buffer of an input (a present KV
  // cache bound to its past, with past_present_share_buffer): kernels then see
  // one buffer as both. Nothing is allocated when the shapes were seen recently.
  virtual Status run_bound(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs) const = 0;

  // Plans for these inputs and holds that plan and a run state for them: a
  // PreparedRun repeats runs of exactly these dtypes and shapes without a plan
  // lookup or a lock. `outputs` (outputs() order) receives the dtype and shape
  // each output will have: what PreparedRun::run_bound expects to be bound.
  // Allocates nothing when the shapes were seen recently and each shape has rank <= 6.
  virtual Result<std::unique_ptr<PreparedRun>> prepare(std::span<const Tensor* const> inputs,
                                                       std::span<PlannedOutput> outputs) const = 0;

  // The optimized graph (for `ember info`).
  virtual const ir::Graph& graph() const = 0;
  virtual ExecutorStats stats() const = 0;
};

}  // namespace ember::runtime
