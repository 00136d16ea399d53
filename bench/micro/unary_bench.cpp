// Every UnaryKind of the unary op table (src/ops/unary_ops.def), out of place.
#include <cctype>
#include <cmath>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/elementwise/unary_reference.h"
#include "kernels/elementwise/unary_ukernels.h"
#include "micro_util.h"

namespace ember::bench {
namespace {

using kernels::UnaryKind;
using kernels::UnaryParams;

// f32 in, f32 out.
constexpr int64_t kUnaryBytes = 8;

struct UnaryCase {
  UnaryKind kind;
  std::string name;    // the kind in snake_case
  UnaryParams params;  // the op table's test parameters
  float lo, hi;        // input range: [-4, 4), or [0.01, 4) for a kind undefined below 0
};

std::string snake_case(std::string_view camel) {
  std::string s;
  for (char c : camel) {
    if (std::isupper(static_cast<unsigned char>(c))) {
      if (!s.empty()) s += '_';
      s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      s += c;
    }
  }
  return s;
}

// One case per kind of the op table (src/ops/unary_ops.def).
std::vector<UnaryCase> unary_cases() {
  std::vector<UnaryCase> cases;
#define EMBER_UNARY_KIND(Kind, cost, alpha, beta, gamma, ...)                                            \
  {                                                                                                       \
    const UnaryParams p{alpha, beta, gamma};                                                              \
    const bool positive = std::isnan(kernels::UnaryReference<UnaryKind::k##Kind>::apply(-1.0f, p));       \
    cases.push_back({UnaryKind::k##Kind, snake_case(#Kind), p, positive ? 0.01f : -4.0f, 4.0f});          \
  }
#include "ops/unary_ops.def"
  return cases;
}

MicroSetup unary_setup(Isa isa, const UnaryCase& c, int64_t n) {
  return [isa, c, n] {
    const kernels::UnaryF32Fn fn = kernels::unary_table(isa).get(c.kind);
    auto x = std::make_shared<MicroBuffer<float>>(n, c.lo, c.hi);
    auto y = std::make_shared<MicroBuffer<float>>(n, 0.0f, 0.0f);
    return std::function<void()>([=, p = c.params] { fn(x->data(), y->data(), n, p); });
  };
}

}  // namespace

void register_unary_benchmarks() {
  for (Isa isa : available_isas()) {
    for (const UnaryCase& c : unary_cases()) {
      for (int64_t n : kMicroSizes) register_micro("unary", c.name, isa, n, kUnaryBytes, unary_setup(isa, c, n));
    }
  }
}

}  // namespace ember::bench
