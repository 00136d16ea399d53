// Tensor files as `ember run` and the conformance runner read them: the first
// byte picks the reader (TensorProto .pb, or NumPy .npy), the rest is the file.
#include <cstdint>
#include <span>

#include "onnx/model_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::span<const uint8_t> bytes(data + 1, size - 1);
  if (data[0] & 1) {
    auto t = ember::onnx::parse_npy(bytes, "input.npy");
  } else {
    auto t = ember::onnx::parse_tensor_proto(bytes);
  }
  return 0;
}
