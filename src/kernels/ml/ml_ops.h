#pragma once
// The ai.onnx.ml ops the ONNX node suites exercise.
#include <memory>

#include "kernels/registry.h"

namespace ember::kernels::ml_ops {

using KernelResult = Result<std::unique_ptr<OpKernel>>;

KernelResult create_label_encoder(const KernelInit& init);
KernelResult create_tree_ensemble(const KernelInit& init);
KernelResult create_binarizer(const KernelInit& init);
KernelResult create_array_feature_extractor(const KernelInit& init);

}  // namespace ember::kernels::ml_ops
