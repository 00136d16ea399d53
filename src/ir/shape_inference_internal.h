#pragma once
// Shared between the shape inference driver and its per-op rules; not a public API.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/shape_inference.h"

namespace ember::ir::shape_inference_detail {

// Shape tensors longer than this are not tracked element by element.
inline constexpr size_t kMaxContents = 64;

// The values inferred so far for one graph, and the enclosing graphs' for the
// outer-scope values a subgraph reads.
class Scope {
 public:
  Scope(const Graph& g, std::vector<SymbolicValue>& values, const Scope* parent)
      : graph_(g), values_(values), parent_(parent) {}
  const SymbolicValue* lookup(std::string_view name) const;

 private:
  const Graph& graph_;
  std::vector<SymbolicValue>& values_;
  const Scope* parent_;
};

// One node being inferred: what its inputs are known to be, and its outputs to fill.
class OpContext {
 public:
  OpContext(const Node& node, std::vector<const SymbolicValue*> inputs, const Scope& scope)
      : node(node), scope(scope), attrs(node), outputs(node.outputs.size()), inputs_(std::move(inputs)) {}

  const Node& node;
  const Scope& scope;
  AttrReader attrs;
  std::vector<SymbolicValue> outputs;

  size_t num_inputs() const { return inputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  DType dtype(size_t i) const { return has_input(i) ? inputs_[i]->dtype : DType::kUndefined; }
  const SymShape* shape(size_t i) const;
  const std::vector<DimExpr>* contents(size_t i) const;
  // Contents that are all constants (an attribute-like input such as axes or pads).
  std::optional<std::vector<int64_t>> ints(size_t i) const;
  const SymbolicValue* input(size_t i) const { return has_input(i) ? inputs_[i] : nullptr; }
  int opset() const { return node.opset; }

 private:
  std::vector<const SymbolicValue*> inputs_;
};

using InferFn = Status (*)(OpContext&);
// Op type (prefixed "domain." outside the default domain) -> its rule.
using RuleTable = std::unordered_map<std::string, InferFn>;
void add_string_rules(RuleTable& rules);  // shape_inference_strings.cpp: string and ai.onnx.ml ops
void add_tensor_rules(RuleTable& rules);  // shape_inference_ops.cpp
void add_nn_rules(RuleTable& rules);      // shape_inference_nn.cpp
void add_sequence_rules(RuleTable& rules);  // shape_inference_seq.cpp: sequences and optionals
void add_signal_rules(RuleTable& rules);  // shape_inference_signal.cpp: recurrent and signal ops
void add_attention_rules(RuleTable& rules);  // shape_inference_attention.cpp
// The rule for `node`, or nullptr for an op inference does not know.
InferFn find_infer_fn(const Node& node);
// Infers a subgraph (If/Loop/Scan body) whose outer-scope values come from `parent`.
Result<std::vector<SymbolicValue>> infer_graph(Graph& g, const Scope* parent);

// Helpers shared by the rules.
Result<size_t> normalize_axis(int64_t axis, size_t rank);
Result<DimExpr> broadcast_dim(const DimExpr& a, const DimExpr& b);
Result<SymShape> broadcast_shapes(const SymShape& a, const SymShape& b);
DimExpr product(const SymShape& dims, size_t begin, size_t end);
// `rank` unknown dims, as the shape tensor `input` of that length gives; a
// rank below 0 or past kMaxRank is an error naming the input.
Result<SymShape> unknown_dims(int64_t rank, size_t input);
std::optional<std::vector<DimExpr>> contents_of(const Tensor& t);
inline std::optional<SymShape> opt_shape(const SymShape* s) { return s ? std::optional<SymShape>(*s) : std::nullopt; }
// Sets output `i` (ignored when the node has no such output).
void set_output(OpContext& ctx, size_t i, DType dtype, std::optional<SymShape> shape,
                std::optional<std::vector<DimExpr>> contents = std::nullopt);
// Output 0 takes input 0's dtype and shape: the rule of most elementwise ops.
Status same_as_input(OpContext& ctx);

}  // namespace ember::ir::shape_inference_detail
