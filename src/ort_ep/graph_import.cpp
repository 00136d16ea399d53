#include "ort_ep/graph_import.h"

#include <cstring>

namespace ember::ort_ep {
namespace {

Result<DType> element_dtype(ONNXTensorElementDataType t, std::string_view what) {
  const auto code = static_cast<int32_t>(t);
  // ONNXTensorElementDataType numbers are TensorProto.DataType numbers, as DType's are.
  if (!dtype_is_known(code) || dtype_size(static_cast<DType>(code)) == 0) {
    return not_implemented("{}: element type {} is not supported", what, code);
  }
  return static_cast<DType>(code);
}

// ReadOpAttr of a variable-size attribute: probe the size (an error status by
// design, released here), then read.
Status read_bytes(const OrtOpAttr* attr, OrtOpAttrType type, std::string& out) {
  size_t size = 0;
  if (OrtStatus* probe = api().ReadOpAttr(attr, type, nullptr, 0, &size)) api().ReleaseStatus(probe);
  out.resize(size);
  if (size == 0) return Status::ok();
  EMBER_ORT(ReadOpAttr, attr, type, out.data(), size, &size);
  out.resize(size);
  return Status::ok();
}

Status read_attribute(const OrtOpAttr* attr, ir::Attribute& a) {
  const char* name = nullptr;
  OrtOpAttrType type = ORT_OP_ATTR_UNDEFINED;
  EMBER_ORT(OpAttr_GetName, attr, &name);
  EMBER_ORT(OpAttr_GetType, attr, &type);
  a.name = name;
  size_t size = 0;
  std::string bytes;
  switch (type) {
    case ORT_OP_ATTR_INT:
      a.type = ir::AttrType::kInt;
      EMBER_ORT(ReadOpAttr, attr, type, &a.i, sizeof(a.i), &size);
      return Status::ok();
    case ORT_OP_ATTR_FLOAT:
      a.type = ir::AttrType::kFloat;
      EMBER_ORT(ReadOpAttr, attr, type, &a.f, sizeof(a.f), &size);
      return Status::ok();
    case ORT_OP_ATTR_STRING:
      a.type = ir::AttrType::kString;
      return read_bytes(attr, type, a.s);
    case ORT_OP_ATTR_INTS:
      a.type = ir::AttrType::kInts;
      EMBER_RETURN_IF_ERROR(read_bytes(attr, type, bytes));
      a.ints.resize(bytes.size() / sizeof(int64_t));
      if (!bytes.empty()) std::memcpy(a.ints.data(), bytes.data(), a.ints.size() * sizeof(int64_t));
      return Status::ok();
    case ORT_OP_ATTR_FLOATS:
      a.type = ir::AttrType::kFloats;
      EMBER_RETURN_IF_ERROR(read_bytes(attr, type, bytes));
      a.floats.resize(bytes.size() / sizeof(float));
      if (!bytes.empty()) std::memcpy(a.floats.data(), bytes.data(), a.floats.size() * sizeof(float));
      return Status::ok();
    case ORT_OP_ATTR_STRINGS: {
      a.type = ir::AttrType::kStrings;
      EMBER_RETURN_IF_ERROR(read_bytes(attr, type, bytes));
      // NUL-separated; every string (the last included) ends with a NUL.
      size_t start = 0;
      for (size_t i = 0; i < bytes.size(); ++i) {
        if (bytes[i] != '\0') continue;
        a.strings.emplace_back(bytes, start, i - start);
        start = i + 1;
      }
      return Status::ok();
    }
    case ORT_OP_ATTR_TENSOR: {
      a.type = ir::AttrType::kTensor;
      OrtValue* value = nullptr;
      EMBER_ORT(OpAttr_GetTensorAttributeAsOrtValue, attr, &value);
      Result<Tensor> t = copy_tensor(value);
      api().ReleaseValue(value);
      if (!t.is_ok()) return t.status();
      a.t = std::move(t).value();
      return Status::ok();
    }
    default:
      return not_implemented("attribute '{}' has type {}, which the plugin EP does not read", a.name, int(type));
  }
}

}  // namespace

std::string onnx_domain(const char* domain) {
  return domain && std::strcmp(domain, "ai.onnx") != 0 ? domain : "";
}

Result<std::map<std::string, int>> read_opsets(const OrtGraph* graph) {
  size_t n = 0;
  EMBER_ORT(Graph_GetNumOperatorSets, graph, &n);
  std::vector<const char*> domains(n);
  std::vector<int64_t> versions(n);
  EMBER_ORT(Graph_GetOperatorSets, graph, domains.data(), versions.data(), n);
  std::map<std::string, int> opsets;
  for (size_t i = 0; i < n; ++i) opsets[onnx_domain(domains[i])] = static_cast<int>(versions[i]);
  return opsets;
}

Result<std::vector<const OrtValueInfo*>> node_inputs(const OrtNode* node) {
  return ort_list<const OrtValueInfo*>(&OrtApi::Node_GetNumInputs, &OrtApi::Node_GetInputs, node, "Node_GetInputs");
}

Result<std::vector<const OrtValueInfo*>> node_implicit_inputs(const OrtNode* node) {
  return ort_list<const OrtValueInfo*>(&OrtApi::Node_GetNumImplicitInputs, &OrtApi::Node_GetImplicitInputs, node,
                                       "Node_GetImplicitInputs");
}

Result<std::vector<const OrtValueInfo*>> node_outputs(const OrtNode* node) {
  return ort_list<const OrtValueInfo*>(&OrtApi::Node_GetNumOutputs, &OrtApi::Node_GetOutputs, node, "Node_GetOutputs");
}

Result<std::vector<const OrtNode*>> graph_nodes(const OrtGraph* graph) {
  return ort_list<const OrtNode*>(&OrtApi::Graph_GetNumNodes, &OrtApi::Graph_GetNodes, graph, "Graph_GetNodes");
}

Result<Tensor> copy_tensor(const OrtValue* value) {
  ONNXTensorElementDataType elem{};
  const int64_t* dims = nullptr;
  size_t rank = 0;
  EMBER_ORT(GetTensorElementTypeAndShapeDataReference, value, &elem, &dims, &rank);
  EMBER_ASSIGN_OR_RETURN(DType dtype, element_dtype(elem, "constant tensor"));
  Shape shape;
  for (size_t d = 0; d < rank; ++d) shape.push_back(dims[d]);
  Tensor t = Tensor::allocate_uninitialized(dtype, shape);
  if (t.nbytes() == 0) return t;
  const void* data = nullptr;
  EMBER_ORT(GetTensorData, value, &data);
  std::memcpy(t.data(), data, t.nbytes());
  return t;
}

Result<ir::ValueId> GraphImporter::value(const OrtValueInfo* info, bool with_shape) {
  const char* name = nullptr;
  EMBER_ORT(GetValueInfoName, info, &name);
  ir::ValueId id = graph_.find_value(name);
  if (id != ir::kNoValue) return id;
  const OrtTypeInfo* type = nullptr;
  EMBER_ORT(GetValueInfoTypeInfo, info, &type);
  if (!type) return not_implemented("value '{}' has no type", name);
  ONNXType kind = ONNX_TYPE_UNKNOWN;
  EMBER_ORT(GetOnnxTypeFromTypeInfo, type, &kind);
  if (kind != ONNX_TYPE_TENSOR) return not_implemented("value '{}' is not a tensor", name);
  const OrtTensorTypeAndShapeInfo* tensor = nullptr;
  EMBER_ORT(CastTypeInfoToTensorInfo, type, &tensor);
  ONNXTensorElementDataType elem{};
  EMBER_ORT(GetTensorElementType, tensor, &elem);
  EMBER_ASSIGN_OR_RETURN(DType dtype, element_dtype(elem, fmt::format("value '{}'", name)));
  size_t rank = 0;
  EMBER_ORT(GetDimensionsCount, tensor, &rank);
  std::vector<int64_t> dims(rank);
  if (rank) EMBER_ORT(GetDimensions, tensor, dims.data(), rank);
  id = graph_.add_value(name);
  ir::Value& v = graph_.value(id);
  v.dtype = dtype;
  if (with_shape) {
    // A rank-0 shape here can also mean "rank unknown"; ORT reports that as
    // GetDimensionsCount 0 too, so only a nonzero rank is declared.
    v.has_shape = rank > 0;
    for (int64_t d : dims) v.shape.push_back(ir::Dim{d >= 0 ? d : -1, ""});
  }
  return id;
}

Result<std::vector<ir::ValueId>> GraphImporter::values(const std::vector<const OrtValueInfo*>& infos) {
  std::vector<ir::ValueId> ids;
  for (const OrtValueInfo* info : infos) {
    ir::ValueId id = ir::kNoValue;
    if (info) {
      EMBER_ASSIGN_OR_RETURN(id, value(info, false));
    }
    ids.push_back(id);
  }
  return ids;
}

Status GraphImporter::add_node(const OrtNode* node, const std::map<std::string, int>& opsets) {
  const char* name = nullptr;
  const char* op = nullptr;
  const char* domain = nullptr;
  int since = 0;
  EMBER_ORT(Node_GetName, node, &name);
  EMBER_ORT(Node_GetOperatorType, node, &op);
  EMBER_ORT(Node_GetDomain, node, &domain);
  EMBER_ORT(Node_GetSinceVersion, node, &since);
  ir::Node n;
  n.name = name ? name : "";
  n.op_type = op;
  n.domain = onnx_domain(domain);
  auto it = opsets.find(n.domain);
  n.opset = it != opsets.end() ? it->second : since;
  EMBER_ASSIGN_OR_RETURN(auto attrs, ort_list<const OrtOpAttr*>(&OrtApi::Node_GetNumAttributes,
                                                                &OrtApi::Node_GetAttributes, node, "Node_GetAttributes"));
  for (const OrtOpAttr* attr : attrs) {
    OrtOpAttrType type = ORT_OP_ATTR_UNDEFINED;
    EMBER_ORT(OpAttr_GetType, attr, &type);
    if (type == ORT_OP_ATTR_GRAPH) continue;  // read below, through Node_GetSubgraphs
    ir::Attribute a;
    EMBER_RETURN_IF_ERROR(read_attribute(attr, a).with_context(n.label() + ": "));
    n.attributes.push_back(std::move(a));
  }
  EMBER_RETURN_IF_ERROR(add_subgraphs(node, opsets, n).with_context(n.label() + ": "));
  EMBER_ASSIGN_OR_RETURN(auto inputs, node_inputs(node));
  EMBER_ASSIGN_OR_RETURN(n.inputs, values(inputs));
  n.num_explicit_inputs = n.inputs.size();
  EMBER_ASSIGN_OR_RETURN(auto implicit, node_implicit_inputs(node));
  for (const OrtValueInfo* in : implicit) {
    EMBER_ASSIGN_OR_RETURN(ir::ValueId id, value(in, false));
    EMBER_RETURN_IF_ERROR(copy_if_constant(in, id));
    n.inputs.push_back(id);
  }
  EMBER_ASSIGN_OR_RETURN(auto outputs, node_outputs(node));
  EMBER_ASSIGN_OR_RETURN(n.outputs, values(outputs));
  graph_.nodes.push_back(std::move(n));
  return Status::ok();
}

// ORT drops constant initializers from a fused node's inputs, and the partition
// copies the ones its nodes read explicitly; one only a subgraph reads (an
// implicit input) is copied here.
Status GraphImporter::copy_if_constant(const OrtValueInfo* info, ir::ValueId id) {
  ir::Value& v = graph_.value(id);
  bool is_constant = false;
  EMBER_ORT(ValueInfo_IsConstantInitializer, info, &is_constant);
  if (!is_constant || v.constant || v.is_graph_input) return Status::ok();
  const OrtValue* value = nullptr;
  EMBER_ORT(ValueInfo_GetInitializerValue, info, &value);
  if (!value) return Status::ok();
  EMBER_ASSIGN_OR_RETURN(Tensor t, copy_tensor(value));
  graph_.value(id).constant = std::move(t);
  return Status::ok();
}

Status GraphImporter::add_subgraphs(const OrtNode* node, const std::map<std::string, int>& opsets, ir::Node& n) {
  size_t count = 0;
  EMBER_ORT(Node_GetNumSubgraphs, node, &count);
  if (count == 0) return Status::ok();
  std::vector<const OrtGraph*> graphs(count);
  std::vector<const char*> names(count);
  EMBER_ORT(Node_GetSubgraphs, node, graphs.data(), count, names.data());
  for (size_t i = 0; i < count; ++i) {
    ir::Attribute a;
    a.name = names[i] ? names[i] : "";
    a.type = ir::AttrType::kGraph;
    auto g = import_subgraph(graphs[i], opsets);
    if (!g.is_ok()) return g.status().with_context(fmt::format("subgraph '{}': ", a.name));
    a.g = std::move(g).value();
    n.attributes.push_back(std::move(a));
  }
  return Status::ok();
}

Result<std::shared_ptr<ir::Graph>> import_subgraph(const OrtGraph* graph, const std::map<std::string, int>& opsets) {
  auto g = std::make_shared<ir::Graph>();
  g->opsets = opsets;
  GraphImporter importer(*g);
  EMBER_ASSIGN_OR_RETURN(auto inputs, ort_list<const OrtValueInfo*>(&OrtApi::Graph_GetNumInputs,
                                                                     &OrtApi::Graph_GetInputs, graph, "Graph_GetInputs"));
  for (const OrtValueInfo* in : inputs) {
    EMBER_ASSIGN_OR_RETURN(ir::ValueId id, importer.value(in, true));
    g->value(id).is_graph_input = true;
    g->inputs.push_back(id);
  }
  EMBER_ASSIGN_OR_RETURN(auto initializers,
                         ort_list<const OrtValueInfo*>(&OrtApi::Graph_GetNumInitializers, &OrtApi::Graph_GetInitializers,
                                                       graph, "Graph_GetInitializers"));
  for (const OrtValueInfo* info : initializers) {
    EMBER_ASSIGN_OR_RETURN(ir::ValueId id, importer.value(info, true));
    const OrtValue* value = nullptr;
    EMBER_ORT(ValueInfo_GetInitializerValue, info, &value);
    if (!value) continue;
    EMBER_ASSIGN_OR_RETURN(Tensor t, copy_tensor(value));
    g->value(id).constant = std::move(t);
  }
  EMBER_ASSIGN_OR_RETURN(auto nodes, graph_nodes(graph));
  for (const OrtNode* node : nodes) EMBER_RETURN_IF_ERROR(importer.add_node(node, opsets));
  EMBER_ASSIGN_OR_RETURN(auto outputs, ort_list<const OrtValueInfo*>(&OrtApi::Graph_GetNumOutputs,
                                                                      &OrtApi::Graph_GetOutputs, graph, "Graph_GetOutputs"));
  for (const OrtValueInfo* out : outputs) {
    EMBER_ASSIGN_OR_RETURN(ir::ValueId id, importer.value(out, true));
    g->value(id).is_graph_output = true;
    g->outputs.push_back(id);
  }
  std::vector<bool> produced(g->values.size(), false);
  for (const ir::Node& node : g->nodes) {
    for (ir::ValueId id : node.outputs) {
      if (id != ir::kNoValue) produced[static_cast<size_t>(id)] = true;
    }
  }
  auto mark_outer = [&](ir::ValueId id) {
    ir::Value& v = g->value(id);
    if (produced[static_cast<size_t>(id)] || v.is_graph_input || v.constant || v.is_outer_scope) return;
    v.is_outer_scope = true;
    g->outer_refs.push_back(id);
  };
  for (const ir::Node& node : g->nodes) {
    for (ir::ValueId id : node.inputs) {
      if (id != ir::kNoValue) mark_outer(id);
    }
  }
  for (ir::ValueId id : g->outputs) mark_outer(id);
  EMBER_RETURN_IF_ERROR(g->rebuild_links());
  return g;
}

}  // namespace ember::ort_ep
