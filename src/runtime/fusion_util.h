#pragma once
// Pattern-matching helpers shared by the fusion passes. Every check reads the
// graph's current links (`g` compacted or freshly linked).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace ember::runtime {

// A default-domain `op` with `inputs` inputs and one output, not yet removed.
inline bool is_op(const ir::Node& n, std::string_view op, size_t inputs) {
  return !n.removed && n.domain.empty() && n.op_type == op && n.inputs.size() == inputs && n.outputs.size() == 1;
}

// The only node reading `id`, when `id` is not a graph output.
inline std::optional<ir::NodeId> sole_reader(const ir::Graph& g, ir::ValueId id) {
  const ir::Value& v = g.value(id);
  if (v.is_graph_output || v.consumers.size() != 1) return std::nullopt;
  return v.consumers[0];
}

// A constant with data, of `dtype`, that no caller can override.
inline bool is_constant(const ir::Value& v, DType dtype) {
  return v.constant.has_value() && !v.is_graph_input && v.constant->dtype() == dtype && v.constant->data() != nullptr;
}

// The value of a one-element f32 constant.
inline std::optional<double> constant_scalar(const ir::Graph& g, ir::ValueId id) {
  if (id == ir::kNoValue) return std::nullopt;
  const ir::Value& v = g.value(id);
  if (!is_constant(v, DType::kF32) || v.constant->numel() != 1) return std::nullopt;
  return static_cast<double>(v.constant->data_as<float>()[0]);
}

// Fused nodes are named after their first member with this suffix; `ember
// info` lists them.
inline std::string fused_name(const ir::Node& first) { return (first.name.empty() ? "node" : first.name) + "/fused"; }

inline ir::Attribute int_attribute(std::string name, int64_t v) {
  ir::Attribute a;
  a.name = std::move(name);
  a.type = ir::AttrType::kInt;
  a.i = v;
  return a;
}

inline ir::Attribute ints_attribute(std::string name, std::vector<int64_t> v) {
  ir::Attribute a;
  a.name = std::move(name);
  a.type = ir::AttrType::kInts;
  a.ints = std::move(v);
  return a;
}

inline ir::Attribute float_attribute(std::string name, float v) {
  ir::Attribute a;
  a.name = std::move(name);
  a.type = ir::AttrType::kFloat;
  a.f = v;
  return a;
}

}  // namespace ember::runtime
