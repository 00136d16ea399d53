#include <climits>

#include "kernels/ml/ml_ops.h"
#include "kernels/registry.h"

namespace ember::kernels {

void register_ml_ops(OpRegistry& r) {
  using namespace ml_ops;
  // LabelEncoder-1 (classes_strings) is not implemented: no suite uses it.
  r.add({"ai.onnx.ml", "LabelEncoder", 2, INT_MAX, create_label_encoder, /*strings=*/true});
  r.add({"ai.onnx.ml", "TreeEnsemble", 5, INT_MAX, create_tree_ensemble});
  r.add({"ai.onnx.ml", "Binarizer", 1, INT_MAX, create_binarizer});
  r.add({"ai.onnx.ml", "ArrayFeatureExtractor", 1, INT_MAX, create_array_feature_extractor, /*strings=*/true});
}

}  // namespace ember::kernels
