// The plugin EP's entry points (CreateEpFactories, ReleaseEpFactory), its
// OrtEpFactory for the CPU device and its OrtEp: GetCapability claims what the
// op registry can build, in convex groups; Compile turns each group of two or
// more nodes into a CompiledPartition, and a node claimed alone runs as a
// kernel of the EP's kernel registry (node_kernel.h).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "kernels/registry.h"
#include "ort_ep/compiled_partition.h"
#include "ort_ep/graph_import.h"
#include "ort_ep/node_kernel.h"
#include "ort_ep/ort_api.h"
#include "ort_ep/partition.h"
#include "runtime/executor.h"
#include "threading/thread_pool.h"

namespace ember::ort_ep {
namespace {

bool has_subgraphs(const ir::Graph& g) {
  const ir::Node& n = g.nodes[0];
  return n.inputs.size() > n.num_explicit_inputs ||
         std::any_of(n.attributes.begin(), n.attributes.end(), [](const ir::Attribute& a) { return a.g != nullptr; });
}

// A node with subgraphs (If, Loop, Scan) is claimed whole when an Ember
// executor builds it: its kernel compiles every subgraph, whose kernels are
// created where their dtypes are known, i.e. everywhere ORT inferred types.
bool subgraph_node_supported(std::shared_ptr<ir::Graph> g) {
  ir::Node& n = g->nodes[0];
  for (ir::ValueId id : n.inputs) {
    if (id == ir::kNoValue) continue;
    g->value(id).is_graph_input = true;
    g->inputs.push_back(id);
  }
  for (ir::ValueId id : n.outputs) {
    if (id == ir::kNoValue) continue;
    g->value(id).is_graph_output = true;
    g->outputs.push_back(id);
  }
  if (!g->rebuild_links().is_ok()) return false;
  std::vector<ir::ValueId> inputs = g->inputs;
  return runtime::Executor::create(std::move(g), std::move(inputs)).is_ok();
}

// The node as a one-node graph when Ember claims it, else null. The claim is
// the op table's: an entry covers the node's opset and takes every input's
// dtype. The kernel is then built with those dtypes to validate the attributes
// (no constants are passed, so nothing is prepacked while deciding).
std::shared_ptr<ir::Graph> import_if_supported(const OrtNode* node, const std::map<std::string, int>& opsets) {
  const char* ep = nullptr;
  // An unassigned node reports "" (not NULL, as the header suggests).
  if (from_ort(api().Node_GetEpName(node, &ep), "Node_GetEpName").is_ok() && ep && *ep && std::string(ep) != kEpName) {
    return nullptr;
  }
  auto g = std::make_shared<ir::Graph>();
  g->opsets = opsets;
  GraphImporter importer(*g);
  if (!importer.add_node(node, opsets).is_ok()) return nullptr;
  const ir::Node& n = g->nodes[0];
  const kernels::OpEntry* entry = kernels::OpRegistry::instance().find(n.domain, n.op_type, n.opset);
  if (!entry) return nullptr;
  std::vector<DType> dtypes;
  for (ir::ValueId id : n.inputs) dtypes.push_back(id == ir::kNoValue ? DType::kUndefined : g->value(id).dtype);
  if (!kernels::check_input_types(*entry, n, dtypes).is_ok()) return nullptr;
  if (has_subgraphs(*g)) return subgraph_node_supported(g) ? g : nullptr;
  // onnxruntime-genai hands such a node a window-sized cache that ONNX
  // Runtime's kernel evicts from; Ember's keeps every position.
  if (n.op_type == "GroupQueryAttention" && ir::AttrReader(n).get_int("sliding_window_cache", 0) != 0) return nullptr;
  std::vector<const Tensor*> constants(dtypes.size(), nullptr);
  kernels::KernelInit init{n, dtypes, constants, nullptr, g.get()};
  return kernels::create_kernel(init).is_ok() ? g : nullptr;
}

// Producers of each node's inputs, as indices into `nodes` (topological order).
Result<std::vector<std::vector<int>>> producers(const std::vector<const OrtNode*>& nodes) {
  std::map<size_t, int> index;  // Node_GetId -> position
  for (size_t i = 0; i < nodes.size(); ++i) {
    size_t id = 0;
    EMBER_ORT(Node_GetId, nodes[i], &id);
    index[id] = static_cast<int>(i);
  }
  std::vector<std::vector<int>> preds(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    EMBER_ASSIGN_OR_RETURN(auto inputs, node_inputs(nodes[i]));
    EMBER_ASSIGN_OR_RETURN(auto implicit, node_implicit_inputs(nodes[i]));
    inputs.insert(inputs.end(), implicit.begin(), implicit.end());
    for (const OrtValueInfo* in : inputs) {
      if (!in) continue;
      const OrtNode* producer = nullptr;
      EMBER_ORT(ValueInfo_GetValueProducer, in, &producer, nullptr);
      if (!producer) continue;
      size_t id = 0;
      EMBER_ORT(Node_GetId, producer, &id);
      auto it = index.find(id);
      if (it != index.end()) preds[i].push_back(it->second);
    }
  }
  return preds;
}

struct EmberEp : OrtEp {
  // Single claimed nodes for the registry's kernels, and the thread count of
  // every Compute (0: Ember's default, EMBER_NUM_THREADS else one per physical core).
  KernelSource kernels;
  OrtKernelRegistry* registry = nullptr;
};

Status get_capability(EmberEp& ep, const OrtGraph* graph, OrtEpGraphSupportInfo* info) {
  EMBER_ASSIGN_OR_RETURN(auto opsets, read_opsets(graph));
  // A subgraph of a node Ember claims whole runs inside that node's kernel;
  // ORT asks about it separately, and a claim here would fuse its nodes into an
  // op only ORT's graph knows.
  const OrtNode* parent = nullptr;
  EMBER_ORT(Graph_GetParentNode, graph, &parent);
  if (parent && import_if_supported(parent, opsets)) return Status::ok();
  EMBER_ASSIGN_OR_RETURN(auto nodes, graph_nodes(graph));
  std::vector<std::shared_ptr<ir::Graph>> imported(nodes.size());
  std::vector<bool> supported(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    imported[i] = import_if_supported(nodes[i], opsets);
    supported[i] = imported[i] != nullptr;
  }
  EMBER_ASSIGN_OR_RETURN(auto preds, producers(nodes));
  OrtNodeFusionOptions fusion{};
  fusion.ort_version_supported = ORT_API_VERSION;
  fusion.drop_constant_initializers = true;
  for (const std::vector<int>& group : convex_groups(preds, supported)) {
    const auto first = static_cast<size_t>(group[0]);
    if (group.size() == 1 && !has_subgraphs(*imported[first])) {
      ep.kernels.claimed.add(std::move(imported[first]));
      EMBER_RETURN_IF_ERROR(from_ort(ep_api().EpGraphSupportInfo_AddSingleNode(info, nodes[first]),
                                     "EpGraphSupportInfo_AddSingleNode"));
      continue;
    }
    std::vector<const OrtNode*> members;
    for (int i : group) members.push_back(nodes[static_cast<size_t>(i)]);
    EMBER_RETURN_IF_ERROR(from_ort(
        ep_api().EpGraphSupportInfo_AddNodesToFuse(info, members.data(), members.size(), &fusion),
        "EpGraphSupportInfo_AddNodesToFuse"));
  }
  return Status::ok();
}

const char* ORT_API_CALL ep_name(const OrtEp*) noexcept { return kEpName; }

OrtStatus* ORT_API_CALL ep_get_capability(OrtEp* self, const OrtGraph* graph, OrtEpGraphSupportInfo* info) noexcept {
  return guarded("GetCapability: ", [&] { return get_capability(*static_cast<EmberEp*>(self), graph, info); });
}

OrtStatus* ORT_API_CALL ep_compile(OrtEp* self, const OrtGraph** graphs, const OrtNode** fused, size_t count,
                                   OrtNodeComputeInfo** infos, OrtNode** /*ep_context_nodes*/) noexcept {
  for (size_t i = 0; i < count; ++i) infos[i] = nullptr;
  return guarded("Compile: ", [&]() -> Status {
    for (size_t i = 0; i < count; ++i) {
      auto p = CompiledPartition::compile(graphs[i], fused[i], static_cast<EmberEp*>(self)->kernels.num_threads);
      if (!p.is_ok()) {
        for (size_t j = 0; j < i; ++j) delete static_cast<CompiledPartition*>(infos[j]);
        for (size_t j = 0; j < i; ++j) infos[j] = nullptr;
        return p.status();
      }
      infos[i] = std::move(p).value().release();
    }
    return Status::ok();
  });
}

void ORT_API_CALL ep_release_infos(OrtEp*, OrtNodeComputeInfo** infos, size_t count) noexcept {
  for (size_t i = 0; i < count; ++i) delete static_cast<CompiledPartition*>(infos[i]);
}

// The session config entry `key`, or "" when absent.
std::string config_entry(const OrtSessionOptions* options, const char* key) {
  int has = 0;
  if (!from_ort(api().HasSessionConfigEntry(options, key, &has), "HasSessionConfigEntry").is_ok() || !has) return "";
  size_t size = 0;
  if (!from_ort(api().GetSessionConfigEntry(options, key, nullptr, &size), "GetSessionConfigEntry").is_ok()) return "";
  std::string value(size, '\0');
  if (!from_ort(api().GetSessionConfigEntry(options, key, value.data(), &size), "GetSessionConfigEntry").is_ok()) {
    return "";
  }
  value.resize(size > 0 ? size - 1 : 0);  // the size counts the terminating NUL
  return value;
}

struct EmberFactory : OrtEpFactory {};

const char* ORT_API_CALL factory_name(const OrtEpFactory*) noexcept { return kEpName; }
const char* ORT_API_CALL factory_vendor(const OrtEpFactory*) noexcept { return "Ember"; }
uint32_t ORT_API_CALL factory_vendor_id(const OrtEpFactory*) noexcept { return 0; }
const char* ORT_API_CALL factory_version(const OrtEpFactory*) noexcept { return "0.1.0"; }

OrtStatus* ORT_API_CALL factory_devices(OrtEpFactory* self, const OrtHardwareDevice* const* devices, size_t num_devices,
                                        OrtEpDevice** ep_devices, size_t max_ep_devices,
                                        size_t* num_ep_devices) noexcept {
  size_t n = 0;
  for (size_t i = 0; i < num_devices && n < max_ep_devices; ++i) {
    if (api().HardwareDevice_Type(devices[i]) != OrtHardwareDeviceType_CPU) continue;
    OrtEpDevice* device = nullptr;
    if (OrtStatus* s = ep_api().CreateEpDevice(self, devices[i], nullptr, nullptr, &device)) return s;
    ep_devices[n++] = device;
  }
  *num_ep_devices = n;
  return nullptr;
}

OrtStatus* ORT_API_CALL ep_kernel_registry(OrtEp* self, const OrtKernelRegistry** registry) noexcept {
  *registry = static_cast<EmberEp*>(self)->registry;
  return nullptr;
}

// A partition or registry kernel serves overlapping Run()s of one session: one
// takes its first runner, the others spare ones (EmberNode::compute).
OrtStatus* ORT_API_CALL ep_concurrent_runs(OrtEp*, bool* supported) noexcept {
  *supported = true;
  return nullptr;
}

OrtStatus* ORT_API_CALL factory_create_ep(OrtEpFactory*, const OrtHardwareDevice* const*,
                                          const OrtKeyValuePairs* const*, size_t num_devices,
                                          const OrtSessionOptions* options, const OrtLogger*, OrtEp** out) noexcept {
  return guarded("CreateEp: ", [&]() -> Status {
    if (num_devices != 1) return invalid_argument("expected one CPU device, got {}", num_devices);
    auto ep = std::make_unique<EmberEp>();
    ep->ort_version_supported = ORT_API_VERSION;
    ep->GetName = ep_name;
    ep->GetCapability = ep_get_capability;
    ep->Compile = ep_compile;
    ep->ReleaseNodeComputeInfos = ep_release_infos;
    ep->IsConcurrentRunSupported = ep_concurrent_runs;
    ep->GetKernelRegistry = ep_kernel_registry;
    // Ember's threads per Compute: the EP option, else the session's intra-op
    // count when it is a config entry (AddSessionConfigEntry; ORT 1.30 does not
    // mirror SetIntraOpNumThreads there), else Ember's default.
    for (const char* key : {"ep.emberexecutionprovider.num_threads", "session.intra_op_num_threads"}) {
      const std::string threads = config_entry(options, key);
      if (threads.empty()) continue;
      char* end = nullptr;
      const long v = std::strtol(threads.c_str(), &end, 10);
      if (*end != '\0' || v < 0 || v > 256) return invalid_argument("{} must be 0..256, got '{}'", key, threads);
      ep->kernels.num_threads = static_cast<int>(v);
      break;
    }
    EMBER_ASSIGN_OR_RETURN(ep->registry, create_kernel_registry(&ep->kernels));
    *out = ep.release();
    return Status::ok();
  });
}

void ORT_API_CALL factory_release_ep(OrtEpFactory*, OrtEp* ep) noexcept {
  auto* ember = static_cast<EmberEp*>(ep);
  if (ember->registry) ep_api().ReleaseKernelRegistry(ember->registry);
  delete ember;
}

// ORT 1.30 calls this even though the header calls it optional: a CPU EP has
// no data transfer (ORT's CPU tensors are Ember's).
OrtStatus* ORT_API_CALL factory_data_transfer(OrtEpFactory*, OrtDataTransferImpl** out) noexcept {
  *out = nullptr;
  return nullptr;
}

bool ORT_API_CALL factory_stream_aware(const OrtEpFactory*) noexcept { return false; }

OrtStatus* ORT_API_CALL factory_num_domains(OrtEpFactory*, size_t* n) noexcept {
  *n = 0;
  return nullptr;
}

OrtStatus* ORT_API_CALL factory_domains(OrtEpFactory*, OrtCustomOpDomain**, size_t) noexcept { return nullptr; }

}  // namespace
}  // namespace ember::ort_ep

