#include "ir/graph.h"

#include <algorithm>
#include <queue>

namespace ember::ir {

std::string dims_to_string(const std::vector<Dim>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    s += dims[i].known() ? std::to_string(dims[i].value) : (dims[i].symbol.empty() ? "?" : dims[i].symbol);
  }
  return s + "]";
}

std::string_view attr_type_name(AttrType t) {
  switch (t) {
    case AttrType::kFloat: return "float";
    case AttrType::kInt: return "int";
    case AttrType::kString: return "string";
    case AttrType::kTensor: return "tensor";
    case AttrType::kGraph: return "graph";
    case AttrType::kFloats: return "floats";
    case AttrType::kInts: return "ints";
    case AttrType::kStrings: return "strings";
    case AttrType::kTensors: return "tensors";
    case AttrType::kGraphs: return "graphs";
    case AttrType::kUndefined: break;
  }
  return "undefined";
}

const Attribute* Node::find_attr(std::string_view attr_name) const {
  for (const Attribute& a : attributes) {
    if (a.name == attr_name) return &a;
  }
  return nullptr;
}

std::string Node::label() const {
  std::string op = domain.empty() ? op_type : domain + "." + op_type;
  return "node '" + name + "' (" + op + ")";
}

ValueId Graph::find_value(std::string_view value_name) const {
  auto it = index_.find(value_name);
  return it == index_.end() ? kNoValue : it->second;
}

ValueId Graph::add_value(std::string value_name) {
  auto id = static_cast<ValueId>(values.size());
  index_.emplace(value_name, id);
  values.push_back(Value{});
  values.back().name = std::move(value_name);
  return id;
}

Status Graph::rebuild_links() {
  for (Value& v : values) {
    v.producer = -1;
    v.consumers.clear();
  }
  for (size_t n = 0; n < nodes.size(); ++n) {
    const Node& node = nodes[n];
    if (node.removed) continue;
    for (ValueId out : node.outputs) {
      if (out == kNoValue) continue;
      Value& v = value(out);
      if (v.producer >= 0) {
        return invalid_model("value '{}' is produced by both {} and {}", v.name, nodes[static_cast<size_t>(v.producer)].label(),
                             node.label());
      }
      if (v.is_graph_input || v.constant) {
        return invalid_model("{} writes '{}', which is a graph input or initializer", node.label(), v.name);
      }
      v.producer = static_cast<NodeId>(n);
    }
  }
  for (size_t n = 0; n < nodes.size(); ++n) {
    const Node& node = nodes[n];
    if (node.removed) continue;
    for (ValueId in : node.inputs) {
      if (in == kNoValue) continue;
      Value& v = value(in);
      if (v.producer < 0 && !v.is_graph_input && !v.constant && !v.is_outer_scope) {
        return invalid_model("{} reads '{}', which no node produces and is not a graph input or initializer",
                             node.label(), v.name);
      }
      if (v.consumers.empty() || v.consumers.back() != static_cast<NodeId>(n)) v.consumers.push_back(static_cast<NodeId>(n));
    }
  }
  for (ValueId out : outputs) {
    const Value& v = value(out);
    if (v.producer < 0 && !v.is_graph_input && !v.constant && !v.is_outer_scope) {
      return invalid_model("graph output '{}' is not produced by any node", v.name);
    }
  }
  return Status::ok();
}

Status Graph::topological_sort() {
  EMBER_RETURN_IF_ERROR(rebuild_links());
  size_t n = nodes.size();
  std::vector<int> pending(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (nodes[i].removed) continue;
    for (ValueId in : nodes[i].inputs) {
      if (in != kNoValue && value(in).producer >= 0) ++pending[i];
    }
  }
  // A min-heap on the original index keeps an already-sorted graph in its order.
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < n; ++i) {
    if (!nodes[i].removed && pending[i] == 0) ready.push(i);
  }
  std::vector<size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (ValueId out : nodes[i].outputs) {
      if (out == kNoValue) continue;
      for (NodeId c : value(out).consumers) {
        // A consumer reading the same value twice was counted twice.
        for (ValueId in : nodes[static_cast<size_t>(c)].inputs) {
          if (in == out && --pending[static_cast<size_t>(c)] == 0) ready.push(static_cast<size_t>(c));
        }
      }
    }
  }
  size_t live = static_cast<size_t>(std::count_if(nodes.begin(), nodes.end(), [](const Node& x) { return !x.removed; }));
  if (order.size() != live) {
    for (size_t i = 0; i < n; ++i) {
      if (!nodes[i].removed && pending[i] > 0) return invalid_model("the graph has a cycle through {}", nodes[i].label());
    }
  }
  std::vector<Node> sorted;
  sorted.reserve(order.size());
  for (size_t i : order) sorted.push_back(std::move(nodes[i]));
  nodes = std::move(sorted);
  return rebuild_links();
}

