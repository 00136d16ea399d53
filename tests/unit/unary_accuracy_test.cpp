// Accuracy of every f32 unary microkernel at every ISA level against its kind's
// reference (unary_reference.h) evaluated in double: a strided walk over all 2^32 bit patterns
// (every 997th) plus a dense uniform sweep of [-10, 10]. Prints the measured
// table (docs/kernels/unary-accuracy.md records it) and checks each kind against
// its bound in the op table.
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
#include "kernels/elementwise/unary_reference.h"
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

// Every kind of the op table (src/ops/unary_ops.def) with its test parameters
// and bounds; docs/kernels/unary-accuracy.md says why each bound is what it is.
const std::vector<KindCase>& cases() {
  static const std::vector<KindCase> k = {
#define EMBER_UNARY_KIND(Kind, cost, alpha, beta, gamma, max_ulp, floor, max_abs_x)                       \
  {UnaryKind::k##Kind, #Kind, {alpha, beta, gamma},                                                       \
   [](double x) { return UnaryReference<UnaryKind::k##Kind>::apply(x, UnaryParams{alpha, beta, gamma}); }, \
   max_ulp, floor, max_abs_x},
#include "ops/unary_ops.def"
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
