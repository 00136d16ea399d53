#pragma once
// SequenceProto and OptionalProto (onnx-ml.proto): the `.pb` files of ONNX backend
// test cases whose inputs or outputs are sequences or optionals. They become
// kSequence / kOptional handles (base/value_list.h).
#include <string>

#include "base/status.h"
#include "onnx/model_loader.h"

namespace ember::onnx {

// Reads a file holding a value of `kind`: kSequence (SequenceProto), kOptional
// (OptionalProto), or a tensor dtype (TensorProto).
Result<NamedTensor> read_value_proto_file(const std::string& path, DType kind);

// `t` serialized as what read_value_proto_file reads back: a SequenceProto or
// OptionalProto for a handle (elements nested as they are), else a TensorProto.
std::string serialize_value_proto(const Tensor& t, const std::string& name);

}  // namespace ember::onnx
