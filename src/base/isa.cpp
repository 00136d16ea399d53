#include "base/isa.h"

#include <cstdio>
#include <cstdlib>

#include "base/cpu_features.h"

namespace ember {

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
  }
  return "?";
}

std::optional<Isa> parse_isa(std::string_view name) {
  for (int i = 0; i < kNumIsas; ++i) {
    if (isa_name(static_cast<Isa>(i)) == name) return static_cast<Isa>(i);
  }
  return std::nullopt;
}

Isa detected_isa() {
  const CpuFeatures& f = cpu_features();
  const bool avx2 = f.avx2 && f.fma && f.f16c;
  if (avx2 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq) return Isa::kAvx512;
  if (avx2) return Isa::kAvx2;
  return Isa::kScalar;
}

bool reference_mode() {
  static const bool on = [] {
    const char* env = std::getenv("EMBER_REFERENCE");
    return env != nullptr && std::string_view(env) == "1";
  }();
  return on;
}

Isa active_isa() {
  static const Isa isa = [] {
    if (reference_mode()) return Isa::kScalar;
    const Isa best = detected_isa();
    const char* env = std::getenv("EMBER_ISA");
    if (env == nullptr || *env == '\0') return best;
    const std::optional<Isa> wanted = parse_isa(env);
    if (!wanted) {
      std::fprintf(stderr, "ember: EMBER_ISA=%s is not one of scalar, avx2, avx512; using %s\n", env,
                   isa_name(best).data());
      return best;
    }
    if (*wanted > best) {
      std::fprintf(stderr, "ember: EMBER_ISA=%s is not supported by this CPU; using %s\n", env,
                   isa_name(best).data());
      return best;
    }
    return *wanted;
  }();
  return isa;
}

std::string isa_description() {
  std::string out(isa_name(active_isa()));
  if (active_isa() != detected_isa()) out += " (EMBER_ISA; the CPU has " + std::string(isa_name(detected_isa())) + ")";
  return out;
}

std::vector<Isa> available_isas() {
  std::vector<Isa> out;
  for (int i = 0; i <= static_cast<int>(active_isa()); ++i) out.push_back(static_cast<Isa>(i));
  return out;
}

}  // namespace ember
