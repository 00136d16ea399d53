#pragma once
// The protobuf wire format, read in place: fields come back as spans into the
// caller's buffer, so large payloads (initializer raw_data) are never copied and
// no message size limit applies. Only what ONNX files use: varint, fixed32,
// fixed64 and length-delimited fields; groups are rejected.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "base/status.h"

namespace ember::onnx::proto {

enum class WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLen = 2, kFixed32 = 5 };

// A position in the message tree for error messages: "ModelProto.graph.node[3]".
// Lives on the stack of the parser; building the text happens only on error.
struct Where {
  const Where* parent = nullptr;
  std::string_view field;
  int64_t index = -1;

  Where child(std::string_view f, int64_t i = -1) const { return Where{this, f, i}; }
  std::string path() const;
};

template <typename... Args>
Status malformed(const Where& w, fmt::format_string<Args...> f, Args&&... args) {
  return invalid_model("while reading {}: {}", w.path(), fmt::format(f, std::forward<Args>(args)...));
}

struct Field {
  uint32_t number = 0;
  WireType wire = WireType::kVarint;
  uint64_t scalar = 0;             // the varint, fixed32 or fixed64 payload
  std::span<const uint8_t> bytes;  // the length-delimited payload
};

class Reader {
 public:
  Reader(std::span<const uint8_t> data, const Where& where) : data_(data), where_(where) {}
  bool done() const { return pos_ >= data_.size(); }
  // Reads the next field's tag and payload.
  Status next(Field& f);

 private:
  Status read_varint(uint64_t& v, std::string_view what);
  std::span<const uint8_t> data_;
  size_t pos_ = 0;
  const Where& where_;
};

// Typed reads of one field; `w` names the field. Each checks the wire type the
// schema gives the field.
Status read_int(const Field& f, const Where& w, int64_t& out);
Status read_float(const Field& f, const Where& w, float& out);
Status read_bytes(const Field& f, const Where& w, std::span<const uint8_t>& out);
Status read_string(const Field& f, const Where& w, std::string& out);

// Repeated scalars, packed (one length-delimited field) or not (one field per element).
// Varints are truncated to T as protobuf does for int32 fields.
template <typename T>
Status append_varints(const Field& f, const Where& w, std::vector<T>& out);
Status append_floats(const Field& f, const Where& w, std::vector<float>& out);
Status append_doubles(const Field& f, const Where& w, std::vector<double>& out);

extern template Status append_varints<int32_t>(const Field&, const Where&, std::vector<int32_t>&);
extern template Status append_varints<int64_t>(const Field&, const Where&, std::vector<int64_t>&);
extern template Status append_varints<uint64_t>(const Field&, const Where&, std::vector<uint64_t>&);

// Appends wire-format fields to a byte string.
class Writer {
 public:
  void varint_field(uint32_t number, uint64_t v);
  void bytes_field(uint32_t number, std::span<const uint8_t> bytes);
  void string_field(uint32_t number, std::string_view s);
  std::string take() { return std::move(out_); }

 private:
  void varint(uint64_t v);
  std::string out_;
};

}  // namespace ember::onnx::proto
