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

// Domain -> opset version the model imports ("ai.onnx" read as "").
Result<std::map<std::string, int>> read_opsets(const OrtGraph* graph);

// The node's inputs or outputs (nullptr for an omitted optional one).
Result<std::vector<const OrtValueInfo*>> node_inputs(const OrtNode* node);
Result<std::vector<const OrtValueInfo*>> node_outputs(const OrtNode* node);
Result<std::vector<const OrtNode*>> graph_nodes(const OrtGraph* graph);

// A copy of an ORT tensor value (an initializer or a tensor attribute).
Result<Tensor> copy_tensor(const OrtValue* value);

// Adds ORT nodes to an ir::Graph, creating values by name.
class GraphImporter {
 public:
  explicit GraphImporter(ir::Graph& graph) : graph_(graph) {}

  // The value named by `info` (created with its dtype, and with its rank and
  // known sizes when `with_shape`; symbolic sizes are left unknown).
  Result<ir::ValueId> value(const OrtValueInfo* info, bool with_shape);
  // Appends the node (op, domain, opset from `opsets` else the schema's
  // since-version, attributes, inputs and outputs). Nodes with subgraphs are
  // refused.
  Status add_node(const OrtNode* node, const std::map<std::string, int>& opsets);

 private:
  ir::Graph& graph_;
};

}  // namespace ember::ort_ep
