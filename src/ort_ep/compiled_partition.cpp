#include "ort_ep/compiled_partition.h"

#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "ort_ep/graph_import.h"

namespace ember::ort_ep {
namespace {

OrtStatus* ORT_API_CALL create_state(OrtNodeComputeInfo* self, OrtNodeComputeContext*, void** state) noexcept {
  *state = self;
  return nullptr;
}

OrtStatus* ORT_API_CALL compute(OrtNodeComputeInfo* self, void*, OrtKernelContext* ctx) noexcept {
  return guarded("", [&] { return static_cast<CompiledPartition*>(self)->compute(ctx); });
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

std::vector<size_t> first_n(size_t n) {
  std::vector<size_t> indices(n);
  std::iota(indices.begin(), indices.end(), size_t{0});
  return indices;
}

}  // namespace

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
  const size_t num_inputs = g->inputs.size(), num_outputs = g->outputs.size();
  std::unique_ptr<CompiledPartition> p(new CompiledPartition());
  EMBER_ASSIGN_OR_RETURN(p->node_, EmberNode::create(std::move(g), first_n(num_inputs), first_n(num_outputs),
                                                     nodes.size(), num_threads));
  return p;
}

}  // namespace ember::ort_ep
