#include "kernels/elementwise/unary_spec.h"

#include <cmath>
#include <limits>
#include <string>
#include <string_view>

namespace ember::kernels {
namespace {

// One EMBER_UNARY_OP row of the op table.
struct OpRow {
  std::string_view domain;
  std::string_view op_type;
  UnaryKind kind;
  std::string_view attrs[3];
  float defaults[3];
};

// An attribute the node must set (ONNX Runtime refuses such a node without it).
constexpr float kRequired = std::numeric_limits<float>::quiet_NaN();

constexpr OpRow kRows[] = {
#define EMBER_UNARY_OP(domain, op_type, since, until, Kind, types, a1, d1, a2, d2, a3, d3) \
  {domain, op_type, UnaryKind::k##Kind, {a1, a2, a3}, {d1, d2, d3}},
#include "ops/unary_ops.def"
};

const OpRow* find_row(const ir::Node& node) {
  const std::string_view domain = node.domain == "ai.onnx" ? std::string_view() : std::string_view(node.domain);
  for (const OpRow& row : kRows) {
    if (row.domain == domain && row.op_type == node.op_type) return &row;
  }
  return nullptr;
}

// What the op table's columns cannot say: attributes that pick the kind or
// must be checked, and the one op whose older opsets map to a kind.
Result<std::optional<UnarySpec>> special_cases(const ir::Node& node, ir::AttrReader& a, UnarySpec spec) {
  const bool onnx_domain = node.domain.empty() || node.domain == "ai.onnx";
  if (onnx_domain && node.op_type == "Gelu") {
    const std::string approximate = a.get_string("approximate", "none");
    if (approximate != "none" && approximate != "tanh") {
      return invalid_argument("Gelu node '{}': approximate is '{}', expected 'none' or 'tanh'", node.name, approximate);
    }
    if (approximate == "tanh") spec.kind = UnaryKind::kGeluTanh;
  } else if (onnx_domain && node.op_type == "Celu" && spec.params.alpha == 0.0f) {
    return invalid_argument("Celu node '{}': alpha must not be 0", node.name);
  }
  return std::optional<UnarySpec>(spec);
}

}  // namespace

Result<std::optional<UnarySpec>> unary_spec(const ir::Node& node) {
  ir::AttrReader attrs(node);
  std::optional<UnarySpec> spec;
  const bool onnx_domain = node.domain.empty() || node.domain == "ai.onnx";
  if (const OpRow* row = find_row(node)) {
    float params[3];
    for (int i = 0; i < 3; ++i) {
      params[i] = row->attrs[i].empty() ? row->defaults[i] : attrs.get_float(row->attrs[i], row->defaults[i]);
      if (!row->attrs[i].empty() && std::isnan(row->defaults[i]) && !attrs.has(row->attrs[i])) {
        return invalid_argument("{} node '{}': attribute {} is required", node.op_type, node.name, row->attrs[i]);
      }
    }
    EMBER_ASSIGN_OR_RETURN(spec, special_cases(node, attrs, UnarySpec{row->kind, {params[0], params[1], params[2]}}));
  } else if (onnx_domain && node.op_type == "Clip" && node.opset < 11) {
    spec = UnarySpec{UnaryKind::kClip,
                     {attrs.get_float("min", -3.402823466e+38f), attrs.get_float("max", 3.402823466e+38f)}};
  } else if (node.domain == "com.microsoft" && node.op_type == "FastGelu") {
    // A single kind only without its optional bias input.
    const bool has_bias = node.num_explicit_inputs > 1 && node.inputs[1] != ir::kNoValue;
    if (!has_bias) spec = UnarySpec{UnaryKind::kGeluTanh, {}};
  }
  EMBER_RETURN_IF_ERROR(attrs.status());
  return spec;
}

}  // namespace ember::kernels
