// Shape rules of the string ops and the ai.onnx.ml ops (kernels/string, kernels/ml).
#include <algorithm>

#include "ir/shape_inference_internal.h"

namespace ember::ir::shape_inference_detail {
namespace {

Status string_concat(OpContext& ctx) {
  std::optional<SymShape> shape;
  if (ctx.shape(0) && ctx.shape(1)) {
    EMBER_ASSIGN_OR_RETURN(SymShape s, broadcast_shapes(*ctx.shape(0), *ctx.shape(1)));
    shape = std::move(s);
  }
  set_output(ctx, 0, DType::kString, std::move(shape));
  return Status::ok();
}

// Substrings [..., longest split] (data-dependent), and their counts in X's shape.
Status string_split(OpContext& ctx) {
  std::optional<SymShape> parts;
  if (ctx.shape(0)) {
    parts = *ctx.shape(0);
    parts->push_back(DimExpr{});
  }
  set_output(ctx, 0, DType::kString, std::move(parts));
  set_output(ctx, 1, DType::kI64, opt_shape(ctx.shape(0)));
  return Status::ok();
}

Status regex_full_match(OpContext& ctx) {
  set_output(ctx, 0, DType::kBool, opt_shape(ctx.shape(0)));
  return Status::ok();
}

// [C] -> [K], [1, C] -> [1, K]: K depends on how many elements are stopwords.
Status string_normalizer(OpContext& ctx) {
  std::optional<SymShape> shape;
  if (const SymShape* in = ctx.shape(0)) {
    shape = *in;
    if (!shape->empty()) shape->back() = ctx.attrs.get_strings("stopwords").empty() ? in->back() : DimExpr{};
  }
  set_output(ctx, 0, DType::kString, std::move(shape));
  return Status::ok();
}

// [C] -> [columns], [B, C] -> [B, columns], columns = max(ngram_indexes) + 1.
Status tfidf_vectorizer(OpContext& ctx) {
  std::vector<int64_t> indexes = ctx.attrs.get_ints("ngram_indexes");
  const DimExpr columns = DimExpr::constant(indexes.empty() ? 0 : *std::max_element(indexes.begin(), indexes.end()) + 1);
  std::optional<SymShape> shape;
  if (const SymShape* in = ctx.shape(0)) {
    shape = in->size() == 2 ? SymShape{(*in)[0], columns} : SymShape{columns};
  }
  set_output(ctx, 0, DType::kF32, std::move(shape));
  return Status::ok();
}

// The values' type: values_tensor's dtype, or that of the values_* list given.
Status label_encoder(OpContext& ctx) {
  DType dt = DType::kUndefined;
  if (const Tensor* t = ctx.attrs.get_tensor("values_tensor")) {
    dt = t->dtype();
  } else if (ctx.attrs.has("values_strings")) {
    dt = DType::kString;
  } else if (ctx.attrs.has("values_int64s")) {
    dt = DType::kI64;
  } else if (ctx.attrs.has("values_floats")) {
    dt = DType::kF32;
  }
  set_output(ctx, 0, dt, opt_shape(ctx.shape(0)));
  return Status::ok();
}

Status tree_ensemble(OpContext& ctx) {
  std::optional<SymShape> shape;
  if (const SymShape* in = ctx.shape(0); in && !in->empty()) {
    shape = SymShape{(*in)[0], DimExpr::constant(ctx.attrs.get_int("n_targets", 0))};
  }
  set_output(ctx, 0, ctx.dtype(0), std::move(shape));
  return Status::ok();
}

// X [..., N] gathered at K indices on its last axis: [..., K]; a 1-D X gives [1, K].
Status array_feature_extractor(OpContext& ctx) {
  std::optional<SymShape> shape;
  const SymShape* x = ctx.shape(0);
  const SymShape* indices = ctx.shape(1);
  if (x && !x->empty() && indices) {
    shape = x->size() == 1 ? SymShape{DimExpr::constant(1)} : SymShape(x->begin(), x->end() - 1);
    shape->push_back(product(*indices, 0, indices->size()));
  }
  set_output(ctx, 0, ctx.dtype(0), std::move(shape));
  return Status::ok();
}

}  // namespace

void add_string_rules(RuleTable& rules) {
  rules["StringConcat"] = string_concat;
  rules["StringSplit"] = string_split;
  rules["RegexFullMatch"] = regex_full_match;
  rules["StringNormalizer"] = string_normalizer;
  rules["TfIdfVectorizer"] = tfidf_vectorizer;
  rules["ai.onnx.ml.LabelEncoder"] = label_encoder;
  rules["ai.onnx.ml.TreeEnsemble"] = tree_ensemble;
  rules["ai.onnx.ml.Binarizer"] = same_as_input;
  rules["ai.onnx.ml.ArrayFeatureExtractor"] = array_feature_extractor;
}

}  // namespace ember::ir::shape_inference_detail