using namespace ember::ort_ep;  // NOLINT: the exported C entry points below

extern "C" __attribute__((visibility("default"))) OrtStatus* CreateEpFactories(
    const char* /*registered_name*/, const OrtApiBase* base, const OrtLogger* /*default_logger*/,
    OrtEpFactory** factories, size_t max_factories, size_t* num_factories) {
  *num_factories = 0;
  const OrtApi* ort = base->GetApi(ORT_API_VERSION);
  if (!ort) return nullptr;  // an ONNX Runtime older than these headers: no factory, and no way to say why
  set_api(ort, ort->GetEpApi());
  if (max_factories < 1) return ort->CreateStatus(ORT_INVALID_ARGUMENT, "Ember: room for no factory");
  auto* f = new (std::nothrow) EmberFactory{};
  if (!f) return ort->CreateStatus(ORT_FAIL, "Ember: out of memory");
  f->ort_version_supported = ORT_API_VERSION;
  f->GetName = factory_name;
  f->GetVendor = factory_vendor;
  f->GetVendorId = factory_vendor_id;
  f->GetVersion = factory_version;
  f->GetSupportedDevices = factory_devices;
  f->CreateEp = factory_create_ep;
  f->ReleaseEp = factory_release_ep;
  f->CreateDataTransfer = factory_data_transfer;
  f->IsStreamAware = factory_stream_aware;
  f->GetNumCustomOpDomains = factory_num_domains;
  f->GetCustomOpDomains = factory_domains;
  reset_executed_node_count();
  factories[0] = f;
  *num_factories = 1;
  return nullptr;
}

extern "C" __attribute__((visibility("default"))) OrtStatus* ReleaseEpFactory(OrtEpFactory* factory) {
  delete static_cast<EmberFactory*>(factory);
  // The library may be unmapped next: no Ember worker may still be running.
  ember::threading::shutdown_pool();
  return nullptr;
}

extern "C" __attribute__((visibility("default"))) uint64_t EmberEp_ExecutedNodeCount(void) {
  return executed_node_count();
}
