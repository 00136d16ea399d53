#pragma once
// Kernel factories of the normalization family, registered in norm_registry.cpp.
#include <string_view>

#include "kernels/kernel.h"

namespace ember::kernels {

// Set (an int, 1) on a SkipSimplifiedLayerNormalization that Ember's optimizer
// fused from Add -> SimplifiedLayerNormalization: it rounds as the latter does
// in ONNX Runtime, which runs that pair unfused.
inline constexpr std::string_view kFusedFromSimplifiedAttr = "ember_fused_from_simplified";

// LayerNormalization, SimplifiedLayerNormalization, RMSNormalization and
// com.microsoft Skip(Simplified)LayerNormalization (row_norm.cpp).
Result<std::unique_ptr<OpKernel>> create_row_normalization(const KernelInit& init);
// LayerNormalization accumulated in double, for f64 inputs (layer_norm.cpp).
Result<std::unique_ptr<OpKernel>> create_layer_normalization_reference(const KernelInit& init);
Result<std::unique_ptr<OpKernel>> create_batch_normalization(const KernelInit& init);
Result<std::unique_ptr<OpKernel>> create_instance_normalization(const KernelInit& init);
Result<std::unique_ptr<OpKernel>> create_group_normalization(const KernelInit& init);
Result<std::unique_ptr<OpKernel>> create_lp_normalization(const KernelInit& init);

// Fails unless inputs 0..required-1 are present and every present input has a
// float dtype; with same_dtype, the dtype of input 0.
Status check_float_inputs(const KernelInit& init, size_t required, bool same_dtype);

}  // namespace ember::kernels
