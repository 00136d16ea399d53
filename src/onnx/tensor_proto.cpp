#include "onnx/tensor_proto.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <vector>

#include "base/buffer.h"

namespace ember::onnx {
namespace {

using proto::Field;
using proto::Reader;
using proto::Where;

// TensorProto field numbers (onnx.proto).
enum : uint32_t {
  kDims = 1, kDataType = 2, kFloatData = 4, kInt32Data = 5, kStringData = 6, kInt64Data = 7, kName = 8,
  kRawData = 9, kDoubleData = 10, kUint64Data = 11, kExternalData = 13, kDataLocation = 14,
};
constexpr int64_t kLocationExternal = 1;
constexpr int32_t kOnnxString = 8;

struct TensorFields {
  std::string name;
  std::vector<int64_t> dims;
  int64_t data_type = 0;
  bool has_raw = false;
  std::span<const uint8_t> raw;
  std::vector<float> floats;
  std::vector<int32_t> int32s;
  std::vector<int64_t> int64s;
  std::vector<double> doubles;
  std::vector<uint64_t> uint64s;
  std::vector<std::string> strings;
  int64_t data_location = 0;
  std::vector<std::pair<std::string, std::string>> external;
};

Status read_string_entry(std::span<const uint8_t> bytes, const Where& w, std::pair<std::string, std::string>& out) {
  Reader r(bytes, w);
  Field f;
  while (!r.done()) {
    EMBER_RETURN_IF_ERROR(r.next(f));
    if (f.number == 1) EMBER_RETURN_IF_ERROR(proto::read_string(f, w.child("key"), out.first));
    if (f.number == 2) EMBER_RETURN_IF_ERROR(proto::read_string(f, w.child("value"), out.second));
  }
  return Status::ok();
}

Status read_tensor_fields(std::span<const uint8_t> bytes, const Where& w, TensorFields& t) {
  Reader r(bytes, w);
  Field f;
  while (!r.done()) {
    EMBER_RETURN_IF_ERROR(r.next(f));
    switch (f.number) {
      case kDims: EMBER_RETURN_IF_ERROR(proto::append_varints(f, w.child("dims"), t.dims)); break;
      case kDataType: EMBER_RETURN_IF_ERROR(proto::read_int(f, w.child("data_type"), t.data_type)); break;
      case kFloatData: EMBER_RETURN_IF_ERROR(proto::append_floats(f, w.child("float_data"), t.floats)); break;
      case kInt32Data: EMBER_RETURN_IF_ERROR(proto::append_varints(f, w.child("int32_data"), t.int32s)); break;
      case kInt64Data: EMBER_RETURN_IF_ERROR(proto::append_varints(f, w.child("int64_data"), t.int64s)); break;
      case kDoubleData: EMBER_RETURN_IF_ERROR(proto::append_doubles(f, w.child("double_data"), t.doubles)); break;
      case kUint64Data: EMBER_RETURN_IF_ERROR(proto::append_varints(f, w.child("uint64_data"), t.uint64s)); break;
      case kName: EMBER_RETURN_IF_ERROR(proto::read_string(f, w.child("name"), t.name)); break;
      case kRawData:
        EMBER_RETURN_IF_ERROR(proto::read_bytes(f, w.child("raw_data"), t.raw));
        t.has_raw = true;
        break;
      case kDataLocation: EMBER_RETURN_IF_ERROR(proto::read_int(f, w.child("data_location"), t.data_location)); break;
      case kExternalData: {
        Where ew = w.child("external_data", static_cast<int64_t>(t.external.size()));
        std::span<const uint8_t> entry;
        EMBER_RETURN_IF_ERROR(proto::read_bytes(f, ew, entry));
        EMBER_RETURN_IF_ERROR(read_string_entry(entry, ew, t.external.emplace_back()));
        break;
      }
      case kStringData: {
        std::span<const uint8_t> s;
        EMBER_RETURN_IF_ERROR(proto::read_bytes(f, w.child("string_data", static_cast<int64_t>(t.strings.size())), s));
        t.strings.emplace_back(reinterpret_cast<const char*>(s.data()), s.size());
        break;
      }
      default: break;  // segment, doc_string, metadata: not needed
    }
  }
  return Status::ok();
}

std::string_view onnx_type_name(int64_t t) {
  static constexpr std::string_view kNames[] = {
      "UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64", "STRING", "BOOL",
      "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN",
      "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4", "INT4", "FLOAT4E2M1", "FLOAT8E8M0",
      "UINT2", "INT2", "FLOAT6E2M3", "FLOAT6E3M2"};
  if (t < 0 || t >= static_cast<int64_t>(std::size(kNames))) return "unknown";
  return kNames[t];
}

// Views `data` in place when it is aligned for the dtype and kept alive; otherwise
// copies into aligned storage, because a misaligned typed load is undefined behavior.
// Bool bytes other than 0/1 are normalized (loading them as bool is undefined too).
Tensor view_or_copy(DType dtype, Shape shape, const uint8_t* data, size_t nbytes, std::shared_ptr<const void> keep_alive) {
  bool aligned = reinterpret_cast<uintptr_t>(data) % std::max<size_t>(dtype_size(dtype), 1) == 0;
  bool clean_bools = dtype != DType::kBool || std::all_of(data, data + nbytes, [](uint8_t b) { return b <= 1; });
  if (keep_alive && aligned && clean_bools && nbytes > 0) return Tensor(dtype, std::move(shape), data, std::move(keep_alive));
  Tensor t = Tensor::allocate(dtype, std::move(shape));
  if (nbytes == 0) return t;
  if (dtype == DType::kBool) {
    auto* out = static_cast<uint8_t*>(t.data());
    for (size_t i = 0; i < nbytes; ++i) out[i] = data[i] != 0;
  } else {
    std::memcpy(t.data(), data, nbytes);
  }
  return t;
}

template <typename Src, typename Dst, typename Convert>
Tensor decode_values(DType dtype, Shape shape, const std::vector<Src>& src, Convert convert) {
  Tensor t = Tensor::allocate(dtype, std::move(shape));
  Dst* out = t.data_as<Dst>();
  for (size_t i = 0; i < src.size(); ++i) out[i] = convert(src[i]);
  return t;
}

// The narrow types keep bit codes in int32_data: one element per value for the
// 8-bit types, one packed byte (2 or 4 elements, low bits first) for the others.
Result<Tensor> decode_narrow_int32s(const TensorFields& t, DType dtype, Shape shape, const std::string& label) {
  const size_t nbytes = dtype_nbytes(dtype, shape_numel(shape));
  if (t.int32s.size() != nbytes) {
    return invalid_model("{} ({} {}) has {} values in int32_data, expected {}", label, dtype_name(dtype),
                         shape_to_string(shape), t.int32s.size(), nbytes);
  }
  Tensor out = Tensor::allocate(dtype, std::move(shape));
  auto* bytes = static_cast<uint8_t*>(out.data());
  for (size_t i = 0; i < nbytes; ++i) bytes[i] = static_cast<uint8_t>(t.int32s[i]);
  return out;
}

// Decodes values stored in the typed repeated fields into owned storage.
Result<Tensor> decode_typed(const TensorFields& t, DType dtype, Shape shape, const std::string& label) {
  auto numel = static_cast<size_t>(shape_numel(shape));
  auto check = [&](size_t count, std::string_view field) -> Status {
    if (count == numel) return Status::ok();
    if (count == 0 && numel > 0) return invalid_model("{} ({} {}) has no data", label, dtype_name(dtype), shape_to_string(shape));
    return invalid_model("{} has {} values in {}, expected {} for shape {}", label, count, field, numel, shape_to_string(shape));
  };
  auto same = [](auto v) { return v; };
  switch (dtype) {
    case DType::kF32:
      EMBER_RETURN_IF_ERROR(check(t.floats.size(), "float_data"));
      return decode_values<float, float>(dtype, std::move(shape), t.floats, same);
    case DType::kF64:
      EMBER_RETURN_IF_ERROR(check(t.doubles.size(), "double_data"));
      return decode_values<double, double>(dtype, std::move(shape), t.doubles, same);
    case DType::kI64:
      EMBER_RETURN_IF_ERROR(check(t.int64s.size(), "int64_data"));
      return decode_values<int64_t, int64_t>(dtype, std::move(shape), t.int64s, same);
    case DType::kU32:
    case DType::kU64:
      EMBER_RETURN_IF_ERROR(check(t.uint64s.size(), "uint64_data"));
      if (dtype == DType::kU64) return decode_values<uint64_t, uint64_t>(dtype, std::move(shape), t.uint64s, same);
      return decode_values<uint64_t, uint32_t>(dtype, std::move(shape), t.uint64s,
                                               [](uint64_t v) { return static_cast<uint32_t>(v); });
    default: break;
  }
  if (dtype_is_narrow(dtype)) return decode_narrow_int32s(t, dtype, std::move(shape), label);
  // Everything narrower than 32 bits is widened into int32_data; f16/bf16 keep their bits.
  EMBER_RETURN_IF_ERROR(check(t.int32s.size(), "int32_data"));
  auto bits16 = [](int32_t v) { return static_cast<uint16_t>(v); };
  switch (dtype) {
    case DType::kI32: return decode_values<int32_t, int32_t>(dtype, std::move(shape), t.int32s, same);
    case DType::kI16: return decode_values<int32_t, int16_t>(dtype, std::move(shape), t.int32s, [](int32_t v) { return static_cast<int16_t>(v); });
    case DType::kI8: return decode_values<int32_t, int8_t>(dtype, std::move(shape), t.int32s, [](int32_t v) { return static_cast<int8_t>(v); });
    case DType::kU16:
    case DType::kF16:
    case DType::kBF16: return decode_values<int32_t, uint16_t>(dtype, std::move(shape), t.int32s, bits16);
    case DType::kU8: return decode_values<int32_t, uint8_t>(dtype, std::move(shape), t.int32s, [](int32_t v) { return static_cast<uint8_t>(v); });
    case DType::kBool: return decode_values<int32_t, bool>(dtype, std::move(shape), t.int32s, [](int32_t v) { return v != 0; });
    default: return internal_error("{}: no typed decoding for {}", label, dtype_name(dtype));
  }
}

Result<int64_t> parse_decimal(const std::string& text, const std::string& what) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0) {
    return invalid_model("{} '{}' is not a non-negative integer", what, text);
  }
  return v;
}

