#include "kernels/ml/ml_ops.h"
#include "kernels/registry.h"

namespace ember::kernels {

void register_ml_ops(OpRegistry& r) {
  using namespace ml_ops;
  // LabelEncoder-1 (classes_strings) is not implemented: no suite uses it.
  constexpr DTypeSet kFeatures{DType::kF32, DType::kF64, DType::kI64, DType::kI32};
  r.add(up_to_newest("ai.onnx.ml", "LabelEncoder", 2, create_label_encoder, kStandardTypes | kStringType));
  r.add(up_to_newest("ai.onnx.ml", "TreeEnsemble", 5, create_tree_ensemble, {DType::kF32, DType::kF64, DType::kF16}));
  r.add(up_to_newest("ai.onnx.ml", "Binarizer", 1, create_binarizer, kFeatures));
  r.add(up_to_newest("ai.onnx.ml", "ArrayFeatureExtractor", 1, create_array_feature_extractor,
                     kFeatures | kStringType));
}

}  // namespace ember::kernels
