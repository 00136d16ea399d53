#pragma once
// FusedElementwise: one op object for a group of elementwise nodes whose
// intermediates nobody else reads (built by runtime/fuse_elementwise). It walks
// the data once in L1-sized blocks and runs each original node as a microkernel
// call on the block, so the intermediates never reach memory.
//
// The node carries the original nodes as a `body` graph attribute; its inputs
// are the body's inputs, its one output the body's output. Each input is, per
// run, full (the output's shape), a scalar, or a row (a right-aligned suffix of
// the output's shape); everything is computed in f32 registers, f16/bf16 inputs
// and output converted at the edges, and every f16/bf16 result inside the body
// (an op on 16-bit data, a Cast to f16/bf16) rounded as the unfused op rounds it.
#include <string_view>

#include "ir/graph.h"
#include "kernels/registry.h"

namespace ember::kernels {

inline constexpr std::string_view kEmberDomain = "ember";
inline constexpr std::string_view kFusedElementwiseOp = "FusedElementwise";

// True when `node` can be a step of a fused body: a one-input op with an f32
// table entry (unary_spec), Add/Sub/Mul/Div or two-input Max/Min, or a Cast
// between f32, f16 and bf16. Dtypes and shapes are the pass's business.
bool is_fusible_elementwise(const ir::Node& node);

// The dtypes a fused body reads and writes: f32, f16, bf16.
bool is_fusible_dtype(DType t);

void register_fused_elementwise_ops(OpRegistry& r);

}  // namespace ember::kernels