Result<Tensor> load_external(const TensorFields& t, DType dtype, const Shape& shape, const std::string& label,
                             TensorContext& ctx) {
  std::string location;
  int64_t offset = 0;
  int64_t length = -1;
  for (const auto& [key, value] : t.external) {
    if (key == "location") {
      location = value;
    } else if (key == "offset") {
      EMBER_ASSIGN_OR_RETURN(offset, parse_decimal(value, label + ": external data offset"));
    } else if (key == "length") {
      EMBER_ASSIGN_OR_RETURN(length, parse_decimal(value, label + ": external data length"));
    }
  }
  if (location.empty()) return invalid_model("{} has external data without a 'location'", label);
  if (!ctx.external) return invalid_model("{} refers to external data '{}', which cannot be resolved here", label, location);
  return ctx.external->load(t.name, dtype, shape, location, offset, length);
}

// The dims as a Shape, refused when negative or when the element count times
// `element_bytes` could overflow; real sizes are checked against the data after.
Result<Shape> checked_shape(const TensorFields& t, size_t element_bytes, const std::string& label) {
  constexpr int64_t kMaxBytes = int64_t{1} << 60;
  const int64_t max_elements = kMaxBytes / static_cast<int64_t>(std::max<size_t>(element_bytes, 1));
  if (t.dims.size() > kMaxRank) return invalid_model("{} has {} dims, past the {} a tensor may have", label, t.dims.size(), kMaxRank);
  Shape shape;
  int64_t numel = 1;
  for (int64_t d : t.dims) {
    if (d < 0) return invalid_model("{} has a negative dimension in {}", label, shape_to_string(t.dims));
    shape.push_back(d);
  }
  // The product of the non-zero dims bounds every partial product (in any order), even of an empty tensor.
  for (int64_t d : shape) {
    if (d == 0) continue;
    if (numel > max_elements / d) return invalid_model("{} has an impossibly large shape {}", label, shape_to_string(t.dims));
    numel *= d;
  }
  return shape;
}

