#include "tensor_io.h"

#include "base/value_list.h"
#include "onnx/model_loader.h"
#include "onnx/value_proto.h"

namespace ember::cli {

Result<Tensor> read_tensor_file(const std::string& path, DType kind) {
  if (path.ends_with(".npy")) {
    if (dtype_is_container(kind)) return invalid_argument("a {} cannot come from a .npy file; pass a .pb", dtype_name(kind));
    return onnx::read_npy_file(path);
  }
  EMBER_ASSIGN_OR_RETURN(onnx::NamedTensor t, onnx::read_value_proto_file(path, kind));
  return std::move(t.tensor);
}

Result<std::pair<std::string, std::string>> split_assignment(const std::string& text, const char* what) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) return invalid_argument("{} '{}' must look like NAME=VALUE", what, text);
  return std::pair{text.substr(0, eq), text.substr(eq + 1)};
}

Result<Tensor> random_input(const runtime::IoInfo& info, const std::vector<std::pair<std::string, int64_t>>& dims,
                            std::mt19937& rng) {
  if (!info.has_shape) return invalid_argument("input '{}' has no declared shape; pass a file with --input", info.name);
  Shape shape;
  for (const ir::Dim& d : info.shape) {
    if (d.known()) {
      shape.push_back(d.value);
      continue;
    }
    auto it = std::find_if(dims.begin(), dims.end(), [&](const auto& p) { return p.first == d.symbol; });
    if (it == dims.end()) {
      return invalid_argument("input '{}' has symbolic dimension '{}'; set it with --dim {}=VALUE", info.name,
                              d.symbol.empty() ? "?" : d.symbol, d.symbol.empty() ? "NAME" : d.symbol);
    }
    shape.push_back(it->second);
  }
  Tensor t = Tensor::allocate(info.dtype, shape);
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  std::uniform_int_distribution<int> small(0, 3);
  EMBER_SWITCH_ALL(info.dtype, T, {
    T* p = t.data_as<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      if constexpr (std::is_same_v<compute_t<T>, float> || std::is_same_v<T, double>) {
        p[i] = T(real(rng));
      } else {
        p[i] = static_cast<T>(small(rng));
      }
    }
  }, return not_implemented("input '{}' has dtype {}, which perf cannot fill", info.name, dtype_name(info.dtype)));
  return t;
}

}  // namespace ember::cli
