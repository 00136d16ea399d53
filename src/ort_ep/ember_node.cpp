#include "ort_ep/ember_node.h"

#include <algorithm>
#include <cstring>
#include <span>

namespace ember::ort_ep {
namespace {

std::atomic<uint64_t> g_executed_nodes{0};

}  // namespace

uint64_t executed_node_count() { return g_executed_nodes.load(std::memory_order_relaxed); }
void reset_executed_node_count() { g_executed_nodes.store(0, std::memory_order_relaxed); }

Result<std::unique_ptr<EmberNode>> EmberNode::create(std::shared_ptr<ir::Graph> graph, std::vector<size_t> context_inputs,
                                                     std::vector<size_t> context_outputs, uint64_t node_count,
                                                     int num_threads) {
  if (context_inputs.size() != graph->inputs.size() || context_outputs.size() != graph->outputs.size()) {
    return internal_error("{} inputs and {} outputs mapped for a graph of {} and {}", context_inputs.size(),
                          context_outputs.size(), graph->inputs.size(), graph->outputs.size());
  }
  std::unique_ptr<EmberNode> n(new EmberNode());
  n->context_inputs_ = std::move(context_inputs);
  n->context_outputs_ = std::move(context_outputs);
  n->node_count_ = node_count;
  runtime::SessionOptions options;
  options.num_threads = num_threads;
  EMBER_ASSIGN_OR_RETURN(n->session_, runtime::Session::create(std::move(graph), options));
  n->first_ = n->make_runner();
  return n;
}

std::unique_ptr<EmberNode::Runner> EmberNode::make_runner() const {
  auto r = std::make_unique<Runner>();
  const size_t num_inputs = session_->inputs().size(), num_outputs = session_->outputs().size();
  r->inputs.resize(num_inputs);
  r->input_ptrs.resize(num_inputs);
  r->planned.resize(num_outputs);
  r->outputs.resize(num_outputs);
  r->output_ptrs.resize(num_outputs);
  for (size_t k = 0; k < num_outputs; ++k) r->output_ptrs[k] = &r->outputs[k];
  return r;
}

Status EmberNode::compute(OrtKernelContext* ctx) {
  std::unique_lock<std::mutex> lock(first_mutex_, std::try_to_lock);
  EMBER_RETURN_IF_ERROR(lock.owns_lock() ? compute_with(*first_, ctx) : compute_with_spare(ctx));
  g_executed_nodes.fetch_add(node_count_, std::memory_order_relaxed);
  return Status::ok();
}

// Another Run of this session is inside this node: a runner of its own.
Status EmberNode::compute_with_spare(OrtKernelContext* ctx) {
  std::unique_ptr<Runner> r;
  {
    std::lock_guard<std::mutex> lock(spares_mutex_);
    if (!spares_.empty()) {
      r = std::move(spares_.back());
      spares_.pop_back();
    }
  }
  if (!r) r = make_runner();
  Status st = compute_with(*r, ctx);
  std::lock_guard<std::mutex> lock(spares_mutex_);
  spares_.push_back(std::move(r));
  return st;
}

// Points the input views at this run's ORT tensors: 3 API calls per input, no
// OrtTensorTypeAndShapeInfo. Returns whether any input's presence, dtype or
// shape differs from the last run's (then the run must be prepared again).
Result<bool> EmberNode::bind_inputs(Runner& r, OrtKernelContext* ctx) {
  bool changed = !r.prepared;
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    const OrtValue* value = nullptr;
    EMBER_ORT(KernelContext_GetInput, ctx, context_inputs_[i], &value);
    if (!value) {
      changed = changed || r.input_ptrs[i] != nullptr;
      r.input_ptrs[i] = nullptr;
      continue;
    }
    ONNXTensorElementDataType elem{};
    const int64_t* dims = nullptr;
    size_t rank = 0;
    EMBER_ORT(GetTensorElementTypeAndShapeDataReference, value, &elem, &dims, &rank);
    Tensor& t = r.inputs[i];
    const auto dtype = static_cast<DType>(static_cast<int>(elem));
    const std::span<const int64_t> shape(dims, rank);
    if (r.input_ptrs[i] != &t || t.dtype() != dtype || !std::ranges::equal(t.shape(), shape)) {
      changed = true;
      t.set_dtype(dtype);
      t.set_shape(Shape(shape));
    }
    const void* data = nullptr;
    if (t.numel() > 0) EMBER_ORT(GetTensorData, value, &data);
    t.set_data(const_cast<void*>(data));
    r.input_ptrs[i] = &t;
  }
  return changed;
}

// A prepared run for the bound inputs, made only when an input's shape changed:
// a decode loop or a fixed-shape model prepares once.
Status EmberNode::prepare(Runner& r) {
  r.prepared.reset();
  EMBER_ASSIGN_OR_RETURN(r.prepared, session_->prepare(r.input_ptrs, r.planned));
  r.dynamic = false;
  for (size_t k = 0; k < r.outputs.size(); ++k) {
    r.dynamic = r.dynamic || !r.planned[k].known;
    r.outputs[k].set_dtype(r.planned[k].dtype);
    r.outputs[k].set_shape(r.planned[k].shape);
  }
  return Status::ok();
}

Status EmberNode::compute_with(Runner& r, OrtKernelContext* ctx) {
  Result<bool> changed = bind_inputs(r, ctx);
  if (!changed.is_ok()) {
    r.prepared.reset();
    return changed.status();
  }
  if (*changed) EMBER_RETURN_IF_ERROR(prepare(r));
  if (r.dynamic) return run_and_copy(r, ctx);
  for (size_t k = 0; k < r.outputs.size(); ++k) {
    const Shape& shape = r.outputs[k].shape();
    OrtValue* value = nullptr;
    EMBER_ORT(KernelContext_GetOutput, ctx, context_outputs_[k], shape.data(), shape.size(), &value);
    void* data = nullptr;
    EMBER_ORT(GetTensorMutableData, value, &data);
    r.outputs[k].set_data(data);
  }
  return r.prepared->run_bound(r.input_ptrs, r.output_ptrs);
}

// Some output's shape depends on data (NonZero, ...): Ember allocates, then
// the outputs are copied into ORT's.
Status EmberNode::run_and_copy(Runner& r, OrtKernelContext* ctx) {
  EMBER_RETURN_IF_ERROR(r.prepared->run(r.input_ptrs, r.owned_outputs));
  for (size_t k = 0; k < r.owned_outputs.size(); ++k) {
    const Tensor& t = r.owned_outputs[k];
    OrtValue* value = nullptr;
    EMBER_ORT(KernelContext_GetOutput, ctx, context_outputs_[k], t.shape().data(), t.shape().size(), &value);
    if (t.nbytes() == 0) continue;
    void* data = nullptr;
    EMBER_ORT(GetTensorMutableData, value, &data);
    std::memcpy(data, t.data(), t.nbytes());
  }
  return Status::ok();
}

}  // namespace ember::ort_ep
