#include "onnx/proto_wire.h"

#include <bit>
#include <cstring>

namespace ember::onnx::proto {
namespace {

static_assert(std::endian::native == std::endian::little, "fixed32/fixed64 payloads are read as host integers");

std::string_view wire_name(WireType t) {
  switch (t) {
    case WireType::kVarint: return "varint";
    case WireType::kFixed64: return "fixed64";
    case WireType::kLen: return "length-delimited";
    case WireType::kFixed32: return "fixed32";
  }
  return "unknown";
}

Status expect_wire(const Field& f, const Where& w, WireType want) {
  if (f.wire == want) return Status::ok();
  return malformed(w, "expected wire type {} for field {}, got {}", wire_name(want), f.number, wire_name(f.wire));
}

// Decodes varints from a packed payload; a varint is at most 10 bytes and the
// 10th carries one bit.
Status decode_varint(std::span<const uint8_t> data, size_t& pos, uint64_t& v, const Where& w, std::string_view what) {
  v = 0;
  for (int i = 0; i < 10; ++i) {
    if (pos >= data.size()) return malformed(w, "{} runs past the end of the buffer", what);
    uint8_t b = data[pos++];
    if (i == 9 && b > 1) return malformed(w, "{} is longer than 64 bits", what);
    v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) return Status::ok();
  }
  return malformed(w, "{} is longer than 10 bytes", what);
}

template <typename T>
Status append_fixed(const Field& f, const Where& w, std::vector<T>& out, WireType scalar_wire) {
  if (f.wire == scalar_wire) {
    T v;
    std::memcpy(&v, &f.scalar, sizeof(T));  // little-endian: the low bytes hold a fixed32
    out.push_back(v);
    return Status::ok();
  }
  EMBER_RETURN_IF_ERROR(expect_wire(f, w, WireType::kLen));
  if (f.bytes.size() % sizeof(T) != 0) {
    return malformed(w, "packed payload of {} bytes is not a multiple of {}", f.bytes.size(), sizeof(T));
  }
  size_t n = f.bytes.size() / sizeof(T);
  size_t old = out.size();
  out.resize(old + n);
  if (n) std::memcpy(out.data() + old, f.bytes.data(), f.bytes.size());
  return Status::ok();
}

}  // namespace

std::string Where::path() const {
  std::string s = parent ? parent->path() + "." : std::string();
  s += field;
  if (index >= 0) s += fmt::format("[{}]", index);
  return s;
}

Status Reader::read_varint(uint64_t& v, std::string_view what) { return decode_varint(data_, pos_, v, where_, what); }

Status Reader::next(Field& f) {
  uint64_t tag;
  size_t at = pos_;
  EMBER_RETURN_IF_ERROR(read_varint(tag, "a field tag"));
  uint64_t number = tag >> 3;
  if (number == 0 || number > 0x1fffffff) return malformed(where_, "invalid field number {} at byte {}", number, at);
  f.number = static_cast<uint32_t>(number);
  auto wire = static_cast<uint32_t>(tag & 7);
  f.bytes = {};
  f.scalar = 0;
  switch (wire) {
    case 0:
      f.wire = WireType::kVarint;
      return read_varint(f.scalar, fmt::format("the varint of field {}", number));
    case 1:
    case 5: {
      size_t n = wire == 1 ? 8 : 4;
      f.wire = wire == 1 ? WireType::kFixed64 : WireType::kFixed32;
      if (data_.size() - pos_ < n) return malformed(where_, "fixed{} field {} runs past the end of the buffer", n * 8, number);
      std::memcpy(&f.scalar, data_.data() + pos_, n);
      pos_ += n;
      return Status::ok();
    }
    case 2: {
      f.wire = WireType::kLen;
      uint64_t len;
      EMBER_RETURN_IF_ERROR(read_varint(len, fmt::format("the length of field {}", number)));
      if (len > data_.size() - pos_) {
        return malformed(where_, "length {} of field {} runs past the end of the buffer ({} bytes left)", len, number,
                         data_.size() - pos_);
      }
      f.bytes = data_.subspan(pos_, static_cast<size_t>(len));
      pos_ += static_cast<size_t>(len);
      return Status::ok();
    }
    default:
      return malformed(where_, "unsupported wire type {} for field {} at byte {}", wire, number, at);
  }
}

Status read_int(const Field& f, const Where& w, int64_t& out) {
  EMBER_RETURN_IF_ERROR(expect_wire(f, w, WireType::kVarint));
  out = static_cast<int64_t>(f.scalar);
  return Status::ok();
}

Status read_float(const Field& f, const Where& w, float& out) {
  EMBER_RETURN_IF_ERROR(expect_wire(f, w, WireType::kFixed32));
  auto bits = static_cast<uint32_t>(f.scalar);
  std::memcpy(&out, &bits, 4);
  return Status::ok();
}

Status read_bytes(const Field& f, const Where& w, std::span<const uint8_t>& out) {
  EMBER_RETURN_IF_ERROR(expect_wire(f, w, WireType::kLen));
  out = f.bytes;
  return Status::ok();
}

Status read_string(const Field& f, const Where& w, std::string& out) {
  EMBER_RETURN_IF_ERROR(expect_wire(f, w, WireType::kLen));
  out.assign(reinterpret_cast<const char*>(f.bytes.data()), f.bytes.size());
  return Status::ok();
}

template <typename T>
Status append_varints(const Field& f, const Where& w, std::vector<T>& out) {
  if (f.wire == WireType::kVarint) {
    out.push_back(static_cast<T>(f.scalar));
    return Status::ok();
  }
  EMBER_RETURN_IF_ERROR(expect_wire(f, w, WireType::kLen));
  size_t pos = 0;
  while (pos < f.bytes.size()) {
    uint64_t v;
    EMBER_RETURN_IF_ERROR(decode_varint(f.bytes, pos, v, w, "a packed varint"));
    out.push_back(static_cast<T>(v));
  }
  return Status::ok();
}

template Status append_varints<int32_t>(const Field&, const Where&, std::vector<int32_t>&);
template Status append_varints<int64_t>(const Field&, const Where&, std::vector<int64_t>&);
template Status append_varints<uint64_t>(const Field&, const Where&, std::vector<uint64_t>&);

Status append_floats(const Field& f, const Where& w, std::vector<float>& out) {
  return append_fixed(f, w, out, WireType::kFixed32);
}

Status append_doubles(const Field& f, const Where& w, std::vector<double>& out) {
  return append_fixed(f, w, out, WireType::kFixed64);
}

void Writer::varint(uint64_t v) {
  while (v >= 0x80) {
    out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out_.push_back(static_cast<char>(v));
}

void Writer::varint_field(uint32_t number, uint64_t v) {
  varint(static_cast<uint64_t>(number) << 3);
  varint(v);
}

void Writer::bytes_field(uint32_t number, std::span<const uint8_t> bytes) {
  varint((static_cast<uint64_t>(number) << 3) | 2);
  varint(bytes.size());
  if (!bytes.empty()) out_.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

void Writer::string_field(uint32_t number, std::string_view s) {
  bytes_field(number, {reinterpret_cast<const uint8_t*>(s.data()), s.size()});
}

}  // namespace ember::onnx::proto
