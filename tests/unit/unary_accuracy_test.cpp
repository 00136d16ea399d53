// Accuracy of every f32 unary microkernel at every ISA level against a
// double-precision std:: reference: a strided walk over all 2^32 bit patterns
// (every 997th) plus a dense uniform sweep of [-10, 10]. Prints the measured
// table (docs/kernels/unary-accuracy.md records it) and checks each kind against
// its bound in kBounds.
//
// Error metric: |y - ref| in units of the float spacing at max(|ref|, floor),
// i.e. plain ulp where floor = 0 and an absolute error (in ulps of `floor`) for
// results smaller than `floor`. NaN and +-Inf results must match exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "base/isa.h"
#include "kernels/elementwise/unary_ukernels.h"

namespace ember::kernels {
namespace {

struct KindCase {
  UnaryKind kind;
  const char* name;
  UnaryParams params;
  std::function<double(double)> ref;
  double max_ulp;     // the bound checked at every ISA level
  double floor = 0;   // below this |ref| the error is absolute (see header comment)
  double max_abs_x = INFINITY;  // inputs beyond are not measured
};

double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double softplus_ref(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }
double clamp01(double v) { return v < 0 ? 0 : (v > 1 ? 1 : v); }

constexpr float kSeluAlpha = 1.67326319217681884765625f;
constexpr float kSeluGamma = 1.05070102214813232421875f;
constexpr float kQuickGeluAlpha = 1.702f;

// One table of bounds, max ulp per kind; see docs/kernels/unary-accuracy.md for why each is what it is.
const std::vector<KindCase>& cases() {
  static const std::vector<KindCase> k = {
      {UnaryKind::kRelu, "Relu", {}, [](double x) { return x < 0 ? 0.0 : x; }, 0},
      {UnaryKind::kLeakyRelu, "LeakyRelu", {0.01f}, [](double x) { return x < 0 ? double(0.01f) * x : x; }, 0.5},
      {UnaryKind::kElu, "Elu", {1.0f}, [](double x) { return x < 0 ? std::expm1(x) : x; }, 3},
      {UnaryKind::kSelu, "Selu", {kSeluAlpha, 0, kSeluGamma},
       [](double x) { return x > 0 ? double(kSeluGamma) * x : double(kSeluGamma) * double(kSeluAlpha) * std::expm1(x); }, 3},
      {UnaryKind::kCelu, "Celu", {0.5f}, [](double x) { return x > 0 ? x : 0.5 * std::expm1(x / 0.5); }, 3},
      {UnaryKind::kHardSigmoid, "HardSigmoid", {0.2f, 0.5f},
       [](double x) { return clamp01(double(0.2f) * x + 0.5); }, 1, 1},
      {UnaryKind::kHardSwish, "HardSwish", {}, [](double x) { return x * clamp01(x / 6 + 0.5); }, 2, 1},
      {UnaryKind::kThresholdedRelu, "ThresholdedRelu", {1.0f}, [](double x) { return x > 1 ? x : 0.0; }, 0},
      {UnaryKind::kSigmoid, "Sigmoid", {}, sigmoid_ref, 3.5},
      {UnaryKind::kTanh, "Tanh", {}, [](double x) { return std::tanh(x); }, 6},
      {UnaryKind::kErf, "Erf", {}, [](double x) { return std::erf(x); }, 3},
      {UnaryKind::kGelu, "Gelu", {},
       [](double x) { return x < 0 ? 0.5 * x * std::erfc(-x / std::sqrt(2.0)) : 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); },
       3, 1},
      {UnaryKind::kGeluTanh, "GeluTanh", {},
       [](double x) { return x * sigmoid_ref(2 * std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)); }, 4, 1},
      {UnaryKind::kQuickGelu, "QuickGelu", {kQuickGeluAlpha},
       [](double x) { return x * sigmoid_ref(double(kQuickGeluAlpha) * x); }, 4, 1},
      {UnaryKind::kSilu, "Silu", {}, [](double x) { return x * sigmoid_ref(x); }, 4, 1},
      {UnaryKind::kMish, "Mish", {}, [](double x) { return x * std::tanh(softplus_ref(x)); }, 4, 1},
      {UnaryKind::kSoftplus, "Softplus", {}, softplus_ref, 4},
      {UnaryKind::kSoftsign, "Softsign", {}, [](double x) { return x / (1 + std::fabs(x)); }, 2},
      {UnaryKind::kExp, "Exp", {}, [](double x) { return std::exp(x); }, 2},
      {UnaryKind::kLog, "Log", {}, [](double x) { return std::log(x); }, 2},
      {UnaryKind::kSqrt, "Sqrt", {}, [](double x) { return std::sqrt(x); }, 0.5},
      {UnaryKind::kReciprocal, "Reciprocal", {}, [](double x) { return 1 / x; }, 0.5},
      {UnaryKind::kNeg, "Neg", {}, [](double x) { return -x; }, 0},
      {UnaryKind::kAbs, "Abs", {}, [](double x) { return std::fabs(x); }, 0},
      {UnaryKind::kClip, "Clip", {-1.0f, 2.0f}, [](double x) { return std::isnan(x) ? x : std::clamp(x, -1.0, 2.0); }, 0},
      {UnaryKind::kFloor, "Floor", {}, [](double x) { return std::floor(x); }, 0},
      {UnaryKind::kCeil, "Ceil", {}, [](double x) { return std::ceil(x); }, 0},
      {UnaryKind::kRound, "Round", {}, [](double x) { return std::nearbyint(x); }, 0},
      {UnaryKind::kSin, "Sin", {}, [](double x) { return std::sin(x); }, 2, 0, 1e5},
      {UnaryKind::kCos, "Cos", {}, [](double x) { return std::cos(x); }, 2, 0, 1e5},
  };
  return k;
}