void Graph::compact() {
  std::erase_if(nodes, [](const Node& x) { return x.removed; });
  std::vector<bool> used(values.size(), false);
  auto mark = [&](ValueId id) {
    if (id != kNoValue) used[static_cast<size_t>(id)] = true;
  };
  for (const Node& node : nodes) {
    for (ValueId id : node.inputs) mark(id);
    for (ValueId id : node.outputs) mark(id);
  }
  for (ValueId id : inputs) mark(id);
  for (ValueId id : outputs) mark(id);
  for (ValueId id : outer_refs) mark(id);
  std::vector<ValueId> remap(values.size(), kNoValue);
  std::vector<Value> kept;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!used[i]) continue;
    remap[i] = static_cast<ValueId>(kept.size());
    kept.push_back(std::move(values[i]));
  }
  values = std::move(kept);
  auto fix = [&](std::vector<ValueId>& ids) {
    for (ValueId& id : ids) {
      if (id != kNoValue) id = remap[static_cast<size_t>(id)];
    }
  };
  for (Node& node : nodes) {
    fix(node.inputs);
    fix(node.outputs);
  }
  fix(inputs);
  fix(outputs);
  fix(outer_refs);
  index_.clear();
  for (size_t i = 0; i < values.size(); ++i) index_.emplace(values[i].name, static_cast<ValueId>(i));
  (void)rebuild_links();
}

const Attribute* AttrReader::typed(std::string_view attr_name, AttrType type) {
  const Attribute* a = node_.find_attr(attr_name);
  if (a && a->type != type) {
    if (status_.is_ok()) {
      status_ = invalid_model("{}: attribute '{}' must be of type {}, got {}", node_.label(), attr_name,
                              attr_type_name(type), attr_type_name(a->type));
    }
    return nullptr;
  }
  return a;
}

int64_t AttrReader::get_int(std::string_view n, int64_t def) {
  const Attribute* a = typed(n, AttrType::kInt);
  return a ? a->i : def;
}
float AttrReader::get_float(std::string_view n, float def) {
  const Attribute* a = typed(n, AttrType::kFloat);
  return a ? a->f : def;
}
std::string AttrReader::get_string(std::string_view n, std::string def) {
  const Attribute* a = typed(n, AttrType::kString);
  return a ? a->s : def;
}
std::vector<int64_t> AttrReader::get_ints(std::string_view n, std::vector<int64_t> def) {
  const Attribute* a = typed(n, AttrType::kInts);
  return a ? a->ints : def;
}
std::vector<float> AttrReader::get_floats(std::string_view n, std::vector<float> def) {
  const Attribute* a = typed(n, AttrType::kFloats);
  return a ? a->floats : def;
}
std::vector<std::string> AttrReader::get_strings(std::string_view n, std::vector<std::string> def) {
  const Attribute* a = typed(n, AttrType::kStrings);
  return a ? a->strings : def;
}
const Tensor* AttrReader::get_tensor(std::string_view n) {
  const Attribute* a = typed(n, AttrType::kTensor);
  return a ? &a->t : nullptr;
}
std::shared_ptr<Graph> AttrReader::get_graph(std::string_view n) {
  const Attribute* a = typed(n, AttrType::kGraph);
  return a ? a->g : nullptr;
}
void AttrReader::require(std::string_view n) {
  if (!has(n) && status_.is_ok()) status_ = invalid_model("{}: required attribute '{}' is missing", node_.label(), n);
}

}  // namespace ember::ir
