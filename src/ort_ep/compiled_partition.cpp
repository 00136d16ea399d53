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
  const size_t num_inputs = p->session_->inputs().size(), num_outputs = p->session_->outputs().size();
  p->inputs_.resize(num_inputs);
  p->input_ptrs_.resize(num_inputs);
  p->planned_.resize(num_outputs);
  p->outputs_.resize(num_outputs);
  p->output_ptrs_.resize(num_outputs);
  for (size_t k = 0; k < num_outputs; ++k) p->output_ptrs_[k] = &p->outputs_[k];
  return p;
}

Status CompiledPartition::compute(OrtKernelContext* ctx) {
  std::lock_guard<std::mutex> lock(mutex_);
  EMBER_RETURN_IF_ERROR(compute_locked(ctx));
  g_executed_nodes.fetch_add(node_count_, std::memory_order_relaxed);
  return Status::ok();
}

// Points the input views at this run's ORT tensors: 3 API calls per input, no
// OrtTensorTypeAndShapeInfo. Returns whether any input's presence, dtype or
// shape differs from the last run's (then the outputs must be planned again).
Result<bool> CompiledPartition::bind_inputs(OrtKernelContext* ctx) {
  bool changed = !planned_valid_;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const OrtValue* value = nullptr;
    EMBER_ORT(KernelContext_GetInput, ctx, i, &value);
    if (!value) {
      changed = changed || input_ptrs_[i] != nullptr;
      input_ptrs_[i] = nullptr;
      continue;
    }
    ONNXTensorElementDataType elem{};
    const int64_t* dims = nullptr;
    size_t rank = 0;
    EMBER_ORT(GetTensorElementTypeAndShapeDataReference, value, &elem, &dims, &rank);
    Tensor& t = inputs_[i];
    const auto dtype = static_cast<DType>(static_cast<int>(elem));
    const std::span<const int64_t> shape(dims, rank);
    if (input_ptrs_[i] != &t || t.dtype() != dtype || !std::ranges::equal(t.shape(), shape)) {
      changed = true;
      t.set_dtype(dtype);
      t.set_shape(Shape(shape));
    }
    const void* data = nullptr;
    if (t.numel() > 0) EMBER_ORT(GetTensorData, value, &data);
    t.set_data(const_cast<void*>(data));
    input_ptrs_[i] = &t;
  }
  return changed;
}

// Output dtypes and shapes for the bound inputs, planned only when an input's
// shape changed: a decode loop or a fixed-shape model plans once.
Status CompiledPartition::plan_outputs() {
  planned_valid_ = false;
  EMBER_RETURN_IF_ERROR(session_->output_shapes(input_ptrs_, planned_));
  dynamic_ = false;
  for (size_t k = 0; k < outputs_.size(); ++k) {
    dynamic_ = dynamic_ || !planned_[k].known;
    outputs_[k].set_dtype(planned_[k].dtype);
    outputs_[k].set_shape(planned_[k].shape);
  }
  planned_valid_ = true;
  return Status::ok();
}

Status CompiledPartition::compute_locked(OrtKernelContext* ctx) {
  Result<bool> changed = bind_inputs(ctx);
  if (!changed.is_ok()) {
    planned_valid_ = false;
    return changed.status();
  }
  if (*changed) EMBER_RETURN_IF_ERROR(plan_outputs());
  if (dynamic_) return run_and_copy(ctx);
  for (size_t k = 0; k < outputs_.size(); ++k) {
    const Shape& shape = outputs_[k].shape();
    OrtValue* value = nullptr;
    EMBER_ORT(KernelContext_GetOutput, ctx, k, shape.data(), shape.size(), &value);
    void* data = nullptr;
    EMBER_ORT(GetTensorMutableData, value, &data);
    outputs_[k].set_data(data);
  }
  return session_->run_bound(input_ptrs_, output_ptrs_);
}

// Some output's shape depends on data (NonZero, ...): Ember allocates, then
// the outputs are copied into ORT's.
Status CompiledPartition::run_and_copy(OrtKernelContext* ctx) {
  EMBER_RETURN_IF_ERROR(session_->run(input_ptrs_, owned_outputs_));
  for (size_t k = 0; k < owned_outputs_.size(); ++k) {
    const Tensor& t = owned_outputs_[k];
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