// String elements live only in string_data (onnx.proto: raw_data cannot hold them).
Result<NamedTensor> decode_strings(const TensorFields& t, const std::string& label) {
  if (t.has_raw || t.data_location == kLocationExternal) {
    return invalid_model("{} is a string tensor with raw or external data; strings belong in string_data", label);
  }
  EMBER_ASSIGN_OR_RETURN(Shape shape, checked_shape(t, sizeof(std::string), label));
  if (t.strings.size() != static_cast<size_t>(shape_numel(shape))) {
    return invalid_model("{} has {} values in string_data, expected {} for shape {}", label, t.strings.size(),
                         shape_numel(shape), shape_to_string(shape));
  }
  NamedTensor out{t.name, Tensor::allocate(DType::kString, std::move(shape))};
  std::copy(t.strings.begin(), t.strings.end(), out.tensor.data_as<std::string>());
  return out;
}

}  // namespace

ExternalData::ExternalData(const std::string& base_dir) : base_dir_(base_dir.empty() ? "." : base_dir) {}

Result<Tensor> ExternalData::load(const std::string& tensor_name, DType dtype, const Shape& shape,
                                  const std::string& location, int64_t offset, int64_t length) {
  namespace fs = std::filesystem;
  fs::path rel(location);
  if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory()) {
    return invalid_model("tensor '{}': external data location '{}' must be a path relative to the model's folder",
                         tensor_name, location);
  }
  std::error_code ec;
  fs::path base = fs::weakly_canonical(base_dir_, ec);
  if (ec) return io_error("tensor '{}': cannot resolve the model folder '{}': {}", tensor_name, base_dir_.string(), ec.message());
  fs::path full = fs::weakly_canonical(base / rel, ec);
  if (ec) return io_error("tensor '{}': cannot resolve external data '{}': {}", tensor_name, location, ec.message());
  // Component-wise prefix test: "../x" and symlinks pointing elsewhere resolve outside.
  auto [base_end, full_it] = std::mismatch(base.begin(), base.end(), full.begin(), full.end());
  if (base_end != base.end() || full_it == full.end()) {
    return invalid_model("tensor '{}': external data location '{}' resolves to '{}', outside the model's folder '{}'",
                         tensor_name, location, full.string(), base.string());
  }
  std::string key = full.string();
  auto it = files_.find(key);
  if (it == files_.end()) {
    auto opened = MappedFile::open(key);
    if (!opened) return opened.status().with_context(fmt::format("tensor '{}': external data: ", tensor_name));
    it = files_.emplace(key, std::move(opened).value()).first;
  }
  const std::shared_ptr<MappedFile>& file = it->second;
  auto nbytes = static_cast<int64_t>(dtype_nbytes(dtype, shape_numel(shape)));
  if (length < 0) length = nbytes;
  if (length != nbytes) {
    return invalid_model("tensor '{}' ({} {}) needs {} bytes but its external data length in '{}' is {}", tensor_name,
                         dtype_name(dtype), shape_to_string(shape), nbytes, location, length);
  }
  auto file_size = static_cast<int64_t>(file->bytes().size());
  if (offset > file_size || length > file_size - offset) {
    return invalid_model("tensor '{}': external data bytes [{}, {}) lie outside '{}', which has {} bytes", tensor_name,
                         offset, offset + length, location, file_size);
  }
  return view_or_copy(dtype, shape, file->bytes().data() + offset, static_cast<size_t>(length), file);
}

