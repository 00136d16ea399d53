// ai.onnx.ml TreeEnsemble's post transforms (the node suites cover only NONE),
// checked against the formulas evaluated here in double precision.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "op_test_util.h"

namespace ember::test {
namespace {

ir::Attribute attr_u8_tensor(std::string name, std::vector<uint8_t> v) {
  return attr_tensor(std::move(name), make_tensor<uint8_t>({static_cast<int64_t>(v.size())}, v));
}
ir::Attribute attr_f32_tensor(std::string name, std::vector<float> v) {
  return attr_tensor(std::move(name), make_tensor<float>({static_cast<int64_t>(v.size())}, v));
}

// Two one-split trees over feature 0 (x <= 0.5): tree 0 sends x = 0 to target 0
// (weight 1) and x = 1 to target 1 (0.3); tree 1 sends x = 0 to target 1 (0)
// and x = 1 to target 0 (0.975). Scores: row x=0 [1, 0], row x=1 [0.975, 0.3].
Result<std::vector<double>> run_trees(int64_t post_transform) {
  std::vector<ir::Attribute> attrs = {
      attr_int("n_targets", 2),
      attr_int("aggregate_function", 1),
      attr_int("post_transform", post_transform),
      attr_ints("tree_roots", {0, 1}),
      attr_ints("nodes_featureids", {0, 0}),
      attr_u8_tensor("nodes_modes", {0, 0}),
      attr_f32_tensor("nodes_splits", {0.5f, 0.5f}),
      attr_ints("nodes_truenodeids", {0, 2}),
      attr_ints("nodes_trueleafs", {1, 1}),
      attr_ints("nodes_falsenodeids", {1, 3}),
      attr_ints("nodes_falseleafs", {1, 1}),
      attr_ints("leaf_targetids", {0, 1, 1, 0}),
      attr_f32_tensor("leaf_weights", {1.0f, 0.3f, 0.0f, 0.975f}),
  };
  Tensor x = make_tensor<double>({2, 1}, {0.0, 1.0});
  EMBER_ASSIGN_OR_RETURN(std::vector<Tensor> out, run_op("TreeEnsemble", {&x}, attrs, 1, 5, "ai.onnx.ml"));
  return values_of<double>(out[0]);
}

void expect_near(const std::vector<double>& actual, const std::vector<double>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) EXPECT_NEAR(actual[i], expected[i], 1e-6) << "at " << i;
}

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

TEST(TreeEnsemble, PostTransforms) {
  const double w = static_cast<double>(0.975f), b = static_cast<double>(0.3f);
  auto none = run_trees(0);
  ASSERT_TRUE(none.is_ok()) << none.status().to_string();
  expect_near(*none, {1, 0, w, b});
  auto softmax = run_trees(1);
  ASSERT_TRUE(softmax.is_ok()) << softmax.status().to_string();
  const double e = std::exp(1.0), wb = std::exp(w) + std::exp(b);
  expect_near(*softmax, {e / (e + 1), 1 / (e + 1), std::exp(w) / wb, std::exp(b) / wb});
  auto logistic = run_trees(2);
  ASSERT_TRUE(logistic.is_ok()) << logistic.status().to_string();
  expect_near(*logistic, {sigmoid(1), 0.5, sigmoid(w), sigmoid(b)});
  auto softmax_zero = run_trees(3);  // the zero score stays zero
  ASSERT_TRUE(softmax_zero.is_ok()) << softmax_zero.status().to_string();
  expect_near(*softmax_zero, {1, 0, std::exp(w) / wb, std::exp(b) / wb});
  auto probit = run_trees(4);  // sqrt(2) erfinv(2p - 1): the normal quantile
  ASSERT_TRUE(probit.is_ok()) << probit.status().to_string();
  ASSERT_EQ(probit->size(), 4u);
  EXPECT_TRUE(std::isinf((*probit)[0]) && (*probit)[0] > 0);
  EXPECT_TRUE(std::isinf((*probit)[1]) && (*probit)[1] < 0);
  EXPECT_NEAR((*probit)[2], 1.9599639845400538, 1e-5);  // quantile of 0.975 (float-rounded)
  EXPECT_NEAR((*probit)[3], -0.5244005127080407, 1e-5);
  EXPECT_FALSE(run_trees(5).is_ok());
}

TEST(TreeEnsemble, CyclesAndBadIdsAreRefused) {
  Tensor x = make_tensor<float>({1, 1}, {0.0f});
  std::vector<ir::Attribute> attrs = {
      attr_int("n_targets", 1),
      attr_ints("tree_roots", {0}),
      attr_ints("nodes_featureids", {0, 0}),
      attr_u8_tensor("nodes_modes", {0, 0}),
      attr_f32_tensor("nodes_splits", {0.5f, 0.5f}),
      attr_ints("nodes_truenodeids", {1, 0}),
      attr_ints("nodes_trueleafs", {0, 0}),
      attr_ints("nodes_falsenodeids", {0, 0}),
      attr_ints("nodes_falseleafs", {1, 1}),
      attr_ints("leaf_targetids", {0}),
      attr_f32_tensor("leaf_weights", {1.0f}),
  };
  auto cyclic = run_op("TreeEnsemble", {&x}, attrs, 1, 5, "ai.onnx.ml");
  ASSERT_FALSE(cyclic.is_ok());
  EXPECT_NE(cyclic.status().message().find("cycle"), std::string::npos) << cyclic.status().to_string();
  attrs[5] = attr_ints("nodes_truenodeids", {7, 0});
  auto out_of_range = run_op("TreeEnsemble", {&x}, attrs, 1, 5, "ai.onnx.ml");
  ASSERT_FALSE(out_of_range.is_ok());
  EXPECT_NE(out_of_range.status().message().find("outside"), std::string::npos) << out_of_range.status().to_string();
}

}  // namespace
}  // namespace ember::test
