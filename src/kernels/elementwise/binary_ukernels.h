#pragma once
// f32 microkernels of the two-input arithmetic ops, one table per ISA level, in
// three operand forms: vv (both length n), vs (b is one scalar), sv (a is one
// scalar). y may alias a or b. A row-bias broadcast is vv per row.
//
// This header is included by the per-ISA files: plain declarations only.
#include <cstdint>

#include "base/isa.h"

namespace ember::kernels {

enum class BinaryKind : int { kAdd, kSub, kMul, kDiv, kMax, kMin, kCount };

using BinaryF32Fn = void (*)(const float* a, const float* b, float* y, int64_t n);

struct BinaryTable {
  BinaryF32Fn vv[static_cast<int>(BinaryKind::kCount)];
  BinaryF32Fn vs[static_cast<int>(BinaryKind::kCount)];
  BinaryF32Fn sv[static_cast<int>(BinaryKind::kCount)];
};

const BinaryTable& binary_table(Isa isa);
inline const BinaryTable& binary_table() { return binary_table(active_isa()); }

void fill_binary_avx2(BinaryTable& t);
void fill_binary_avx512(BinaryTable& t);

}  // namespace ember::kernels