Result<NamedTensor> decode_tensor(std::span<const uint8_t> bytes, const Where& where, TensorContext& ctx) {
  TensorFields t;
  EMBER_RETURN_IF_ERROR(read_tensor_fields(bytes, where, t));
  std::string label = fmt::format("{}: tensor '{}'", where.path(), t.name);
  if (t.data_type == kOnnxString) return decode_strings(t, label);
  if (t.data_type == 0) return invalid_model("{} has no data_type", label);
  if (t.data_type > INT32_MAX || !dtype_is_known(static_cast<int32_t>(t.data_type))) {
    return not_implemented("{} has data type {} ({}), which is not supported", label, t.data_type,
                           onnx_type_name(t.data_type));
  }
  auto dtype = static_cast<DType>(t.data_type);
  EMBER_ASSIGN_OR_RETURN(Shape shape, checked_shape(t, dtype_size(dtype), label));
  const int64_t numel = shape_numel(shape);
  NamedTensor out{t.name, {}};
  if (t.data_location == kLocationExternal) {
    EMBER_ASSIGN_OR_RETURN(out.tensor, load_external(t, dtype, shape, label, ctx));
    return out;
  }
  if (t.has_raw) {
    size_t nbytes = dtype_nbytes(dtype, numel);
    if (t.raw.size() != nbytes) {
      return invalid_model("{} ({} {}) has {} bytes of raw_data, expected {}", label, dtype_name(dtype),
                           shape_to_string(shape), t.raw.size(), nbytes);
    }
    out.tensor = view_or_copy(dtype, std::move(shape), t.raw.data(), nbytes, ctx.keep_alive);
    return out;
  }
  EMBER_ASSIGN_OR_RETURN(out.tensor, decode_typed(t, dtype, std::move(shape), label));
  return out;
}

