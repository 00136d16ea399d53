#include "onnx/value_proto.h"

#include "base/mapped_file.h"
#include "base/value_list.h"
#include "onnx/model_loader.h"
#include "onnx/proto_wire.h"
#include "onnx/tensor_proto.h"

namespace ember::onnx {
namespace {

using proto::Field;
using proto::Reader;
using proto::Where;

// SequenceProto and OptionalProto share their field numbers: name 1, elem_type 2,
// then one field per element kind.
enum : uint32_t { kName = 1, kElemType = 2, kTensor = 3, kSparseTensor = 4, kSequence = 5, kMap = 6, kOptional = 7 };
// Their DataType enum.
enum : int64_t { kElemUndefined = 0, kElemTensor = 1, kElemSequence = 3, kElemOptional = 5 };

Result<NamedTensor> decode_container(std::span<const uint8_t> bytes, const Where& w, TensorContext& ctx, DType kind,
                                     int depth);

// One element: a TensorProto, or a nested SequenceProto / OptionalProto.
Result<Tensor> decode_item(const Field& f, const Where& w, TensorContext& ctx, int depth) {
  std::span<const uint8_t> bytes;
  EMBER_RETURN_IF_ERROR(proto::read_bytes(f, w, bytes));
  if (f.number == kTensor) {
    EMBER_ASSIGN_OR_RETURN(NamedTensor t, decode_tensor(bytes, w, ctx));
    return std::move(t.tensor);
  }
  EMBER_ASSIGN_OR_RETURN(NamedTensor t,
                         decode_container(bytes, w, ctx, f.number == kSequence ? DType::kSequence : DType::kOptional,
                                          depth + 1));
  return std::move(t.tensor);
}

Result<NamedTensor> decode_container(std::span<const uint8_t> bytes, const Where& w, TensorContext& ctx, DType kind,
                                     int depth) {
  // Nesting is bounded so a hostile file cannot exhaust the stack.
  if (depth > 16) return proto::malformed(w, "sequences and optionals nested more than 16 deep");
  Reader r(bytes, w);
  Field f;
  NamedTensor out;
  ValueList list;
  int64_t elem_type = kElemUndefined;
  while (!r.done()) {
    EMBER_RETURN_IF_ERROR(r.next(f));
    switch (f.number) {
      case kName: EMBER_RETURN_IF_ERROR(proto::read_string(f, w.child("name"), out.name)); break;
      case kElemType: EMBER_RETURN_IF_ERROR(proto::read_int(f, w.child("elem_type"), elem_type)); break;
      case kTensor:
      case kSequence:
      case kOptional: {
        Where item = w.child(f.number == kTensor ? "tensor_value" : f.number == kSequence ? "sequence_value" : "optional_value",
                             static_cast<int64_t>(list.items.size()));
        EMBER_ASSIGN_OR_RETURN(Tensor t, decode_item(f, item, ctx, depth));
        list.items.push_back(std::move(t));
        break;
      }
      case kSparseTensor: return not_implemented("{}: sparse tensor elements", w.path());
      case kMap: return not_implemented("{}: map elements", w.path());
      default: break;
    }
  }
  if (kind == DType::kOptional && list.items.size() > 1) {
    return proto::malformed(w, "an optional holds {} values", list.items.size());
  }
  if (elem_type == kElemSequence) {
    list.elem_dtype = DType::kSequence;
  } else if (elem_type == kElemOptional) {
    list.elem_dtype = DType::kOptional;
  } else if (elem_type != kElemTensor && elem_type != kElemUndefined) {
    return not_implemented("{}: element type {} (sparse tensors, maps)", w.path(), elem_type);
  }
  if (!list.items.empty() && list.elem_dtype == DType::kUndefined) list.elem_dtype = list.items[0].dtype();
  out.tensor = make_container(kind, std::move(list));
  return out;
}

int64_t elem_type_of(DType t) {
  if (t == DType::kSequence) return kElemSequence;
  if (t == DType::kOptional) return kElemOptional;
  return t == DType::kUndefined ? kElemUndefined : kElemTensor;
}

}  // namespace

std::string serialize_value_proto(const Tensor& t, const std::string& name) {
  const ValueList* list = container_list(t);
  if (!list) return serialize_tensor_proto(t, name);
  proto::Writer w;
  w.string_field(kName, name);
  w.varint_field(kElemType, static_cast<uint64_t>(elem_type_of(list->elem_dtype)));
  for (const Tensor& item : list->items) {
    const std::string bytes = serialize_value_proto(item, "");
    const uint32_t field = item.dtype() == DType::kSequence   ? kSequence
                           : item.dtype() == DType::kOptional ? kOptional
                                                              : kTensor;
    w.bytes_field(field, {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
  }
  return w.take();
}

Result<NamedTensor> read_value_proto_file(const std::string& path, DType kind) {
  if (!dtype_is_container(kind)) return read_tensor_proto_file(path);
  EMBER_ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> file, MappedFile::open(path));
  TensorContext ctx{file, nullptr};
  Where root{nullptr, kind == DType::kSequence ? "SequenceProto" : "OptionalProto"};
  auto result = decode_container(file->bytes(), root, ctx, kind, 0);
  EMBER_RETURN_IF_ERROR(file->check());
  if (!result) return result.status().with_context(path + ": ");
  return result;
}

}  // namespace ember::onnx
