#pragma once
// Writes small ONNX models (ModelProto, protobuf wire format) for tests, so a test
// can state its graph in code and hand the same bytes to Ember and ONNX Runtime.
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/tensor.h"
#include "ir/graph.h"

namespace ember::ortref {

// float32 values uniform in [-2, 2) from a seeded generator: test inputs and initializers.
Tensor random_f32(Shape shape, uint32_t seed);

ir::Attribute attr_int(std::string name, int64_t v);
ir::Attribute attr_float(std::string name, float v);
ir::Attribute attr_string(std::string name, std::string v);
ir::Attribute attr_ints(std::string name, std::vector<int64_t> v);
ir::Attribute attr_floats(std::string name, std::vector<float> v);
ir::Attribute attr_tensor(std::string name, Tensor v);

class ModelBuilder {
 public:
  // Imports the default ONNX domain at `opset`.
  explicit ModelBuilder(int opset = 17);

  void set_opset(const std::string& domain, int version);
  // Defaults to the lowest IR version that allows the default-domain opset.
  void set_ir_version(int64_t version) { ir_version_ = version; }

  // A dim < 0 is written without a value (unknown size).
  void add_input(const std::string& name, DType dtype, std::vector<int64_t> dims);
  // Dims that may carry a symbol (dim_param).
  void add_input_dims(const std::string& name, DType dtype, std::vector<ir::Dim> dims);
  void add_output(const std::string& name, DType dtype, std::vector<int64_t> dims);
  // An output whose rank and shape are left to the runtime's inference.
  void add_output_unshaped(const std::string& name, DType dtype);
  // Stored as raw_data; the bytes are copied now.
  void add_initializer(const std::string& name, const Tensor& value);
  // An empty input name is an omitted optional input. The node is named "nK"
  // unless `name` is given.
  void add_node(const std::string& op_type, std::vector<std::string> inputs, std::vector<std::string> outputs,
                std::vector<ir::Attribute> attributes = {}, const std::string& domain = "",
                const std::string& name = "");

  // The serialized ModelProto.
  std::string serialize() const;
  Status write(const std::string& path) const;

 private:
  std::vector<std::pair<std::string, int>> opsets_;
  int64_t ir_version_ = 0;
  std::vector<std::string> inputs_;        // serialized ValueInfoProto
  std::vector<std::string> outputs_;       // serialized ValueInfoProto
  std::vector<std::string> initializers_;  // serialized TensorProto
  std::vector<std::string> nodes_;         // serialized NodeProto
};

// A serialized TensorProto (raw_data form) of `t` named `name`.
std::string tensor_proto_bytes(const Tensor& t, const std::string& name);

}  // namespace ember::ortref
