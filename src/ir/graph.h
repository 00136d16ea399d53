#pragma once
// The in-memory graph: values, nodes and attributes, independent of the file format.
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/tensor.h"

namespace ember::ir {

using ValueId = int32_t;
using NodeId = int32_t;
inline constexpr ValueId kNoValue = -1;

class Graph;

// ONNX AttributeProto.AttributeType numbers.
enum class AttrType : int32_t {
  kUndefined = 0, kFloat = 1, kInt = 2, kString = 3, kTensor = 4, kGraph = 5,
  kFloats = 6, kInts = 7, kStrings = 8, kTensors = 9, kGraphs = 10,
};
std::string_view attr_type_name(AttrType t);

struct Attribute {
  std::string name;
  AttrType type = AttrType::kUndefined;
  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::shared_ptr<Graph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<Graph>> graphs;
  std::string ref_attr_name;  // inside a function body: refers to the caller's attribute
};

// A dimension of a declared shape: a known size, or a symbol (possibly empty = unknown).
struct Dim {
  int64_t value = -1;
  std::string symbol;
  bool known() const { return value >= 0; }
};

// "[1,2,past_sequence_length,64]": known sizes, symbols, "?" for an unnamed unknown.
std::string dims_to_string(const std::vector<Dim>& dims);

struct Value {
  std::string name;
  DType dtype = DType::kUndefined;
  bool has_shape = false;  // rank known
  std::vector<Dim> shape;
  NodeId producer = -1;
  std::vector<NodeId> consumers;
  std::optional<Tensor> constant;  // initializer or folded constant
  bool is_graph_input = false;
  bool is_graph_output = false;
  bool is_outer_scope = false;  // inside a subgraph: defined by an enclosing graph
};

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;  // "" for the default ONNX domain
  int opset = 0;       // opset version of `domain` the model imports
  std::vector<ValueId> inputs;  // kNoValue for an omitted optional input
  std::vector<ValueId> outputs;  // kNoValue for an omitted optional output
  // Values read by subgraphs of this node from the enclosing scope, appended to
  // `inputs` after the explicit ones so ordering and liveness see them.
  size_t num_explicit_inputs = 0;
  std::vector<Attribute> attributes;
  bool removed = false;

  const Attribute* find_attr(std::string_view name) const;
  std::string label() const;  // "node 'name' (Domain.OpType)" for error messages
};

class Graph {
 public:
  std::string name;
  std::map<std::string, int> opsets;  // domain -> version; "" is the default domain
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<ValueId> inputs;   // graph inputs in declared order (not initializers)
  std::vector<ValueId> outputs;  // graph outputs in declared order
  std::vector<ValueId> outer_refs;  // subgraphs only: values taken from enclosing graphs

  ValueId find_value(std::string_view name) const;
  ValueId add_value(std::string name);
  const Value& value(ValueId id) const { return values[static_cast<size_t>(id)]; }
  Value& value(ValueId id) { return values[static_cast<size_t>(id)]; }
  const Node& node(NodeId id) const { return nodes[static_cast<size_t>(id)]; }
  Node& node(NodeId id) { return nodes[static_cast<size_t>(id)]; }

  // Recomputes producer/consumer links from the nodes (removed nodes ignored) and
  // checks that every value read is produced once, is an input, an initializer or
  // an outer-scope value.
  Status rebuild_links();
  // Reorders `nodes` topologically (stable for an already-sorted graph); fails on a cycle.
  Status topological_sort();
  // Drops removed nodes and values nothing refers to; renumbers ids.
  void compact();

 private:
  std::map<std::string, ValueId, std::less<>> index_;
};

// Reads attributes with type checks; the first mismatch is kept in status().
class AttrReader {
 public:
  explicit AttrReader(const Node& node) : node_(node) {}
  bool has(std::string_view name) const { return node_.find_attr(name) != nullptr; }
  int64_t get_int(std::string_view name, int64_t def);
  float get_float(std::string_view name, float def);
  std::string get_string(std::string_view name, std::string def);
  std::vector<int64_t> get_ints(std::string_view name, std::vector<int64_t> def = {});
  std::vector<float> get_floats(std::string_view name, std::vector<float> def = {});
  std::vector<std::string> get_strings(std::string_view name, std::vector<std::string> def = {});
  const Tensor* get_tensor(std::string_view name);  // nullptr when absent
  std::shared_ptr<Graph> get_graph(std::string_view name);  // nullptr when absent
  // Fails (sticky) when a required attribute is absent.
  void require(std::string_view name);
  const Status& status() const { return status_; }

 private:
  const Attribute* typed(std::string_view name, AttrType type);
  const Node& node_;
  Status status_;
};

}  // namespace ember::ir
