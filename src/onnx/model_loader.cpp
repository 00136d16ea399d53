#include "onnx/model_loader.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "onnx/proto_model.h"
#include "onnx/tensor_proto.h"

namespace ember::onnx {
namespace {

constexpr int64_t kMinIrVersion = 3;
// IR 14 is what ONNX 1.23 writes (helper.make_model); IR 13 and 14 add only element
// types (INT2/UINT2, FLOAT6E2M3/E3M2) and TypeProto.Opaque, refused per tensor.
constexpr int64_t kMaxIrVersion = 14;
// Model-local functions may call each other; a cycle would inline forever.
constexpr int kMaxInlineDepth = 32;

// How the names and attribute references of the nodes being emitted map into the
// graph being built: identity at the top level; inside an inlined function body,
// formals bind to the caller's values and everything else gets a unique prefix.
struct Scope {
  const OpsetMap* opsets = nullptr;
  const std::map<std::string, std::string>* bindings = nullptr;
  std::string prefix;
  const std::vector<ir::Attribute>* caller_attrs = nullptr;
  int depth = 0;

  std::string map(const std::string& name) const {
    if (!bindings || name.empty()) return name;
    auto it = bindings->find(name);
    return it != bindings->end() ? it->second : prefix + name;
  }
};

// A node whose value names are not yet resolved to ids (Constant nodes and
// function calls are gone by now).
struct PendingNode {
  ir::Node node;
  std::vector<std::string> inputs;  // explicit ones, then the outer-scope reads of its subgraphs
  size_t num_explicit = 0;
  std::vector<std::string> outputs;
};

struct PendingGraph {
  std::vector<PendingNode> nodes;
  std::vector<NamedTensor> constants;
};

std::string label_of(const NodeMsg& n) {
  return fmt::format("node '{}' ({}{}{})", n.name, n.domain, n.domain.empty() ? "" : ".", n.op_type);
}

void apply_type(ir::Value& v, const ValueInfoMsg& info) {
  v.dtype = info.dtype;
  v.has_shape = info.has_shape;
  v.shape = info.shape;
}

void apply_tensor_type(ir::Value& v, const Tensor& t) {
  v.dtype = t.dtype();
  v.has_shape = true;
  v.shape.clear();
  for (int64_t d : t.shape()) v.shape.push_back(ir::Dim{d, {}});
}

void append_unique(std::vector<std::string>& list, const std::string& name) {
  if (std::find(list.begin(), list.end(), name) == list.end()) list.push_back(name);
}

class GraphBuilder {
 public:
  explicit GraphBuilder(const ModelMsg& model) : model_(model) {}
  Result<std::shared_ptr<ir::Graph>> build(const GraphMsg& g, const Scope& scope, bool is_subgraph);

 private:
  Status emit(const NodeMsg& n, const Scope& scope, PendingGraph& out);
  Status emit_constant(const NodeMsg& n, const Scope& scope, PendingGraph& out);
  Status inline_function(const NodeMsg& call, const FunctionMsg& fn, const Scope& scope, PendingGraph& out);
  // Binds ref_attr_name and builds subgraphs; leaves `out` empty for a reference
  // the caller does not supply.
  Status resolve_attr(const AttributeMsg& a, const NodeMsg& n, const Scope& scope, std::optional<ir::Attribute>& out);
  Result<std::vector<ir::Attribute>> resolve_attrs(const NodeMsg& n, const Scope& scope);
  const FunctionMsg* find_function(const NodeMsg& n) const;

