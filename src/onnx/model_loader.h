#pragma once
// ONNX files to IR. Reads the protobuf wire format directly from a memory map so
// initializer bytes are referenced in place (see docs/architecture.md).
#include <memory>
#include <span>
#include <string>

#include "base/status.h"
#include "base/tensor.h"
#include "ir/graph.h"

namespace ember::onnx {

// ModelProto's descriptive fields (what ONNX Runtime's ModelMetadata shows).
struct ModelMetadata {
  int64_t ir_version = 0;
  std::string producer_name;
  std::string producer_version;
  std::string domain;
  int64_t model_version = 0;
  std::string doc_string;
  std::string graph_name;
  std::string graph_doc_string;
  std::vector<std::pair<std::string, std::string>> metadata_props;  // in file order
};

struct LoadedModel {
  std::shared_ptr<ir::Graph> graph;
  ModelMetadata metadata;
};

// Loads `path`: memory-maps it, resolves external data relative to its folder
// (rejecting paths that leave it), inlines model-local functions, turns Constant
// nodes into initializers, and returns a topologically sorted graph.
Result<LoadedModel> load_model(const std::string& path);
// The same from bytes in memory; `keep_alive` owns them; external data is resolved
// against `base_dir`.
Result<LoadedModel> load_model_from_bytes(std::span<const uint8_t> bytes, const std::string& base_dir,
                                          std::shared_ptr<const void> keep_alive);

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

// A serialized TensorProto (the `.pb` files of the ONNX backend tests).
Result<NamedTensor> read_tensor_proto_file(const std::string& path);
Result<NamedTensor> parse_tensor_proto(std::span<const uint8_t> bytes);
std::string serialize_tensor_proto(const Tensor& t, const std::string& name);
// NumPy `.npy` (format 1.0/2.0, little-endian, C order).
Result<Tensor> read_npy_file(const std::string& path);
// The same from bytes in memory; `path` names them in errors.
Result<Tensor> parse_npy(std::span<const uint8_t> bytes, const std::string& path);
Status write_npy_file(const std::string& path, const Tensor& t);

}  // namespace ember::onnx
