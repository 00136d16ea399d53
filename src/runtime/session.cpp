#include "runtime/session.h"

#include <algorithm>
#include <map>
#include <new>

#include "base/buffer.h"
#include "base/mapped_file.h"
#include "ir/shape_inference.h"
#include "onnx/model_loader.h"
#include "runtime/executor.h"
#include "runtime/optimizer.h"
#include "threading/thread_pool.h"

namespace ember::runtime {
namespace {

// Larger inputs could not be addressed; the bound keeps element counts from overflowing.
constexpr int64_t kMaxElements = int64_t{1} << 48;

// Allocation failures (a huge shape computed from a model or input) become a Status.
template <typename F>
auto guard_allocation(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const AllocationError& e) {
    return Status(StatusCode::kInvalidArgument, e.what());
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kInvalidArgument, "out of memory: a tensor the model asks for is too large to allocate");
  }
}

// The files the weights of `graph` (and its subgraphs) are mapped from.
using MappedFiles = std::vector<std::shared_ptr<const MappedFile>>;
void collect_mapped_files(const ir::Graph& graph, MappedFiles& files) {
  for (const ir::Value& v : graph.values) {
    if (!v.constant || v.constant->nbytes() == 0) continue;
    auto file = MappedFile::containing(v.constant->data());
    if (file && std::find(files.begin(), files.end(), file) == files.end()) files.push_back(std::move(file));
  }
  for (const ir::Node& n : graph.nodes) {
    for (const ir::Attribute& a : n.attributes) {
      if (a.g) collect_mapped_files(*a.g, files);
      for (const auto& g : a.graphs) collect_mapped_files(*g, files);
    }
  }
}

// A run's status, or the error of a weights file that lost pages while it ran
// (it read zeros there: mapped_file.h), which makes every later run fail too.
template <typename F>
Status checked_run(const MappedFiles& files, F&& f) {
  Status st = guard_allocation(std::forward<F>(f));
  for (const auto& file : files) EMBER_RETURN_IF_ERROR(file->check());
  return st;
}

IoInfo io_info(const ir::Value& v) {
  IoInfo info;
  info.name = v.name;
  info.dtype = v.constant && v.dtype == DType::kUndefined ? v.constant->dtype() : v.dtype;
  info.has_shape = v.has_shape;
  info.shape = v.shape;
  info.has_default = v.constant.has_value();
  return info;
}

class SessionImpl final : public Session {
 public:
  // The prepared plan's inputs were checked against the model's declarations by
  // prepare(); Prepared checks each run's against the plan.
  class PreparedRunImpl : public PreparedRun {
   public:
    PreparedRunImpl(std::unique_ptr<Executor::Prepared> prepared, int num_threads, MappedFiles files)
        : prepared_(std::move(prepared)), num_threads_(num_threads), files_(std::move(files)) {}
    Status run(std::span<const Tensor* const> inputs, std::vector<Tensor>& outputs) override {
      threading::ScopedThreadLimit threads(num_threads_);
      return checked_run(files_, [&] { return prepared_->run(inputs, outputs); });
    }
    Status run_bound(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs) override {
      threading::ScopedThreadLimit threads(num_threads_);
      return checked_run(files_, [&] { return prepared_->run_bound(inputs, outputs); });
    }

   private:
    std::unique_ptr<Executor::Prepared> prepared_;
    int num_threads_;
    MappedFiles files_;  // the session's weights files
  };