  const ModelMsg& model_;
  int inline_count_ = 0;
};

const FunctionMsg* GraphBuilder::find_function(const NodeMsg& n) const {
  for (const FunctionMsg& fn : model_.functions) {
    if (fn.name == n.op_type && fn.domain == n.domain && fn.overload == n.overload) return &fn;
  }
  return nullptr;
}

Status GraphBuilder::resolve_attr(const AttributeMsg& a, const NodeMsg& n, const Scope& scope,
                                  std::optional<ir::Attribute>& out) {
  const ir::Attribute& attr = a.attr;
  if (!attr.ref_attr_name.empty()) {
    if (!scope.caller_attrs) {
      return invalid_model("{}: attribute '{}' refers to '{}' outside a function body", label_of(n), attr.name,
                           attr.ref_attr_name);
    }
    for (const ir::Attribute& c : *scope.caller_attrs) {
      if (c.name == attr.ref_attr_name) {
        out = c;
        out->name = attr.name;
        out->ref_attr_name.clear();
        return Status::ok();
      }
    }
    return Status::ok();
  }
  out = attr;
  if (attr.type == ir::AttrType::kGraph) {
    if (a.graphs.size() != 1) return invalid_model("{}: graph attribute '{}' has {} graphs", label_of(n), attr.name, a.graphs.size());
    auto g = build(a.graphs[0], scope, true);
    if (!g) return g.status().with_context(fmt::format("{}: attribute '{}': ", label_of(n), attr.name));
    out->g = std::move(g).value();
  } else if (attr.type == ir::AttrType::kGraphs) {
    for (const GraphMsg& gm : a.graphs) {
      auto g = build(gm, scope, true);
      if (!g) return g.status().with_context(fmt::format("{}: attribute '{}': ", label_of(n), attr.name));
      out->graphs.push_back(std::move(g).value());
    }
  }
  return Status::ok();
}

Result<std::vector<ir::Attribute>> GraphBuilder::resolve_attrs(const NodeMsg& n, const Scope& scope) {
  std::vector<ir::Attribute> attrs;
  for (const AttributeMsg& a : n.attributes) {
    std::optional<ir::Attribute> resolved;
    EMBER_RETURN_IF_ERROR(resolve_attr(a, n, scope, resolved));
    if (resolved) attrs.push_back(std::move(*resolved));
  }
  return attrs;
}

Status GraphBuilder::emit(const NodeMsg& n, const Scope& scope, PendingGraph& out) {
  if (const FunctionMsg* fn = find_function(n)) return inline_function(n, *fn, scope, out);
  if (n.domain.empty() && n.op_type == "Constant") return emit_constant(n, scope, out);
  PendingNode p;
  p.node.name = n.name.empty() ? n.name : scope.prefix + n.name;
  p.node.op_type = n.op_type;
  p.node.domain = n.domain;
  auto opset = scope.opsets->find(n.domain);
  if (opset == scope.opsets->end()) {
    return invalid_model("{} uses domain '{}', which has no opset_import", label_of(n), n.domain.empty() ? "ai.onnx" : n.domain);
  }
  p.node.opset = opset->second;
  for (const std::string& name : n.inputs) p.inputs.push_back(scope.map(name));
  for (const std::string& name : n.outputs) p.outputs.push_back(scope.map(name));
  p.num_explicit = p.inputs.size();
  for (const AttributeMsg& a : n.attributes) {
    if (a.unsupported == "sparse tensor") {
      return not_implemented("{}: attribute '{}' is a sparse tensor, which is not supported", label_of(n), a.attr.name);
    }
  }
  EMBER_ASSIGN_OR_RETURN(p.node.attributes, resolve_attrs(n, scope));
  std::vector<std::string> outer;
  for (const ir::Attribute& a : p.node.attributes) {
    std::vector<std::shared_ptr<ir::Graph>> graphs = a.graphs;
    if (a.g) graphs.push_back(a.g);
    for (const auto& g : graphs) {
      for (ir::ValueId id : g->outer_refs) append_unique(outer, g->value(id).name);
    }
  }
  p.inputs.insert(p.inputs.end(), outer.begin(), outer.end());
  out.nodes.push_back(std::move(p));
  return Status::ok();
}

Status GraphBuilder::emit_constant(const NodeMsg& n, const Scope& scope, PendingGraph& out) {
  if (n.outputs.size() != 1 || n.outputs[0].empty()) {
    return invalid_model("{} must have exactly one output, has {}", label_of(n), n.outputs.size());
  }
  ir::Node node;
  node.name = n.name;
  node.op_type = n.op_type;
  for (const AttributeMsg& a : n.attributes) {
    if (a.attr.name == "sparse_value") return not_implemented("{}: sparse_value constants are not supported", label_of(n));
  }
  EMBER_ASSIGN_OR_RETURN(node.attributes, resolve_attrs(n, scope));
  if (node.attributes.size() != 1) {
    return invalid_model("{} needs exactly one value attribute, has {}", label_of(n), node.attributes.size());
  }
  ir::AttrReader attrs(node);
  const std::string& kind = node.attributes[0].name;
  Tensor t;
  if (kind == "value") {
    const Tensor* v = attrs.get_tensor(kind);
    if (v) t = *v;
  } else if (kind == "value_float") {
    t = Tensor::allocate(DType::kF32, {});
    *t.data_as<float>() = attrs.get_float(kind, 0);
  } else if (kind == "value_int") {
    t = Tensor::allocate(DType::kI64, {});
    *t.data_as<int64_t>() = attrs.get_int(kind, 0);
  } else if (kind == "value_floats") {
    std::vector<float> v = attrs.get_floats(kind);
    t = Tensor::allocate(DType::kF32, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), t.data_as<float>());
  } else if (kind == "value_ints") {
    std::vector<int64_t> v = attrs.get_ints(kind);
    t = Tensor::allocate(DType::kI64, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), t.data_as<int64_t>());
  } else if (kind == "value_string") {
    t = Tensor::allocate(DType::kString, {});
    *t.data_as<std::string>() = attrs.get_string(kind, "");
  } else if (kind == "value_strings") {
    std::vector<std::string> v = attrs.get_strings(kind);
    t = Tensor::allocate(DType::kString, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), t.data_as<std::string>());
  } else {
    return invalid_model("{}: unknown attribute '{}'", label_of(n), kind);
  }
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (t.dtype() == DType::kUndefined) return invalid_model("{}: attribute '{}' holds no tensor", label_of(n), kind);
  out.constants.push_back(NamedTensor{scope.map(n.outputs[0]), std::move(t)});
  return Status::ok();
}

