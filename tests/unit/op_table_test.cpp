// The kernel registry and the shape-rule table agree: every op with a kernel has
// a load-time shape rule and every rule's op has a kernel, apart from the listed
// exceptions, each with its reason.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>

#include "ir/shape_inference.h"
#include "kernels/registry.h"

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

}  // namespace
}  // namespace ember