std::vector<float> sweep_inputs() {
  std::vector<float> xs;
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 997) {
    const uint32_t b = static_cast<uint32_t>(bits);
    float f;
    std::memcpy(&f, &b, 4);
    xs.push_back(f);
  }
  constexpr int kDense = 1 << 18;
  for (int i = 0; i <= kDense; ++i) xs.push_back(-10.0f + 20.0f * static_cast<float>(i) / kDense);
  for (float s : {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-45f, -1e-45f, 1e-38f, 88.72f, 88.73f, -87.4f, -103.9f,
                  86.5f, -86.5f, 86.50001f, -86.50001f})
    xs.push_back(s);
  return xs;
}

// The float spacing at |v| (2^-149 for denormals and zero).
double ulp_at(double v) {
  const double a = std::fabs(v);
  if (a < 0x1p-126) return 0x1p-149;
  int e;
  std::frexp(static_cast<float>(a) == INFINITY ? FLT_MAX : static_cast<double>(static_cast<float>(a)), &e);
  return std::ldexp(1.0, e - 24);
}

struct Measured {
  double max_err = 0;
  float worst_x = 0;
  int64_t mismatched_specials = 0;
};

Measured measure(const KindCase& c, const std::vector<float>& xs, const std::vector<double>& ref, Isa isa) {
  std::vector<float> y(xs.size());
  unary_table(isa).get(c.kind)(xs.data(), y.data(), static_cast<int64_t>(xs.size()), c.params);
  Measured m;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!(std::fabs(xs[i]) <= c.max_abs_x) && !std::isnan(xs[i]) && !std::isinf(xs[i])) continue;
    const double r = ref[i];
    const float rf = static_cast<float>(r);
    if (std::isnan(r) || std::isnan(y[i]) || std::isinf(rf) || std::isinf(y[i]) ||
        (std::isinf(xs[i]) && std::fabs(xs[i]) > c.max_abs_x)) {
      const bool same = (std::isnan(rf) && std::isnan(y[i])) || rf == y[i];
      if (!same) {
        if (m.mismatched_specials == 0) m.worst_x = xs[i];
        ++m.mismatched_specials;
      }
      continue;
    }
    const double err = std::fabs(static_cast<double>(y[i]) - r) / ulp_at(std::max(std::fabs(r), c.floor));
    if (err > m.max_err) {
      m.max_err = err;
      if (m.mismatched_specials == 0) m.worst_x = xs[i];
    }
  }
  return m;
}

TEST(UnaryAccuracy, EveryKindEveryIsaWithinBound) {
  const std::vector<float> xs = sweep_inputs();
  const std::vector<Isa> isas = available_isas();
  std::printf("%-16s %6s", "kind", "bound");
  for (Isa isa : isas) std::printf(" %26s", std::string(isa_name(isa)).c_str());
  std::printf("\n");
  std::vector<double> ref(xs.size());
  for (const KindCase& c : cases()) {
    for (size_t i = 0; i < xs.size(); ++i) ref[i] = c.ref(static_cast<double>(xs[i]));
    std::printf("%-16s %6.1f", c.name, c.max_ulp);
    for (Isa isa : isas) {
      const Measured m = measure(c, xs, ref, isa);
      std::printf("   %8.2f ulp at %-11.4g", m.max_err, m.worst_x);
      EXPECT_EQ(m.mismatched_specials, 0) << c.name << " at " << isa_name(isa) << ": NaN/Inf mismatch, first x = "
                                          << m.worst_x;
      EXPECT_LE(m.max_err, c.max_ulp) << c.name << " at " << isa_name(isa) << ", worst x = " << m.worst_x;
    }
    std::printf("\n");
  }
}