Status GraphBuilder::inline_function(const NodeMsg& call, const FunctionMsg& fn, const Scope& scope, PendingGraph& out) {
  if (scope.depth >= kMaxInlineDepth) {
    return invalid_model("{}: model-local functions nest deeper than {} (a recursive function?)", label_of(call), kMaxInlineDepth);
  }
  if (call.inputs.size() > fn.inputs.size() || call.outputs.size() > fn.outputs.size()) {
    return invalid_model("{} passes {} inputs and {} outputs to function '{}', which has {} and {}", label_of(call),
                         call.inputs.size(), call.outputs.size(), fn.name, fn.inputs.size(), fn.outputs.size());
  }
  std::string prefix = fmt::format("{}{}#{}/", scope.prefix, fn.name, inline_count_++);
  std::map<std::string, std::string> bindings;
  for (size_t i = 0; i < fn.inputs.size(); ++i) {
    bindings[fn.inputs[i]] = i < call.inputs.size() ? scope.map(call.inputs[i]) : std::string();
  }
  for (size_t i = 0; i < fn.outputs.size(); ++i) {
    bool bound = i < call.outputs.size() && !call.outputs[i].empty();
    bindings[fn.outputs[i]] = bound ? scope.map(call.outputs[i]) : prefix + fn.outputs[i];
  }
  // The body sees the call's attributes, then the function's defaults for the rest.
  EMBER_ASSIGN_OR_RETURN(std::vector<ir::Attribute> attrs, resolve_attrs(call, scope));
  for (const AttributeMsg& d : fn.attribute_defaults) {
    bool given = std::any_of(attrs.begin(), attrs.end(), [&](const ir::Attribute& a) { return a.name == d.attr.name; });
    if (given) continue;
    std::optional<ir::Attribute> resolved;
    EMBER_RETURN_IF_ERROR(resolve_attr(d, call, scope, resolved));
    if (resolved) attrs.push_back(std::move(*resolved));
  }
  // The function's own imports win; domains it does not import fall back to the caller's.
  OpsetMap opsets = fn.opsets;
  opsets.insert(scope.opsets->begin(), scope.opsets->end());
  Scope inner{&opsets, &bindings, prefix, &attrs, scope.depth + 1};
  for (const NodeMsg& n : fn.nodes) {
    Status s = emit(n, inner, out);
    if (!s) return s.with_context(fmt::format("in function '{}' called by {}: ", fn.name, label_of(call)));
  }
  return Status::ok();
}

