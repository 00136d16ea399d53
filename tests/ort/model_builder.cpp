#include "model_builder.h"

#include <cstring>
#include <fstream>
#include <random>

namespace ember::ortref {
namespace {

// Field numbers of onnx.proto.
namespace field {
constexpr int kModelIrVersion = 1, kModelProducerName = 2, kModelGraph = 7, kModelOpsetImport = 8;
constexpr int kOpsetDomain = 1, kOpsetVersion = 2;
constexpr int kGraphNode = 1, kGraphName = 2, kGraphInitializer = 5, kGraphInput = 11, kGraphOutput = 12;
constexpr int kNodeInput = 1, kNodeOutput = 2, kNodeName = 3, kNodeOpType = 4, kNodeAttribute = 5,
              kNodeDomain = 7;
constexpr int kAttrName = 1, kAttrF = 2, kAttrI = 3, kAttrS = 4, kAttrT = 5, kAttrFloats = 7, kAttrInts = 8,
              kAttrStrings = 9, kAttrTensors = 10, kAttrType = 20;
constexpr int kTensorDims = 1, kTensorDataType = 2, kTensorName = 8, kTensorRawData = 9;
constexpr int kValueInfoName = 1, kValueInfoType = 2;
constexpr int kTypeTensorType = 1;
constexpr int kTensorTypeElemType = 1, kTensorTypeShape = 2;
constexpr int kShapeDim = 1;
constexpr int kDimValue = 1, kDimParam = 2;
}  // namespace field

// Protobuf wire format: varint (0), 32-bit (5) and length-delimited (2) fields.
// Repeated scalars are written unpacked, as proto2 writers (and so most .onnx
// files) do.
class ProtoWriter {
 public:
  void varint_field(int field, uint64_t v) {
    tag(field, 0);
    varint(v);
  }
  void int_field(int field, int64_t v) { varint_field(field, static_cast<uint64_t>(v)); }
  void float_field(int field, float v) {
    tag(field, 5);
    char b[4];
    std::memcpy(b, &v, 4);
    out_.append(b, 4);
  }
  void bytes_field(int field, std::string_view v) {
    tag(field, 2);
    varint(v.size());
    out_.append(v);
  }
  const std::string& bytes() const { return out_; }

