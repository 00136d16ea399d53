#include "kernels/elementwise/unary_spec.h"

#include <string>
#include <string_view>

namespace ember::kernels {
namespace {

struct Simple {
  std::string_view op_type;
  UnaryKind kind;
};

// Ops of the default domain without attributes.
constexpr Simple kSimple[] = {
    {"Relu", UnaryKind::kRelu},       {"HardSwish", UnaryKind::kHardSwish}, {"Sigmoid", UnaryKind::kSigmoid},
    {"Tanh", UnaryKind::kTanh},       {"Erf", UnaryKind::kErf},             {"Mish", UnaryKind::kMish},
    {"Softplus", UnaryKind::kSoftplus}, {"Softsign", UnaryKind::kSoftsign}, {"Exp", UnaryKind::kExp},
    {"Log", UnaryKind::kLog},         {"Sqrt", UnaryKind::kSqrt},           {"Reciprocal", UnaryKind::kReciprocal},
    {"Neg", UnaryKind::kNeg},         {"Abs", UnaryKind::kAbs},             {"Floor", UnaryKind::kFloor},
    {"Ceil", UnaryKind::kCeil},       {"Round", UnaryKind::kRound},         {"Sin", UnaryKind::kSin},
    {"Cos", UnaryKind::kCos},
};

constexpr float kQuickGeluDefaultAlpha = 1.702f;

Result<std::optional<UnarySpec>> default_domain_spec(const ir::Node& node, ir::AttrReader& a) {
  for (const Simple& s : kSimple) {
    if (node.op_type == s.op_type) return std::optional<UnarySpec>(UnarySpec{s.kind, {}});
  }
  const std::string& op = node.op_type;
  UnaryParams p;
  UnaryKind kind;
  if (op == "LeakyRelu") {
    kind = UnaryKind::kLeakyRelu;
    p.alpha = a.get_float("alpha", 0.01f);
  } else if (op == "Elu") {
    kind = UnaryKind::kElu;
    p.alpha = a.get_float("alpha", 1.0f);
  } else if (op == "Selu") {
    kind = UnaryKind::kSelu;
    p.alpha = a.get_float("alpha", 1.67326319217681884765625f);
    p.gamma = a.get_float("gamma", 1.05070102214813232421875f);
  } else if (op == "Celu") {
    kind = UnaryKind::kCelu;
    p.alpha = a.get_float("alpha", 1.0f);
    if (p.alpha == 0.0f) return invalid_argument("Celu node '{}': alpha must not be 0", node.name);
  } else if (op == "HardSigmoid") {
    kind = UnaryKind::kHardSigmoid;
    p.alpha = a.get_float("alpha", 0.2f);
    p.beta = a.get_float("beta", 0.5f);
  } else if (op == "ThresholdedRelu") {
    kind = UnaryKind::kThresholdedRelu;
    p.alpha = a.get_float("alpha", 1.0f);
  } else if (op == "Gelu") {
    const std::string approximate = a.get_string("approximate", "none");
    if (approximate != "none" && approximate != "tanh") {
      return invalid_argument("Gelu node '{}': approximate is '{}', expected 'none' or 'tanh'", node.name, approximate);
    }
    kind = approximate == "tanh" ? UnaryKind::kGeluTanh : UnaryKind::kGelu;
  } else if (op == "Swish") {
    kind = UnaryKind::kQuickGelu;  // the same x sigmoid(alpha x)
    p.alpha = a.get_float("alpha", 1.0f);
  } else if (op == "Clip" && node.opset < 11) {
    kind = UnaryKind::kClip;
    p.alpha = a.get_float("min", -3.402823466e+38f);
    p.beta = a.get_float("max", 3.402823466e+38f);
  } else {
    return std::optional<UnarySpec>();
  }
  return std::optional<UnarySpec>(UnarySpec{kind, p});
}

}  // namespace

Result<std::optional<UnarySpec>> unary_spec(const ir::Node& node) {
  ir::AttrReader attrs(node);
  std::optional<UnarySpec> spec;
  if (node.domain.empty() || node.domain == "ai.onnx") {
    EMBER_ASSIGN_OR_RETURN(spec, default_domain_spec(node, attrs));
  } else if (node.domain == "com.microsoft") {
    // FastGelu is a single entry only without its optional bias input.
    const bool has_bias = node.num_explicit_inputs > 1 && node.inputs[1] != ir::kNoValue;
    if (node.op_type == "Gelu") {
      spec = UnarySpec{UnaryKind::kGelu, {}};
    } else if (node.op_type == "FastGelu" && !has_bias) {
      spec = UnarySpec{UnaryKind::kGeluTanh, {}};
    } else if (node.op_type == "QuickGelu") {
      spec = UnarySpec{UnaryKind::kQuickGelu, {attrs.get_float("alpha", kQuickGeluDefaultAlpha)}};
    }
  }
  EMBER_RETURN_IF_ERROR(attrs.status());
  return spec;
}

}  // namespace ember::kernels
