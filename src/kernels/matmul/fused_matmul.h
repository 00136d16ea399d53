#pragma once
// ember.FusedMatMul: Y = act(A x B + bias), the MatMul + Add (+ activation)
// chain that runtime/fuse_matmul builds. Inputs: A (f32, any rank, numpy
// batching against a 2-D B), B (a constant f32 [K, N], packed at creation),
// bias (f32 with N elements, every dim but the last 1). The optional string
// attribute `activation` names the activation (fused_matmul_activation). The
// bias and activation run as the GEMM's epilogue on each output block while it
// is in cache, rounding exactly as the unfused Add and activation nodes do
// (Silu excepted: x sigmoid(x) in one step rounds once less than Sigmoid, Mul).
#include <optional>
#include <string_view>

#include "kernels/elementwise/unary_ukernels.h"
#include "kernels/kernel.h"

namespace ember::kernels {

inline constexpr std::string_view kFusedMatMulOp = "FusedMatMul";

// The `activation` attribute value of a unary kind the epilogue applies
// (Relu, Tanh, Sigmoid, Gelu, GeluTanh, Silu), or nullopt for any other kind.
std::optional<std::string_view> fused_matmul_activation(UnaryKind kind);

Result<std::unique_ptr<OpKernel>> create_fused_matmul(const KernelInit& init);

}  // namespace ember::kernels
