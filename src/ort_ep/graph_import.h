#pragma once
// Reads ONNX Runtime's view of a graph (OrtGraph / OrtNode / OrtValueInfo, valid
// only during GetCapability or Compile) into Ember's ir::Graph, node by node.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"
#include "ort_ep/ort_api.h"

namespace ember::ort_ep {

// The domain as Ember names it: "" for the default ONNX domain, which ORT may call "ai.onnx".
std::string onnx_domain(const char* domain);

// Domain -> opset version the model imports ("ai.onnx" read as "").
Result<std::map<std::string, int>> read_opsets(const OrtGraph* graph);

// The node's inputs (explicit; implicit: outer values its subgraphs read) or outputs
// (nullptr for an omitted optional one).
Result<std::vector<const OrtValueInfo*>> node_inputs(const OrtNode* node);
Result<std::vector<const OrtValueInfo*>> node_implicit_inputs(const OrtNode* node);
Result<std::vector<const OrtValueInfo*>> node_outputs(const OrtNode* node);
Result<std::vector<const OrtNode*>> graph_nodes(const OrtGraph* graph);

// A copy of an ORT tensor value (an initializer or a tensor attribute).
Result<Tensor> copy_tensor(const OrtValue* value);

// A subgraph (an attribute of an If/Loop/Scan node) as an ir::Graph: its
// inputs, initializers (copied), nodes and outputs; the names it reads but does
// not define are its outer references, in first-use order.
Result<std::shared_ptr<ir::Graph>> import_subgraph(const OrtGraph* graph, const std::map<std::string, int>& opsets);

// Adds ORT nodes to an ir::Graph, creating values by name.
class GraphImporter {
 public:
  explicit GraphImporter(ir::Graph& graph) : graph_(graph) {}

  // The value named by `info` (created with its dtype, and with its rank and
  // known sizes when `with_shape`; symbolic sizes are left unknown).
  Result<ir::ValueId> value(const OrtValueInfo* info, bool with_shape);
  // value() without shapes for each of a node's inputs or outputs (kNoValue for an omitted one).
  Result<std::vector<ir::ValueId>> values(const std::vector<const OrtValueInfo*>& infos);
  // Appends the node (op, domain, opset from `opsets` else the schema's
  // since-version, attributes, inputs and outputs). A node with subgraphs (If,
  // Loop, Scan) gets each as a graph attribute, and the values its subgraphs
  // read from enclosing graphs (ORT's implicit inputs) after its explicit inputs.
  Status add_node(const OrtNode* node, const std::map<std::string, int>& opsets);

 private:
  Status copy_if_constant(const OrtValueInfo* info, ir::ValueId id);
  Status add_subgraphs(const OrtNode* node, const std::map<std::string, int>& opsets, ir::Node& n);

  ir::Graph& graph_;
};

}  // namespace ember::ort_ep
