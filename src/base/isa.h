#pragma once
// The instruction-set levels Ember ships microkernels for. Every optimized
// family has one table per level; a level's table falls back to the level below
// for anything it does not specialize, down to the scalar path that is always
// present.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ember {

// AVX-512 VNNI and BF16 are features within kAvx512 rather than levels: a
// family's avx512 fill takes kernels from *_avx512vnni.cpp / *_avx512bf16.cpp
// when cpu_features() reports them (docs/architecture.md, "ISA dispatch").
enum class Isa : int {
  kScalar = 0,
  kAvx2 = 1,    // AVX2 + FMA + F16C
  kAvx512 = 2,  // AVX-512 F/BW/VL/DQ on top of kAvx2
};
inline constexpr int kNumIsas = 3;

std::string_view isa_name(Isa isa);
std::optional<Isa> parse_isa(std::string_view name);

// The highest level this CPU and OS support.
Isa detected_isa();
// The level kernels use: detected_isa(), lowered by EMBER_ISA=scalar|avx2|avx512
// (read once; asking for more than the CPU has is an error printed once and ignored).
Isa active_isa();
// active_isa()'s name, and the CPU's best level when EMBER_ISA lowered it
// ("avx2 (EMBER_ISA; the CPU has avx512)"): what benchmark reports print.
std::string isa_description();
// kScalar .. active_isa(): the levels tests cover.
std::vector<Isa> available_isas();

// EMBER_REFERENCE=1 (read once): run models on the reference paths only, the
// scalar microkernels and no fusion, to tell a kernel bug from a model bug.
bool reference_mode();

}  // namespace ember
