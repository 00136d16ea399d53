#include "kernels/recurrent/recurrent_activation.h"

#include <cctype>
#include <string>

#include "kernels/elementwise/unary_ukernels.h"

namespace ember::kernels {
namespace {

struct ActivationSpec {
  std::string_view name;
  RecurrentActivationKind kind;
  bool takes_alpha, takes_beta;
  float default_alpha, default_beta;
};

// Defaults of the ONNX ops of the same name; Affine and ScaledTanh have none
// there, so the identity scaling.
constexpr ActivationSpec kActivations[] = {
    {"relu", RecurrentActivationKind::kRelu, false, false, 0.0f, 0.0f},
    {"tanh", RecurrentActivationKind::kTanh, false, false, 0.0f, 0.0f},
    {"sigmoid", RecurrentActivationKind::kSigmoid, false, false, 0.0f, 0.0f},
    {"affine", RecurrentActivationKind::kAffine, true, true, 1.0f, 0.0f},
    {"leakyrelu", RecurrentActivationKind::kLeakyRelu, true, false, 0.01f, 0.0f},
    {"thresholdedrelu", RecurrentActivationKind::kThresholdedRelu, true, false, 1.0f, 0.0f},
    {"scaledtanh", RecurrentActivationKind::kScaledTanh, true, true, 1.0f, 1.0f},
    {"hardsigmoid", RecurrentActivationKind::kHardSigmoid, true, true, 0.2f, 0.5f},
    {"elu", RecurrentActivationKind::kElu, true, false, 1.0f, 0.0f},
    {"softsign", RecurrentActivationKind::kSoftsign, false, false, 0.0f, 0.0f},
    {"softplus", RecurrentActivationKind::kSoftplus, false, false, 0.0f, 0.0f},
};

std::string lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

void RecurrentActivation::apply(const float* x, float* y, int64_t n) const {
  if (kind == RecurrentActivationKind::kSigmoid || kind == RecurrentActivationKind::kTanh) {
    const UnaryKind unary = kind == RecurrentActivationKind::kSigmoid ? UnaryKind::kSigmoid : UnaryKind::kTanh;
    unary_table().get(unary)(x, y, n, UnaryParams{});
    return;
  }
  for (int64_t i = 0; i < n; ++i) y[i] = (*this)(x[i]);
}

void RecurrentActivation::apply(const double* x, double* y, int64_t n) const {
  for (int64_t i = 0; i < n; ++i) y[i] = (*this)(x[i]);
}

Result<std::vector<RecurrentActivation>> read_recurrent_activations(const ir::Node& node,
                                                                    std::vector<std::string_view> defaults,
                                                                    size_t num_directions) {
  ir::AttrReader attrs(node);
  std::vector<std::string> names = attrs.get_strings("activations");
  const std::vector<float> alphas = attrs.get_floats("activation_alpha");
  const std::vector<float> betas = attrs.get_floats("activation_beta");
  EMBER_RETURN_IF_ERROR(attrs.status());
  const size_t per_direction = defaults.size();
  if (names.empty()) names.assign(defaults.begin(), defaults.end());
  if (names.size() == per_direction && num_directions == 2) {
    const std::vector<std::string> one_direction = names;
    names.insert(names.end(), one_direction.begin(), one_direction.end());
  }
  if (names.size() != per_direction * num_directions) {
    return invalid_argument("activations has {} functions; {} expects {} per direction for {} direction(s)",
                            names.size(), node.op_type, per_direction, num_directions);
  }
  std::vector<RecurrentActivation> out;
  size_t next_alpha = 0, next_beta = 0;
  for (const std::string& name : names) {
    const std::string key = lowercase(name);
    const ActivationSpec* spec = nullptr;
    for (const ActivationSpec& s : kActivations) {
      if (s.name == key) spec = &s;
    }
    if (!spec) return not_implemented("activation function '{}' is not supported", name);
    RecurrentActivation a{spec->kind, spec->default_alpha, spec->default_beta};
    if (spec->takes_alpha && next_alpha < alphas.size()) a.alpha = alphas[next_alpha++];
    if (spec->takes_beta && next_beta < betas.size()) a.beta = betas[next_beta++];
    out.push_back(a);
  }
  return out;
}

}  // namespace ember::kernels
