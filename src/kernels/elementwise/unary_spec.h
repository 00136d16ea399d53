#pragma once
// Which f32 microkernel (and parameters) computes a one-input elementwise node:
// shared by the unary op objects and the elementwise fusion pass.
#include <optional>

#include "base/status.h"
#include "ir/graph.h"
#include "kernels/elementwise/unary_ukernels.h"

namespace ember::kernels {

struct UnarySpec {
  UnaryKind kind;
  UnaryParams params;
};

// The table entry for `node` (its op type, domain and attributes), or nullopt
// when the op is not a single table entry; an error for bad attributes.
Result<std::optional<UnarySpec>> unary_spec(const ir::Node& node);

}  // namespace ember::kernels