const KindCase& case_of(UnaryKind kind) {
  return *std::find_if(cases().begin(), cases().end(), [kind](const KindCase& c) { return c.kind == kind; });
}

// `part` measured after `into`, folded into it.
void merge(Measured& into, const Measured& part) {
  if (into.mismatched_specials == 0 && part.mismatched_specials > 0) {
    into.worst_x = part.worst_x;
  } else if (into.mismatched_specials == 0 && part.max_err > into.max_err) {
    into.worst_x = part.worst_x;
  }
  into.max_err = std::max(into.max_err, part.max_err);
  into.mismatched_specials += part.mismatched_specials;
}

// measure() at every ISA level over every float of [from, to] (0 <= from <= to)
// and its negation, plus `extra` values, 2^20 bit patterns at a time: tens of
// millions of inputs with their references at once would take gigabytes.
std::vector<Measured> measure_every_float(const KindCase& c, float from, float to, std::span<const float> extra) {
  const std::vector<Isa> isas = available_isas();
  std::vector<Measured> result(isas.size());
  uint32_t lo, hi;
  std::memcpy(&lo, &from, 4);
  std::memcpy(&hi, &to, 4);
  constexpr uint32_t kSlice = 1u << 20;
  std::vector<float> xs;
  std::vector<double> ref;
  for (uint64_t first = lo; first <= hi + uint64_t{1}; first += kSlice) {
    xs.clear();
    if (first > hi) {
      xs.assign(extra.begin(), extra.end());
    } else {
      for (uint64_t b = first; b <= hi && b < first + kSlice; ++b) {
        const auto bits = static_cast<uint32_t>(b);
        float f;
        std::memcpy(&f, &bits, 4);
        xs.push_back(f);
        xs.push_back(-f);
      }
    }
    ref.resize(xs.size());
    for (size_t i = 0; i < xs.size(); ++i) ref[i] = c.ref(static_cast<double>(xs[i]));
    for (size_t k = 0; k < isas.size(); ++k) merge(result[k], measure(c, xs, ref, isas[k]));
  }
  return result;
}

void expect_every_float_within_bound(UnaryKind kind, float from, float to, std::span<const float> extra) {
  const KindCase& c = case_of(kind);
  const std::vector<Isa> isas = available_isas();
  const std::vector<Measured> measured = measure_every_float(c, from, to, extra);
  for (size_t k = 0; k < isas.size(); ++k) {
    const Measured& m = measured[k];
    std::printf("%s on +-[%g, %g] at %s: %.2f ulp at %.9g\n", c.name, from, to, std::string(isa_name(isas[k])).c_str(),
                m.max_err, m.worst_x);
    EXPECT_EQ(m.mismatched_specials, 0) << c.name << " at " << isa_name(isas[k]) << ", first x = " << m.worst_x;
    EXPECT_LE(m.max_err, c.max_ulp) << c.name << " at " << isa_name(isas[k]) << ", worst x = " << m.worst_x;
  }
}

// The strided walk above samples each binade sparsely; tanh's rational form
// peaks in ulps just below 1, where the result's spacing is 2^-24. Every float
// of [1, 9.5] (9.5 past the clamp at 9), both signs, against the same bound.
TEST(UnaryAccuracy, TanhOnEveryFloatNearOne) { expect_every_float_within_bound(UnaryKind::kTanh, 1.0f, 9.5f, {}); }

// Every float of [-104, -86] and [86, 104], for Exp and Sigmoid (whose e^-|x|
// is the same exp): below -87.34 the results are denormal (gradual underflow,
// measured in units of 2^-149), below -103.97 they are 0, above 88.72 Exp is
// +inf, and +-86.5 is where the AVX2 exp leaves its exponent-add path for the
// full one (exp_f32.inc), so both sides of that switch are covered.
TEST(UnaryAccuracy, ExpAndSigmoidOnEveryFloatOfTheRangeEdges) {
  const float specials[] = {INFINITY, -INFINITY, NAN, 0.0f};
  for (const UnaryKind kind : {UnaryKind::kExp, UnaryKind::kSigmoid}) {
    expect_every_float_within_bound(kind, 86.0f, 104.0f, specials);
  }
}

}  // namespace
}  // namespace ember::kernels