  SessionImpl(std::shared_ptr<ir::Graph> graph, std::unique_ptr<Executor> executor, int num_threads,
              MappedFiles mapped_files)
      : graph_(std::move(graph)), executor_(std::move(executor)), num_threads_(num_threads),
        mapped_files_(std::move(mapped_files)) {
    for (ir::ValueId id : graph_->inputs) inputs_.push_back(io_info(graph_->value(id)));
    for (ir::ValueId id : graph_->outputs) outputs_.push_back(io_info(graph_->value(id)));
    std::map<std::string, std::pair<size_t, size_t>, std::less<>> first;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      for (size_t d = 0; d < inputs_[i].shape.size(); ++d) {
        const ir::Dim& dim = inputs_[i].shape[d];
        if (dim.known() || dim.symbol.empty()) continue;
        auto [it, added] = first.emplace(dim.symbol, std::make_pair(i, d));
        if (!added) same_symbol_.push_back({i, d, it->second.first, it->second.second});
      }
    }
  }

  const std::vector<IoInfo>& inputs() const override { return inputs_; }
  const std::vector<IoInfo>& outputs() const override { return outputs_; }
  const ir::Graph& graph() const override { return *graph_; }
  ExecutorStats stats() const override { return executor_->stats(); }

  Result<std::vector<Tensor>> run(std::span<const NamedInput> named) const override {
    std::vector<const Tensor*> ordered(inputs_.size(), nullptr);
    for (const NamedInput& in : named) {
      size_t i = 0;
      while (i < inputs_.size() && inputs_[i].name != in.name) ++i;
      if (i == inputs_.size()) {
        std::string known;
        for (const IoInfo& info : inputs_) known += (known.empty() ? "'" : ", '") + info.name + "'";
        return invalid_argument("unknown input '{}'; the model's inputs are {}", in.name, known);
      }
      if (ordered[i]) return invalid_argument("input '{}' is given twice", in.name);
      ordered[i] = in.tensor;
    }
    std::vector<Tensor> outputs;
    EMBER_RETURN_IF_ERROR(run(ordered, outputs));
    return outputs;
  }

  Status run(std::span<const Tensor* const> inputs, std::vector<Tensor>& outputs) const override {
    EMBER_RETURN_IF_ERROR(check_inputs(inputs));
    threading::ScopedThreadLimit threads(num_threads_);
    return checked_run(mapped_files_, [&] { return executor_->run(inputs, outputs); });
  }

  Status run_bound(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs) const override {
    EMBER_RETURN_IF_ERROR(check_inputs(inputs));
    if (outputs.size() != outputs_.size()) {
      return invalid_argument("the model has {} outputs, {} were given", outputs_.size(), outputs.size());
    }
    threading::ScopedThreadLimit threads(num_threads_);
    return checked_run(mapped_files_, [&] { return executor_->run_bound(inputs, outputs); });
  }

  Result<std::unique_ptr<PreparedRun>> prepare(std::span<const Tensor* const> inputs,
                                               std::span<PlannedOutput> outputs) const override {
    EMBER_RETURN_IF_ERROR(check_inputs(inputs));
    if (outputs.size() != outputs_.size()) {
      return invalid_argument("the model has {} outputs, {} were given", outputs_.size(), outputs.size());
    }
    return guard_allocation([&]() -> Result<std::unique_ptr<PreparedRun>> {
      EMBER_ASSIGN_OR_RETURN(auto prepared, executor_->prepare(inputs, outputs));
      return std::unique_ptr<PreparedRun>(new PreparedRunImpl(std::move(prepared), num_threads_, mapped_files_));
    });
  }

 private:
  Status check_inputs(std::span<const Tensor* const> inputs) const {
    if (inputs.size() != inputs_.size()) {
      return invalid_argument("the model has {} inputs, {} were given", inputs_.size(), inputs.size());
    }
    for (size_t i = 0; i < inputs.size(); ++i) EMBER_RETURN_IF_ERROR(check_input(inputs_[i], inputs[i]));
    return check_symbols(inputs);
  }

  static Status check_input(const IoInfo& info, const Tensor* t) {
    if (!t) {
      if (info.has_default) return Status::ok();
      return invalid_argument("input '{}' is missing", info.name);
    }
    int64_t elements = 1;
    for (int64_t d : t->shape()) {
      if (d < 0) return invalid_argument("input '{}' has a negative dimension: {}", info.name, shape_to_string(t->shape()));
      if (d != 0 && elements > kMaxElements / d) {
        return invalid_argument("input '{}' of shape {} is too large", info.name, shape_to_string(t->shape()));
      }
      elements *= d;
    }
    if (elements > 0 && t->data() == nullptr) return invalid_argument("input '{}' has no data", info.name);
    if (info.dtype != DType::kUndefined && t->dtype() != info.dtype) {
      return invalid_argument("input '{}' must be {}, got {}", info.name, dtype_name(info.dtype), dtype_name(t->dtype()));
    }
    if (!info.has_shape) return Status::ok();
    if (t->rank() != static_cast<int64_t>(info.shape.size())) {
      return invalid_argument("input '{}' must have rank {}, got shape {}", info.name, info.shape.size(),
                              shape_to_string(t->shape()));
    }
    for (size_t d = 0; d < info.shape.size(); ++d) {
      if (info.shape[d].known() && info.shape[d].value != t->dim(static_cast<int64_t>(d))) {
        return invalid_argument("input '{}' dimension {} must be {}, got shape {}", info.name, d, info.shape[d].value,
                                shape_to_string(t->shape()));
      }
    }
    return Status::ok();
  }

  // One symbolic dimension name is one size in a run (shape inference, planning
  // and fusion rely on it): every later use of a symbol is checked against its first.
  Status check_symbols(std::span<const Tensor* const> inputs) const {
    for (const SameSymbol& s : same_symbol_) {
      const Tensor* a = inputs[s.input];
      const Tensor* b = inputs[s.first_input];
      if (!a || !b) continue;
      const int64_t va = a->dim(static_cast<int64_t>(s.dim)), vb = b->dim(static_cast<int64_t>(s.first_dim));
      if (va != vb) {
        return invalid_argument("input '{}' dimension {} is {}, but '{}' is {} in input '{}' dimension {}",
                                inputs_[s.input].name, s.dim, va, inputs_[s.input].shape[s.dim].symbol, vb,
                                inputs_[s.first_input].name, s.first_dim);
      }
    }
    return Status::ok();
  }

  struct SameSymbol {
    size_t input, dim, first_input, first_dim;
  };

  std::shared_ptr<ir::Graph> graph_;
  std::unique_ptr<Executor> executor_;
  std::vector<SameSymbol> same_symbol_;
  std::vector<IoInfo> inputs_;
  std::vector<IoInfo> outputs_;
  int num_threads_;
  MappedFiles mapped_files_;
};

}  // namespace

