#pragma once
// TensorProto decoding: raw_data referenced in place (when aligned), typed
// repeated fields decoded into owned storage, external data mapped from files
// next to the model.
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>

#include "base/mapped_file.h"
#include "base/status.h"
#include "base/tensor.h"
#include "onnx/model_loader.h"
#include "onnx/proto_wire.h"

namespace ember::onnx {

// Resolves TensorProto external data against one folder, mapping each file once.
class ExternalData {
 public:
  explicit ExternalData(const std::string& base_dir);
  // `length` < 0: not given. Checks the location stays inside the folder and the
  // byte range matches the tensor.
  Result<Tensor> load(const std::string& tensor_name, DType dtype, const Shape& shape, const std::string& location,
                      int64_t offset, int64_t length);
  // An error when a file lost pages while it was read (MappedFile::check).
  Status check() const;

 private:
  std::filesystem::path base_dir_;
  std::map<std::string, std::shared_ptr<MappedFile>> files_;
};

struct TensorContext {
  // Owns the bytes being parsed; null: tensors copy what they reference.
  std::shared_ptr<const void> keep_alive;
  ExternalData* external = nullptr;  // null: external data is an error
};

Result<NamedTensor> decode_tensor(std::span<const uint8_t> bytes, const proto::Where& where, TensorContext& ctx);

}  // namespace ember::onnx