Result<std::shared_ptr<ir::Graph>> GraphBuilder::build(const GraphMsg& g, const Scope& scope, bool is_subgraph) {
  PendingGraph pending;
  for (const NodeMsg& n : g.nodes) EMBER_RETURN_IF_ERROR(emit(n, scope, pending));
  auto graph = std::make_shared<ir::Graph>();
  graph->name = g.name;
  graph->opsets = *scope.opsets;
  for (const ValueInfoMsg& info : g.inputs) {
    if (info.name.empty()) return invalid_model("graph '{}' has an input without a name", g.name);
    std::string name = scope.map(info.name);
    if (graph->find_value(name) != ir::kNoValue) return invalid_model("graph '{}' declares input '{}' twice", g.name, name);
    ir::ValueId id = graph->add_value(name);
    apply_type(graph->value(id), info);
    graph->value(id).is_graph_input = true;
    graph->inputs.push_back(id);
  }
  auto add_constant = [&](const std::string& name, const Tensor& t) -> Status {
    ir::ValueId id = graph->find_value(name);
    if (id == ir::kNoValue) id = graph->add_value(name);
    ir::Value& v = graph->value(id);
    if (v.constant) return invalid_model("graph '{}' defines constant '{}' twice", g.name, name);
    v.constant = t;
    // A graph input with an initializer keeps its declared type: it can be overridden.
    if (!v.is_graph_input) apply_tensor_type(v, t);
    return Status::ok();
  };
  for (const NamedTensor& init : g.initializers) EMBER_RETURN_IF_ERROR(add_constant(scope.map(init.name), init.tensor));
  for (const NamedTensor& c : pending.constants) EMBER_RETURN_IF_ERROR(add_constant(c.name, c.tensor));
  for (const PendingNode& p : pending.nodes) {
    for (const std::string& name : p.outputs) {
      if (!name.empty() && graph->find_value(name) == ir::kNoValue) graph->add_value(name);
    }
  }
  // Everything defined here has a value now; any other name read is the enclosing
  // graph's (a subgraph) or an error topological_sort reports (the main graph).
  auto read = [&](const std::string& name) {
    if (name.empty()) return ir::kNoValue;
    ir::ValueId id = graph->find_value(name);
    if (id != ir::kNoValue) return id;
    id = graph->add_value(name);
    if (is_subgraph) {
      graph->value(id).is_outer_scope = true;
      graph->outer_refs.push_back(id);
    }
    return id;
  };
  for (PendingNode& p : pending.nodes) {
    ir::Node node = std::move(p.node);
    for (const std::string& name : p.inputs) node.inputs.push_back(read(name));
    for (const std::string& name : p.outputs) node.outputs.push_back(name.empty() ? ir::kNoValue : graph->find_value(name));
    node.num_explicit_inputs = p.num_explicit;
    // Unnamed nodes get a name so that error messages can point at them.
    if (node.name.empty()) node.name = fmt::format("{}_{}", node.op_type, graph->nodes.size());
    graph->nodes.push_back(std::move(node));
  }
  for (const ValueInfoMsg& info : g.outputs) {
    if (info.name.empty()) return invalid_model("graph '{}' has an output without a name", g.name);
    ir::ValueId id = read(scope.map(info.name));
    ir::Value& v = graph->value(id);
    v.is_graph_output = true;
    if (info.dtype != DType::kUndefined || info.has_shape) apply_type(v, info);
    graph->outputs.push_back(id);
  }
  for (const ValueInfoMsg& info : g.value_info) {
    ir::ValueId id = graph->find_value(scope.map(info.name));
    if (id != ir::kNoValue && graph->value(id).dtype == DType::kUndefined && !graph->value(id).constant) {
      apply_type(graph->value(id), info);
    }
  }
  Status sorted = graph->topological_sort();
  if (!sorted) return sorted.with_context(fmt::format("graph '{}': ", g.name));
  return graph;
}

Result<LoadedModel> read_and_build(std::span<const uint8_t> bytes, TensorContext& ctx) {
  ModelMsg model;
  EMBER_RETURN_IF_ERROR(read_model(bytes, ctx, model));
  if (model.ir_version < kMinIrVersion || model.ir_version > kMaxIrVersion) {
    return not_implemented("IR version {} is not supported (versions {} to {} are)", model.ir_version, kMinIrVersion,
                           kMaxIrVersion);
  }
  if (!model.has_graph) return invalid_model("the model has no graph");
  GraphBuilder builder(model);
  Scope top;
  top.opsets = &model.opsets;
  EMBER_ASSIGN_OR_RETURN(std::shared_ptr<ir::Graph> graph, builder.build(model.graph, top, false));
  ModelMetadata metadata{model.ir_version,         model.producer_name, model.producer_version,
                         model.domain,             model.model_version, std::move(model.doc_string),
                         std::move(model.graph.name), std::move(model.graph.doc_string), std::move(model.metadata_props)};
  return LoadedModel{std::move(graph), std::move(metadata)};
}

}  // namespace

// A data file truncated while it was read is reported as such (mapped_file.h),
// whatever the parse made of the zeros it read.
Result<LoadedModel> load_model_from_bytes(std::span<const uint8_t> bytes, const std::string& base_dir,
                                          std::shared_ptr<const void> keep_alive) {
  ExternalData external(base_dir);
  TensorContext ctx{std::move(keep_alive), &external};
  auto model = read_and_build(bytes, ctx);
  EMBER_RETURN_IF_ERROR(external.check());
  return model;
}

Result<LoadedModel> load_model(const std::string& path) {
  auto file = MappedFile::open(path);
  if (!file) return file.status();
  std::string dir = std::filesystem::path(path).parent_path().string();
  auto model = load_model_from_bytes(file.value()->bytes(), dir, file.value());
  EMBER_RETURN_IF_ERROR(file.value()->check());
  if (!model) return model.status().with_context(path + ": ");
  return model;
}

}  // namespace ember::onnx