Result<std::unique_ptr<Session>> Session::create(std::shared_ptr<ir::Graph> graph, SessionOptions options) {
  return guard_allocation([&]() -> Result<std::unique_ptr<Session>> {
    // Symbolic shapes (and the consistency of declared ones) before optimization
    // rewrites the graph.
    EMBER_RETURN_IF_ERROR(ir::infer_shapes(*graph));
    if (options.num_threads < 0) return invalid_argument("num_threads must be >= 0, got {}", options.num_threads);
    if (options.optimize) optimize_graph(*graph);
    // Prepacked constants are released only from a graph no one else holds: a
    // caller's other session on the same graph would find them without data.
    ir::Graph* owned = graph.use_count() == 1 ? graph.get() : nullptr;
    MappedFiles mapped_files;
    collect_mapped_files(*graph, mapped_files);
    EMBER_ASSIGN_OR_RETURN(auto executor, Executor::create(graph, graph->inputs, owned, options.progress));
    for (const auto& file : mapped_files) EMBER_RETURN_IF_ERROR(file->check());
    return std::unique_ptr<Session>(
        new SessionImpl(std::move(graph), std::move(executor), options.num_threads, std::move(mapped_files)));
  });
}

Result<std::unique_ptr<Session>> Session::load(const std::string& path, SessionOptions options) {
  EMBER_ASSIGN_OR_RETURN(onnx::LoadedModel model, onnx::load_model(path));
  return create(std::move(model.graph), options);
}

Result<std::unique_ptr<Session>> Session::load_from_bytes(std::span<const uint8_t> bytes, SessionOptions options) {
  EMBER_ASSIGN_OR_RETURN(onnx::LoadedModel model, onnx::load_model_from_bytes(bytes, "", nullptr));
  return create(std::move(model.graph), options);
}

}  // namespace ember::runtime