 private:
  void tag(int field, int wire_type) { varint(static_cast<uint64_t>(field) << 3 | static_cast<uint64_t>(wire_type)); }
  void varint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>(v | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  std::string out_;
};

std::string value_info_bytes(const std::string& name, DType dtype, const std::vector<ir::Dim>* dims) {
  ProtoWriter tensor_type;
  tensor_type.int_field(field::kTensorTypeElemType, static_cast<int64_t>(dtype));
  if (dims) {
    ProtoWriter shape;
    for (const ir::Dim& d : *dims) {
      ProtoWriter dim;
      if (d.known()) {
        dim.int_field(field::kDimValue, d.value);
      } else if (!d.symbol.empty()) {
        dim.bytes_field(field::kDimParam, d.symbol);
      }
      shape.bytes_field(field::kShapeDim, dim.bytes());
    }
    tensor_type.bytes_field(field::kTensorTypeShape, shape.bytes());
  }
  ProtoWriter type;
  type.bytes_field(field::kTypeTensorType, tensor_type.bytes());
  ProtoWriter info;
  info.bytes_field(field::kValueInfoName, name);
  info.bytes_field(field::kValueInfoType, type.bytes());
  return info.bytes();
}

std::vector<ir::Dim> to_dims(const std::vector<int64_t>& dims) {
  std::vector<ir::Dim> out;
  for (int64_t d : dims) out.push_back(ir::Dim{d < 0 ? -1 : d, ""});
  return out;
}

std::string attribute_bytes(const ir::Attribute& a) {
  ProtoWriter w;
  w.bytes_field(field::kAttrName, a.name);
  w.int_field(field::kAttrType, static_cast<int64_t>(a.type));
  switch (a.type) {
    case ir::AttrType::kFloat: w.float_field(field::kAttrF, a.f); break;
    case ir::AttrType::kInt: w.int_field(field::kAttrI, a.i); break;
    case ir::AttrType::kString: w.bytes_field(field::kAttrS, a.s); break;
    case ir::AttrType::kTensor: w.bytes_field(field::kAttrT, tensor_proto_bytes(a.t, "")); break;
    case ir::AttrType::kFloats:
      for (float f : a.floats) w.float_field(field::kAttrFloats, f);
      break;
    case ir::AttrType::kInts:
      for (int64_t i : a.ints) w.int_field(field::kAttrInts, i);
      break;
    case ir::AttrType::kStrings:
      for (const std::string& s : a.strings) w.bytes_field(field::kAttrStrings, s);
      break;
    case ir::AttrType::kTensors:
      for (const Tensor& t : a.tensors) w.bytes_field(field::kAttrTensors, tensor_proto_bytes(t, ""));
      break;
    default:
      // Graph attributes need a GraphProto writer, which no test has needed yet.
      assert(false && "ModelBuilder: unsupported attribute type");
  }
  return w.bytes();
}

// The lowest IR version that ONNX pairs with `opset` of the default domain,
// never below 7 (initializers that are not graph inputs need IR >= 4).
int64_t ir_version_for(int opset) {
  if (opset <= 14) return 7;
  if (opset <= 18) return 8;
  if (opset <= 20) return 9;
  if (opset <= 22) return 10;
  return 11;
}

}  // namespace

Tensor random_f32(Shape shape, uint32_t seed) {
  Tensor t = Tensor::allocate(DType::kF32, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.f, 2.f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = dist(rng);
  return t;
}

ir::Attribute attr_int(std::string name, int64_t v) {
  ir::Attribute a;
  a.name = std::move(name);
  a.type = ir::AttrType::kInt;
  a.i = v;
  return a;
}
ir::Attribute attr_float(std::string name, float v) {
  ir::Attribute a;
  a.name = std::move(name);
  a.type = ir::AttrType::kFloat;
  a.f = v;
  return a;
}
ir::Attribute attr_string(std::string name, std::string v) {
  ir::Attribute a;
  a.name = std::move(name);
  a.type = ir::AttrType::kString;
  a.s = std::move(v);
  return a;
}
ir::Attribute attr_ints(std::string name, std::vector<int64_t> v) {
  ir::Attribute a;
  a.name = std::move(name);
  a.type = ir::AttrType::kInts;
  a.ints = std::move(v);
  return a;
}
ir::Attribute attr_floats(std::string name, std::vector<float> v) {
  ir::Attribute a;
  a.name = std::move(name);
  a.type = ir::AttrType::kFloats;
  a.floats = std::move(v);
  return a;
}
ir::Attribute attr_tensor(std::string name, Tensor v) {
  ir::Attribute a;
  a.name = std::move(name);
  a.type = ir::AttrType::kTensor;
  a.t = std::move(v);
  return a;
}

std::string tensor_proto_bytes(const Tensor& t, const std::string& name) {
  ProtoWriter w;
  for (int64_t d : t.shape()) w.int_field(field::kTensorDims, d);
  w.int_field(field::kTensorDataType, static_cast<int64_t>(t.dtype()));
  if (!name.empty()) w.bytes_field(field::kTensorName, name);
  w.bytes_field(field::kTensorRawData,
                std::string_view(static_cast<const char*>(t.data()), t.data() ? t.nbytes() : 0));
  return w.bytes();
}

ModelBuilder::ModelBuilder(int opset) { opsets_.emplace_back("", opset); }

void ModelBuilder::set_opset(const std::string& domain, int version) {
  for (auto& [d, v] : opsets_) {
    if (d == domain) {
      v = version;
      return;
    }
  }
  opsets_.emplace_back(domain, version);
}

void ModelBuilder::add_input(const std::string& name, DType dtype, std::vector<int64_t> dims) {
  std::vector<ir::Dim> d = to_dims(dims);
  inputs_.push_back(value_info_bytes(name, dtype, &d));
}

void ModelBuilder::add_input_dims(const std::string& name, DType dtype, std::vector<ir::Dim> dims) {
  inputs_.push_back(value_info_bytes(name, dtype, &dims));
}

void ModelBuilder::add_output(const std::string& name, DType dtype, std::vector<int64_t> dims) {
  std::vector<ir::Dim> d = to_dims(dims);
  outputs_.push_back(value_info_bytes(name, dtype, &d));
}

void ModelBuilder::add_output_unshaped(const std::string& name, DType dtype) {
  outputs_.push_back(value_info_bytes(name, dtype, nullptr));
}

void ModelBuilder::add_initializer(const std::string& name, const Tensor& value) {
  initializers_.push_back(tensor_proto_bytes(value, name));
}

void ModelBuilder::add_node(const std::string& op_type, std::vector<std::string> inputs,
                            std::vector<std::string> outputs, std::vector<ir::Attribute> attributes,
                            const std::string& domain, const std::string& name) {
  ProtoWriter w;
  for (const std::string& i : inputs) w.bytes_field(field::kNodeInput, i);
  for (const std::string& o : outputs) w.bytes_field(field::kNodeOutput, o);
  w.bytes_field(field::kNodeName, name.empty() ? "n" + std::to_string(nodes_.size()) : name);
  w.bytes_field(field::kNodeOpType, op_type);
  for (const ir::Attribute& a : attributes) w.bytes_field(field::kNodeAttribute, attribute_bytes(a));
  if (!domain.empty()) w.bytes_field(field::kNodeDomain, domain);
  nodes_.push_back(w.bytes());
}

std::string ModelBuilder::serialize() const {
  ProtoWriter graph;
  for (const std::string& n : nodes_) graph.bytes_field(field::kGraphNode, n);
  graph.bytes_field(field::kGraphName, "ember_test");
  for (const std::string& t : initializers_) graph.bytes_field(field::kGraphInitializer, t);
  for (const std::string& i : inputs_) graph.bytes_field(field::kGraphInput, i);
  for (const std::string& o : outputs_) graph.bytes_field(field::kGraphOutput, o);

  ProtoWriter model;
  int default_opset = 0;
  for (const auto& [domain, version] : opsets_)
    if (domain.empty()) default_opset = version;
  model.int_field(field::kModelIrVersion, ir_version_ ? ir_version_ : ir_version_for(default_opset));
  model.bytes_field(field::kModelProducerName, "ember-model-builder");
  model.bytes_field(field::kModelGraph, graph.bytes());
  for (const auto& [domain, version] : opsets_) {
    ProtoWriter opset;
    opset.bytes_field(field::kOpsetDomain, domain);
    opset.int_field(field::kOpsetVersion, version);
    model.bytes_field(field::kModelOpsetImport, opset.bytes());
  }
  return model.bytes();
}

Status ModelBuilder::write(const std::string& path) const {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return io_error("cannot open '{}' for writing", path);
  std::string bytes = serialize();
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) return io_error("cannot write '{}'", path);
  return Status::ok();
}

}  // namespace ember::ortref
