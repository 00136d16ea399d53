#pragma once
// f32 microkernels of the one-input elementwise ops, one table per ISA level.
// Every entry maps x[0..n) to y[0..n); x == y (in place) is allowed. f16 and
// bf16 ops convert blocks to f32, call these, and convert back.
//
// This header is included by the per-ISA files: plain declarations only.
#include <cstdint>

#include "base/isa.h"

namespace ember::kernels {

// One kind per EMBER_UNARY_KIND row of the op table; the math of each is its
// row of unary_math.inc.
enum class UnaryKind : int {
#define EMBER_UNARY_KIND(Kind, ...) k##Kind,
#include "ops/unary_ops.def"
  kCount
};

struct UnaryParams {
  float alpha = 0.0f;
  float beta = 0.0f;
  float gamma = 0.0f;
};

using UnaryF32Fn = void (*)(const float* x, float* y, int64_t n, const UnaryParams& p);

struct UnaryTable {
  UnaryF32Fn f32[static_cast<int>(UnaryKind::kCount)];
  UnaryF32Fn get(UnaryKind k) const { return f32[static_cast<int>(k)]; }
};

const UnaryTable& unary_table(Isa isa);
inline const UnaryTable& unary_table() { return unary_table(active_isa()); }

void fill_unary_avx2(UnaryTable& t);
void fill_unary_avx512(UnaryTable& t);

}  // namespace ember::kernels
