#pragma once
// ONNX messages as read from the wire, before they become IR: the loader inlines
// functions and resolves names on these, then builds ir::Graph.
#include <map>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"
#include "onnx/model_loader.h"
#include "onnx/proto_wire.h"
#include "onnx/tensor_proto.h"

namespace ember::onnx {

struct GraphMsg;

struct ValueInfoMsg {
  std::string name;
  DType dtype = DType::kUndefined;  // kUndefined for non-tensor or unsupported types
  bool has_shape = false;
  std::vector<ir::Dim> shape;
};

struct AttributeMsg {
  ir::Attribute attr;             // everything but graphs
  std::vector<GraphMsg> graphs;   // GRAPH: one, GRAPHS: any number
  std::string unsupported;        // "sparse_tensor", "type_proto", ...: a kind ir::Attribute cannot hold
};

struct NodeMsg {
  std::string name;
  std::string op_type;
  std::string domain;  // "ai.onnx" already normalized to ""
  std::string overload;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::vector<AttributeMsg> attributes;
};

struct GraphMsg {
  std::string name;
  std::string doc_string;
  std::vector<NodeMsg> nodes;
  std::vector<NamedTensor> initializers;
  std::vector<ValueInfoMsg> inputs;
  std::vector<ValueInfoMsg> outputs;
  std::vector<ValueInfoMsg> value_info;
};

using OpsetMap = std::map<std::string, int>;

struct FunctionMsg {
  std::string name;
  std::string domain;
  std::string overload;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::vector<AttributeMsg> attribute_defaults;  // attribute_proto
  std::vector<NodeMsg> nodes;
  OpsetMap opsets;
};

struct ModelMsg {
  int64_t ir_version = 0;
  std::string producer_name;
  std::string producer_version;
  std::string domain;
  int64_t model_version = 0;
  std::string doc_string;
  std::vector<std::pair<std::string, std::string>> metadata_props;  // in file order
  OpsetMap opsets;
  bool has_graph = false;
  GraphMsg graph;
  std::vector<FunctionMsg> functions;
};

std::string normalize_domain(std::string domain);

Status read_model(std::span<const uint8_t> bytes, TensorContext& ctx, ModelMsg& model);

}  // namespace ember::onnx
