// NumPy .npy files: a magic string, a version, a Python-dict header
// ({'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }) and the raw data.
#include <charconv>
#include <cstring>
#include <fstream>

#include "base/buffer.h"
#include "onnx/model_loader.h"
#include "onnx/tensor_proto.h"

namespace ember::onnx {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

struct DescrEntry {
  std::string_view descr;
  DType dtype;
};
// '|' marks byte-sized types; '<' little-endian; NumPy writes '|' for those, but '<' is accepted too.
constexpr DescrEntry kDescrs[] = {
    {"<f4", DType::kF32}, {"<f8", DType::kF64}, {"<f2", DType::kF16}, {"|i1", DType::kI8},  {"<i1", DType::kI8},
    {"<i2", DType::kI16}, {"<i4", DType::kI32}, {"<i8", DType::kI64}, {"|u1", DType::kU8},  {"<u1", DType::kU8},
    {"<u2", DType::kU16}, {"<u4", DType::kU32}, {"<u8", DType::kU64}, {"|b1", DType::kBool}, {"<b1", DType::kBool},
};

// The text after `'key':` in the header dict, with leading spaces skipped.
Result<std::string_view> dict_value(std::string_view header, std::string_view key, const std::string& path) {
  std::string quoted = "'" + std::string(key) + "'";
  size_t at = header.find(quoted);
  if (at == std::string_view::npos) return invalid_argument("{}: the .npy header has no '{}'", path, key);
  size_t colon = header.find(':', at + quoted.size());
  if (colon == std::string_view::npos) return invalid_argument("{}: the .npy header entry '{}' has no value", path, key);
  std::string_view rest = header.substr(colon + 1);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  return rest;
}

Result<DType> parse_descr(std::string_view header, const std::string& path) {
  EMBER_ASSIGN_OR_RETURN(std::string_view v, dict_value(header, "descr", path));
  if (v.size() < 2 || v.front() != '\'') return invalid_argument("{}: the .npy 'descr' is not a string", path);
  std::string_view descr = v.substr(1, v.find('\'', 1) - 1);
  std::string normalized(descr);
  if (!normalized.empty() && normalized[0] == '=') normalized[0] = '<';  // native order on a little-endian host
  for (const DescrEntry& e : kDescrs) {
    if (normalized == e.descr) return e.dtype;
  }
  return not_implemented("{}: .npy dtype '{}' is not supported (little-endian bool, int, uint and float only)", path, descr);
}

Result<Shape> parse_shape(std::string_view header, const std::string& path) {
  EMBER_ASSIGN_OR_RETURN(std::string_view v, dict_value(header, "shape", path));
  if (v.empty() || v.front() != '(') return invalid_argument("{}: the .npy 'shape' is not a tuple", path);
  size_t close = v.find(')');
  if (close == std::string_view::npos) return invalid_argument("{}: the .npy 'shape' tuple is not closed", path);
  std::string_view body = v.substr(1, close - 1);
  Shape shape;
  while (!body.empty()) {
    while (!body.empty() && (body.front() == ' ' || body.front() == ',')) body.remove_prefix(1);
    if (body.empty()) break;
    int64_t d = 0;
    auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), d);
    if (ec != std::errc() || d < 0) return invalid_argument("{}: bad dimension in .npy shape '{}'", path, v.substr(0, close + 1));
    if (shape.size() == kMaxRank) return invalid_argument("{}: the .npy shape has more than the {} dims a tensor may have", path, kMaxRank);
    shape.push_back(d);
    body.remove_prefix(static_cast<size_t>(end - body.data()));
    if (!body.empty() && body.front() != ',' && body.front() != ' ') {
      return invalid_argument("{}: bad .npy shape '{}'", path, v.substr(0, close + 1));
    }
  }
  return shape;
}