Result<NamedTensor> parse_tensor_proto(std::span<const uint8_t> bytes) {
  TensorContext ctx;
  Where root{nullptr, "TensorProto"};
  return decode_tensor(bytes, root, ctx);
}

Status ExternalData::check() const {
  for (const auto& [location, file] : files_) EMBER_RETURN_IF_ERROR(file->check());
  return Status::ok();
}

Result<NamedTensor> read_tensor_proto_file(const std::string& path) {
  EMBER_ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> file, MappedFile::open(path));
  ExternalData external(std::filesystem::path(path).parent_path().string());
  TensorContext ctx{file, &external};
  Where root{nullptr, "TensorProto"};
  auto result = decode_tensor(file->bytes(), root, ctx);
  EMBER_RETURN_IF_ERROR(file->check());
  EMBER_RETURN_IF_ERROR(external.check());
  if (!result) return result.status().with_context(path + ": ");
  return result;
}

std::string serialize_tensor_proto(const Tensor& t, const std::string& name) {
  proto::Writer w;
  for (int64_t d : t.shape()) w.varint_field(kDims, static_cast<uint64_t>(d));
  w.varint_field(kDataType, static_cast<uint64_t>(t.dtype()));
  w.string_field(kName, name);
  if (t.dtype() == DType::kString) {
    for (int64_t i = 0; i < t.numel(); ++i) w.string_field(kStringData, t.data_as<std::string>()[i]);
    return w.take();
  }
  w.bytes_field(kRawData, {static_cast<const uint8_t*>(t.data()), t.nbytes()});
  return w.take();
}

}  // namespace ember::onnx
