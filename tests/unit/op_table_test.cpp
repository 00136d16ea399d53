// The kernel registry and the shape-rule table agree: every op with a kernel has
// a load-time shape rule and every rule's op has a kernel, apart from the listed
// exceptions, each with its reason. Every entry's opset range is closed, and
// create_kernel refuses what an entry's types and ranges leave out.
#include <gtest/gtest.h>

#include <climits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ir/shape_inference.h"
#include "kernels/registry.h"
#include "ort/random_graph.h"

namespace ember {
namespace {

using OpKey = std::pair<std::string, std::string>;  // (domain, op type); "" is ai.onnx

// Kernels without a shape rule, and why none is needed.
const std::set<OpKey> kKernelOnly = {
    // Made by the optimizer after load-time inference has run.
    {"ember", "FusedElementwise"},
    {"ember", "FusedMatMul"},
    {"ember", "PagedAttention"},
};

// Shape rules without a kernel, and why none is needed.
const std::set<OpKey> kRuleOnly = {
    // The loader folds Constant nodes into initializers; inference still sees them.
    {"", "Constant"},
};

std::set<OpKey> kernel_ops() {
  std::set<OpKey> ops;
  for (const kernels::OpEntry& e : kernels::OpRegistry::instance().entries()) {
    ops.emplace(std::string(e.domain), std::string(e.op_type));
  }
  return ops;
}

std::set<OpKey> rule_ops() {
  std::set<OpKey> ops;
  for (const auto& op : ir::shape_rule_ops()) ops.insert(op);
  return ops;
}

std::string name(const OpKey& op) { return (op.first.empty() ? "ai.onnx" : op.first) + "." + op.second; }

TEST(OpTable, EveryKernelHasAShapeRule) {
  const std::set<OpKey> rules = rule_ops();
  for (const OpKey& op : kernel_ops()) {
    if (kKernelOnly.count(op)) continue;
    EXPECT_TRUE(rules.count(op)) << name(op) << " has a kernel but no shape rule (src/ir/shape_inference_*.cpp)";
  }
}

TEST(OpTable, EveryShapeRuleHasAKernel) {
  const std::set<OpKey> kernels = kernel_ops();
  for (const OpKey& op : rule_ops()) {
    if (kRuleOnly.count(op)) continue;
    EXPECT_TRUE(kernels.count(op)) << name(op) << " has a shape rule but no kernel";
  }
}

// An exception that no longer applies is removed from its list.
TEST(OpTable, ExceptionsAreCurrent) {
  const std::set<OpKey> kernels = kernel_ops();
  const std::set<OpKey> rules = rule_ops();
  for (const OpKey& op : kKernelOnly) {
    EXPECT_TRUE(kernels.count(op) && !rules.count(op)) << name(op) << " is listed as kernel-only";
  }
  for (const OpKey& op : kRuleOnly) {
    EXPECT_TRUE(rules.count(op) && !kernels.count(op)) << name(op) << " is listed as rule-only";
  }
}

TEST(OpTable, EveryRangeIsClosed) {
  for (const kernels::OpEntry& e : kernels::OpRegistry::instance().entries()) {
    const std::string op = name({std::string(e.domain), std::string(e.op_type)});
    EXPECT_NE(e.until_version, INT_MAX) << op;
    EXPECT_LE(1, e.since_version) << op;
    EXPECT_LE(e.since_version, e.until_version) << op;
    EXPECT_LE(e.until_version, kernels::newest_opset(e.domain)) << op << " covers opsets past the reviewed ones";
    EXPECT_FALSE(e.types.empty()) << op;
  }
}

TEST(OpTable, EntriesOfOneOpDoNotOverlap) {
  const auto& entries = kernels::OpRegistry::instance().entries();
  for (size_t i = 0; i < entries.size(); ++i) {
    for (size_t j = i + 1; j < entries.size(); ++j) {
      const kernels::OpEntry& a = entries[i];
      const kernels::OpEntry& b = entries[j];
      if (a.domain != b.domain || a.op_type != b.op_type) continue;
      EXPECT_TRUE(a.until_version < b.since_version || b.until_version < a.since_version)
          << name({std::string(a.domain), std::string(a.op_type)}) << " has overlapping entries";
    }
  }
}

Status build(const std::string& op, std::vector<DType> dtypes, int opset, const std::string& domain = "") {
  ir::Node node;
  node.name = "n";
  node.domain = domain;
  node.op_type = op;
  node.opset = opset;
  std::vector<const Tensor*> constants(dtypes.size(), nullptr);
  return kernels::create_kernel({node, dtypes, constants, nullptr}).status();
}

void expect_refused(const Status& s, const std::vector<std::string>& fragments) {
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), StatusCode::kNotImplemented) << s.to_string();
  for (const std::string& f : fragments) EXPECT_NE(s.message().find(f), std::string::npos) << f << " in " << s.to_string();
}

TEST(OpTable, InputTypesOutsideTheEntryAreRefused) {
  expect_refused(build("Add", {DType::kString, DType::kString}, 17),
                 {"node 'n'", "input 0 is a string tensor", "which this op does not support", "Add opsets 1-", "numeric"});
  expect_refused(build("Relu", {DType::kF8E4M3FN}, 17), {"input 0 is a float8e4m3fn tensor", "Relu opsets"});
  // The index names the offending input, not the first one.
  expect_refused(build("MatMul", {DType::kF32, DType::kF8E5M2}, 17), {"input 1 is a float8e5m2 tensor"});
  // The ops whose entries take them build.
  EXPECT_TRUE(build("Identity", {DType::kF8E4M3FN}, 21).is_ok());
  EXPECT_TRUE(build("Equal", {DType::kString, DType::kString}, 19).is_ok());
}

TEST(OpTable, OpsetsOutsideEveryEntryAreRefused) {
  expect_refused(build("Upsample", {DType::kF32, DType::kF32}, 10), {"opset 10 of Upsample", "opsets 7-9"});
  const int past = kernels::newest_opset("") + 1;
  expect_refused(build("Relu", {DType::kF32}, past),
                 {fmt::format("opset {} of Relu", past), fmt::format("reviewed up to opset {} of ai.onnx", past - 1)});
  expect_refused(build("NoSuchOp", {DType::kF32}, 17), {"unsupported op"});
}

// The random-graph comparison against ONNX Runtime draws its ops from
// kRandomGraphOps at the opsets its graphs import (13 to 21): each must be an
// op of the table.
TEST(OpTable, RandomGraphOpsAreInTheTable) {
  for (const char* op : ortref::kRandomGraphOps) {
    for (int opset : {13, 21}) {
      EXPECT_NE(kernels::OpRegistry::instance().find("", op, opset), nullptr)
          << op << " at opset " << opset << " (tests/ort/random_graph.h)";
    }
  }
}

}  // namespace
}  // namespace ember