std::string npy_header(const Tensor& t, std::string_view descr) {
  std::string shape = "(";
  for (int64_t d : t.shape()) shape += std::to_string(d) + ", ";
  if (t.rank() > 1) shape.resize(shape.size() - 2);
  if (t.rank() == 1) shape.resize(shape.size() - 1);
  shape += ")";
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr, shape);
  // NumPy pads with spaces so the data starts at a multiple of 64 bytes, ending with '\n'.
  size_t unpadded = kMagic.size() + 2 + 2 + dict.size() + 1;
  dict.append(align_up(unpadded, 64) - unpadded, ' ');
  dict += '\n';
  return dict;
}

}  // namespace

Result<Tensor> read_npy_file(const std::string& path) {
  EMBER_ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> file, MappedFile::open(path));
  auto t = parse_npy(file->bytes(), path);
  EMBER_RETURN_IF_ERROR(file->check());
  return t;
}

Result<Tensor> parse_npy(std::span<const uint8_t> bytes, const std::string& path) {
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic.data(), kMagic.size()) != 0) {
    return invalid_argument("{}: not a .npy file (bad magic)", path);
  }
  uint8_t major = bytes[6];
  size_t header_len = 0;
  size_t start = 0;
  if (major == 1) {
    header_len = static_cast<size_t>(bytes[8]) | static_cast<size_t>(bytes[9]) << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return invalid_argument("{}: truncated .npy header", path);
    header_len = static_cast<size_t>(bytes[8]) | static_cast<size_t>(bytes[9]) << 8 |
                 static_cast<size_t>(bytes[10]) << 16 | static_cast<size_t>(bytes[11]) << 24;
    start = 12;
  } else {
    return not_implemented("{}: .npy format version {}.{} is not supported", path, major, bytes[7]);
  }
  if (header_len > bytes.size() - start) return invalid_argument("{}: truncated .npy header", path);
  std::string_view header(reinterpret_cast<const char*>(bytes.data() + start), header_len);
  EMBER_ASSIGN_OR_RETURN(DType dtype, parse_descr(header, path));
  EMBER_ASSIGN_OR_RETURN(std::string_view fortran, dict_value(header, "fortran_order", path));
  if (fortran.starts_with("True")) return not_implemented("{}: Fortran-order .npy arrays are not supported", path);
  if (!fortran.starts_with("False")) return invalid_argument("{}: bad .npy 'fortran_order'", path);
  EMBER_ASSIGN_OR_RETURN(Shape shape, parse_shape(header, path));
  size_t data_at = start + header_len;
  size_t available = bytes.size() - data_at;
  size_t numel = 1;
  for (int64_t d : shape) {
    if (d > 0 && numel > available / static_cast<size_t>(d)) numel = available + 1;  // saturate: too big anyway
    else numel *= static_cast<size_t>(d);
  }
  if (numel > available || numel * dtype_size(dtype) != available) {
    return invalid_argument("{}: .npy data has {} bytes, the header says {} {}", path, available, dtype_name(dtype),
                            shape_to_string(shape));
  }
  Tensor t = Tensor::allocate(dtype, std::move(shape));
  if (available) std::memcpy(t.data(), bytes.data() + data_at, available);
  if (dtype == DType::kBool) {
    auto* p = static_cast<uint8_t*>(t.data());
    for (size_t i = 0; i < available; ++i) p[i] = p[i] != 0;
  }
  return t;
}

Status write_npy_file(const std::string& path, const Tensor& t) {
  std::string_view descr;
  for (const DescrEntry& e : kDescrs) {
    if (e.dtype == t.dtype()) {
      descr = e.descr;
      break;
    }
  }
  if (descr.empty()) return not_implemented("cannot write {} to '{}': NumPy has no such dtype", t.describe(), path);
  std::string header = npy_header(t, descr);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return io_error("cannot create '{}'", path);
  out.write(kMagic.data(), static_cast<std::streamsize>(kMagic.size()));
  const char version_and_len[4] = {1, 0, static_cast<char>(header.size() & 0xff), static_cast<char>(header.size() >> 8)};
  out.write(version_and_len, 4);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  if (t.nbytes()) out.write(static_cast<const char*>(t.data()), static_cast<std::streamsize>(t.nbytes()));
  if (!out) return io_error("error writing '{}'", path);
  return Status::ok();
}

}  // namespace ember::onnx
