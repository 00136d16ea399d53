#include "ort_ep/node_kernel.h"

#include <algorithm>
#include <climits>
#include <exception>
#include <set>
#include <utility>

#include "kernels/registry.h"
#include "ort_ep/ember_node.h"
#include "ort_ep/graph_import.h"

namespace ember::ort_ep {
namespace {

bool same_outputs(const ir::Graph& g, const std::vector<std::string>& outputs) {
  const ir::Node& n = g.nodes[0];
  if (n.outputs.size() != outputs.size()) return false;
  for (size_t k = 0; k < outputs.size(); ++k) {
    const std::string_view name = n.outputs[k] == ir::kNoValue ? "" : std::string_view(g.value(n.outputs[k]).name);
    if (name != outputs[k]) return false;
  }
  return true;
}

// One of KernelInfo's strings (the size query, then the string).
template <typename Fn>
Result<std::string> info_string(Fn fn, const char* what) {
  size_t size = 0;
  EMBER_RETURN_IF_ERROR(from_ort(fn(nullptr, &size), what));
  std::string s(size, '\0');
  EMBER_RETURN_IF_ERROR(from_ort(fn(s.data(), &size), what));
  s.resize(size > 0 ? size - 1 : 0);  // the size counts the terminating NUL
  return s;
}

class NodeKernel : public OrtKernelImpl {
 public:
  static Result<std::unique_ptr<NodeKernel>> create(const KernelSource& source, const OrtKernelInfo* info);

 private:
  NodeKernel();
  static OrtStatus* ORT_API_CALL compute(OrtKernelImpl* self, OrtKernelContext* ctx) noexcept;
  static void ORT_API_CALL release(OrtKernelImpl* self) noexcept;
  // Non-sharing mode for the constants copied at creation: ORT may then free
  // its own copy of a weight no other node reads.
  static OrtStatus* ORT_API_CALL pre_pack(OrtKernelImpl* self, const OrtValue* tensor, int input_index,
                                          OrtAllocator* allocator, OrtSharedPrePackedWeightCache* cache,
                                          bool* is_packed) noexcept;

