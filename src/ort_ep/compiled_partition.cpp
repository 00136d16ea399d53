#include "ort_ep/compiled_partition.h"

#include <algorithm>
#include <cstring>
#include <span>
#include <set>
#include <string>

#include "ort_ep/graph_import.h"

namespace ember::ort_ep {
namespace {

std::atomic<uint64_t> g_executed_nodes{0};

OrtStatus* ORT_API_CALL create_state(OrtNodeComputeInfo* self, OrtNodeComputeContext*, void** state) noexcept {
  *state = self;
  return nullptr;
}

OrtStatus* ORT_API_CALL compute(OrtNodeComputeInfo* self, void*, OrtKernelContext* ctx) noexcept {
  try {
    return to_ort(static_cast<CompiledPartition*>(self)->compute(ctx));
  } catch (const std::exception& e) {
    return to_ort(internal_error("{}", e.what()));
  }
}

void ORT_API_CALL release_state(OrtNodeComputeInfo*, void*) noexcept {}

// Copies into `graph` every constant initializer the group reads (ORT was told
// to drop them from the fused node's inputs and may free them after Compile).
Status import_constants(const std::vector<const OrtNode*>& nodes, ir::Graph& graph) {
  std::set<std::string> produced;
  for (const ir::Node& n : graph.nodes) {
    for (ir::ValueId id : n.outputs) {
      if (id != ir::kNoValue) produced.insert(graph.value(id).name);
    }
  }
  for (const OrtNode* node : nodes) {
    EMBER_ASSIGN_OR_RETURN(auto inputs, node_inputs(node));
    for (const OrtValueInfo* in : inputs) {
      if (!in) continue;
      const char* name = nullptr;
      EMBER_ORT(GetValueInfoName, in, &name);
      ir::Value& v = graph.value(graph.find_value(name));
      if (v.is_graph_input || v.constant || produced.count(v.name)) continue;
      const OrtValue* value = nullptr;
      EMBER_ORT(ValueInfo_GetInitializerValue, in, &value);
      if (!value) return internal_error("value '{}' is neither an input of the fused node, a constant nor produced", name);
      EMBER_ASSIGN_OR_RETURN(Tensor t, copy_tensor(value));
      v.constant = std::move(t);
    }
  }
  return Status::ok();
}

}  // namespace

uint64_t executed_node_count() { return g_executed_nodes.load(std::memory_order_relaxed); }
void reset_executed_node_count() { g_executed_nodes.store(0, std::memory_order_relaxed); }

CompiledPartition::CompiledPartition() : OrtNodeComputeInfo{} {
  ort_version_supported = ORT_API_VERSION;
  CreateState = create_state;
  Compute = ort_ep::compute;
  ReleaseState = release_state;
}

Result<std::unique_ptr<CompiledPartition>> CompiledPartition::compile(const OrtGraph* graph, const OrtNode* fused,
                                                                      int num_threads) {
  EMBER_ASSIGN_OR_RETURN(auto opsets, read_opsets(graph));
  EMBER_ASSIGN_OR_RETURN(auto nodes, graph_nodes(graph));
  auto g = std::make_shared<ir::Graph>();
  g->opsets = opsets;
  GraphImporter importer(*g);
  // Inputs and outputs in the fused node's order: the KernelContext's indices.
  EMBER_ASSIGN_OR_RETURN(auto fused_inputs, node_inputs(fused));
  for (const OrtValueInfo* in : fused_inputs) {
    if (!in) return internal_error("the fused node has an omitted input");
    EMBER_ASSIGN_OR_RETURN(ir::ValueId id, importer.value(in, true));
    g->value(id).is_graph_input = true;
    g->inputs.push_back(id);
  }
  for (const OrtNode* node : nodes) EMBER_RETURN_IF_ERROR(importer.add_node(node, opsets));
  EMBER_RETURN_IF_ERROR(import_constants(nodes, *g));
  EMBER_ASSIGN_OR_RETURN(auto fused_outputs, node_outputs(fused));
  for (const OrtValueInfo* out : fused_outputs) {
    const char* name = nullptr;
    if (!out) return internal_error("the fused node has an omitted output");
    EMBER_ORT(GetValueInfoName, out, &name);
    const ir::ValueId id = g->find_value(name);
    if (id == ir::kNoValue) return internal_error("fused output '{}' is not produced by the group", name);
    g->value(id).is_graph_output = true;
    g->outputs.push_back(id);
  }
  EMBER_RETURN_IF_ERROR(g->rebuild_links());
  std::unique_ptr<CompiledPartition> p(new CompiledPartition());
  p->node_count_ = nodes.size();
  runtime::SessionOptions options;
  options.num_threads = num_threads;
  EMBER_ASSIGN_OR_RETURN(p->session_, runtime::Session::create(std::move(g), options));
  p->first_ = p->make_runner();
  return p;
}

std::unique_ptr<CompiledPartition::Runner> CompiledPartition::make_runner() const {
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

Status CompiledPartition::compute(OrtKernelContext* ctx) {
  std::unique_lock<std::mutex> lock(first_mutex_, std::try_to_lock);
  EMBER_RETURN_IF_ERROR(lock.owns_lock() ? compute_with(*first_, ctx) : compute_with_spare(ctx));
  g_executed_nodes.fetch_add(node_count_, std::memory_order_relaxed);
  return Status::ok();
}

// Another Run of this session is inside this partition: a runner of its own.
Status CompiledPartition::compute_with_spare(OrtKernelContext* ctx) {
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
Result<bool> CompiledPartition::bind_inputs(Runner& r, OrtKernelContext* ctx) {
  bool changed = !r.prepared;
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    const OrtValue* value = nullptr;
    EMBER_ORT(KernelContext_GetInput, ctx, i, &value);
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
Status CompiledPartition::prepare(Runner& r) {
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

Status CompiledPartition::compute_with(Runner& r, OrtKernelContext* ctx) {
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
    EMBER_ORT(KernelContext_GetOutput, ctx, k, shape.data(), shape.size(), &value);
    void* data = nullptr;
    EMBER_ORT(GetTensorMutableData, value, &data);
    r.outputs[k].set_data(data);
  }
  return r.prepared->run_bound(r.input_ptrs, r.output_ptrs);
}

// Some output's shape depends on data (NonZero, ...): Ember allocates, then
// the outputs are copied into ORT's.
Status CompiledPartition::run_and_copy(Runner& r, OrtKernelContext* ctx) {
  EMBER_RETURN_IF_ERROR(r.prepared->run(r.input_ptrs, r.owned_outputs));
  for (size_t k = 0; k < r.owned_outputs.size(); ++k) {
    const Tensor& t = r.owned_outputs[k];
    OrtValue* value = nullptr;
    EMBER_ORT(KernelContext_GetOutput, ctx, k, t.shape().data(), t.shape().size(), &value);
    if (t.nbytes() == 0) continue;
    void* data = nullptr;
    EMBER_ORT(GetTensorMutableData, value, &data);
    std::memcpy(data, t.data(), t.nbytes());
  }
  return Status::ok();
}

}  // namespace ember::ort_ep