  std::unique_ptr<EmberNode> node_;
  std::vector<size_t> copied_inputs_;  // input indices whose constant the session holds
};

NodeKernel::NodeKernel() : OrtKernelImpl{} {
  ort_version_supported = ORT_API_VERSION;
  Compute = compute;
  Release = release;
  PrePackWeight = pre_pack;
}

OrtStatus* ORT_API_CALL NodeKernel::pre_pack(OrtKernelImpl* self, const OrtValue*, int input_index, OrtAllocator*,
                                             OrtSharedPrePackedWeightCache*, bool* is_packed) noexcept {
  const auto& copied = static_cast<NodeKernel*>(self)->copied_inputs_;
  *is_packed = std::find(copied.begin(), copied.end(), static_cast<size_t>(input_index)) != copied.end();
  return nullptr;
}

OrtStatus* ORT_API_CALL NodeKernel::compute(OrtKernelImpl* self, OrtKernelContext* ctx) noexcept {
  return guarded("", [&] { return static_cast<NodeKernel*>(self)->node_->compute(ctx); });
}

void ORT_API_CALL NodeKernel::release(OrtKernelImpl* self) noexcept { delete static_cast<NodeKernel*>(self); }

Result<std::unique_ptr<NodeKernel>> NodeKernel::create(const KernelSource& source, const OrtKernelInfo* info) {
  EMBER_ASSIGN_OR_RETURN(std::string op, info_string([&](char* s, size_t* n) {
    return api().KernelInfo_GetOperatorType(info, s, n);
  }, "KernelInfo_GetOperatorType"));
  EMBER_ASSIGN_OR_RETURN(std::string ort_domain, info_string([&](char* s, size_t* n) {
    return api().KernelInfo_GetOperatorDomain(info, s, n);
  }, "KernelInfo_GetOperatorDomain"));
  const std::string domain = onnx_domain(ort_domain.c_str());
  size_t num_inputs = 0, num_outputs = 0;
  EMBER_ORT(KernelInfo_GetInputCount, info, &num_inputs);
  EMBER_ORT(KernelInfo_GetOutputCount, info, &num_outputs);
  std::vector<std::string> outputs;
  for (size_t k = 0; k < num_outputs; ++k) {
    EMBER_ASSIGN_OR_RETURN(std::string name, info_string([&](char* s, size_t* n) {
      return api().KernelInfo_GetOutputName(info, k, s, n);
    }, "KernelInfo_GetOutputName"));
    outputs.push_back(std::move(name));
  }
  std::shared_ptr<ir::Graph> g = source.claimed.find(domain, op, outputs);
  if (!g) {
    return internal_error("ORT asks for a kernel for {} node with output '{}', which GetCapability did not claim alone",
                          op, outputs.empty() ? "" : outputs[0]);
  }
  const ir::Node node = g->nodes[0];
  if (node.inputs.size() != num_inputs) {
    return internal_error("{} node: ORT reports {} inputs, {} were imported", op, num_inputs, node.inputs.size());
  }
  // Constant initializers are copied in (prepacked once by the session); the
  // rest are the kernel's inputs, each value once in the context's order.
  std::vector<size_t> context_inputs, context_outputs, copied_inputs;
  for (size_t i = 0; i < num_inputs; ++i) {
    const ir::ValueId id = node.inputs[i];
    if (id == ir::kNoValue) continue;
    ir::Value& v = g->value(id);
    if (v.is_graph_input || v.constant) continue;
    int is_constant = 0;
    const OrtValue* value = nullptr;
    EMBER_ORT(KernelInfoGetConstantInput_tensor, info, i, &is_constant, &value);
    if (is_constant && value) {
      EMBER_ASSIGN_OR_RETURN(Tensor t, copy_tensor(value));
      v.constant = std::move(t);
      copied_inputs.push_back(i);
      continue;
    }
    v.is_graph_input = true;
    g->inputs.push_back(id);
    context_inputs.push_back(i);
  }
  for (size_t k = 0; k < node.outputs.size(); ++k) {
    if (node.outputs[k] == ir::kNoValue) continue;
    g->value(node.outputs[k]).is_graph_output = true;
    g->outputs.push_back(node.outputs[k]);
    context_outputs.push_back(k);
  }
  EMBER_RETURN_IF_ERROR(g->rebuild_links());
  std::unique_ptr<NodeKernel> kernel(new NodeKernel());
  kernel->copied_inputs_ = std::move(copied_inputs);
  EMBER_ASSIGN_OR_RETURN(kernel->node_, EmberNode::create(std::move(g), std::move(context_inputs),
                                                          std::move(context_outputs), 1, source.num_threads));
  return kernel;
}

OrtStatus* ORT_API_CALL create_node_kernel(void* state, const OrtKernelInfo* info, OrtKernelImpl** out) noexcept {
  *out = nullptr;
  return guarded("creating a kernel: ", [&]() -> Status {
    EMBER_ASSIGN_OR_RETURN(auto kernel, NodeKernel::create(*static_cast<const KernelSource*>(state), info));
    *out = kernel.release();
    return Status::ok();
  });
}

// One definition: the op at every since-version. ORT matches a definition
// [start, end] to a node whose since-version equals `start`, or lies within the
// range when `end` is not INT_MAX (onnxruntime's KernelRegistry::VerifyKernelDef),
// so [1, INT_MAX - 1] covers every version; no type constraints: any types.
Status add_definition(OrtKernelRegistry* registry, const std::string& domain, const std::string& op,
                      KernelSource* source) {
  OrtKernelDefBuilder* builder = nullptr;
  EMBER_RETURN_IF_ERROR(from_ort(ep_api().CreateKernelDefBuilder(&builder), "CreateKernelDefBuilder"));
  OrtKernelDef* def = nullptr;
  Status st = from_ort(ep_api().KernelDefBuilder_SetOperatorType(builder, op.c_str()), "KernelDefBuilder_SetOperatorType");
  if (st.is_ok()) st = from_ort(ep_api().KernelDefBuilder_SetDomain(builder, domain.c_str()), "KernelDefBuilder_SetDomain");
  if (st.is_ok()) {
    st = from_ort(ep_api().KernelDefBuilder_SetSinceVersion(builder, 1, INT_MAX - 1), "KernelDefBuilder_SetSinceVersion");
  }
  if (st.is_ok()) {
    st = from_ort(ep_api().KernelDefBuilder_SetExecutionProvider(builder, kEpName), "KernelDefBuilder_SetExecutionProvider");
  }
  if (st.is_ok()) st = from_ort(ep_api().KernelDefBuilder_Build(builder, &def), "KernelDefBuilder_Build");
  if (st.is_ok()) {
    st = from_ort(ep_api().KernelRegistry_AddKernel(registry, def, create_node_kernel, source), "KernelRegistry_AddKernel");
  }
  if (def) ep_api().ReleaseKernelDef(def);
  ep_api().ReleaseKernelDefBuilder(builder);
  return st;
}

}  // namespace

void ClaimedNodes::add(std::shared_ptr<const ir::Graph> graph) {
  std::vector<std::string> outputs;
  for (ir::ValueId id : graph->nodes[0].outputs) outputs.push_back(id == ir::kNoValue ? "" : graph->value(id).name);
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& kept : graphs_) {
    if (same_outputs(*kept, outputs)) {
      kept = std::move(graph);
      return;
    }
  }
  graphs_.push_back(std::move(graph));
}

std::shared_ptr<ir::Graph> ClaimedNodes::find(std::string_view domain, std::string_view op,
                                              const std::vector<std::string>& outputs) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& kept : graphs_) {
    const ir::Node& n = kept->nodes[0];
    if (n.domain == domain && n.op_type == op && same_outputs(*kept, outputs)) return std::make_shared<ir::Graph>(*kept);
  }
  return nullptr;
}

Result<OrtKernelRegistry*> create_kernel_registry(KernelSource* source) {
  OrtKernelRegistry* registry = nullptr;
  EMBER_RETURN_IF_ERROR(from_ort(ep_api().CreateKernelRegistry(&registry), "CreateKernelRegistry"));
  std::set<std::pair<std::string, std::string>> ops;
  for (const kernels::OpEntry& e : kernels::OpRegistry::instance().entries()) ops.emplace(e.domain, e.op_type);
  for (const auto& [domain, op] : ops) {
    Status st = add_definition(registry, domain, op, source);
    if (!st.is_ok()) {
      ep_api().ReleaseKernelRegistry(registry);
      return st;
    }
  }
  return registry;
}

}  // namespace ember::ort_ep
