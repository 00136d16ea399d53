// Netpbm images parsed here: P1/P4 (bitmap, 1 is black), P2/P5 (gray) and
// P3/P6 (RGB), ASCII or binary, maxval up to 65535 (two big-endian bytes per
// binary sample above 255), samples scaled to 8 bits. PAM (P7) is refused.
#include <cctype>
#include <optional>

#include "kernels/image/codecs/codecs_internal.h"

namespace ember::image_codecs {
namespace {

class Parser {
 public:
  explicit Parser(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  // The next decimal number after whitespace and '#' comments, or nullopt.
  std::optional<uint32_t> number() {
    skip_space();
    if (pos_ >= bytes_.size() || !std::isdigit(bytes_[pos_])) return std::nullopt;
    uint64_t v = 0;
    while (pos_ < bytes_.size() && std::isdigit(bytes_[pos_])) {
      v = v * 10 + (bytes_[pos_++] - '0');
      if (v > UINT32_MAX) return std::nullopt;
    }
    return static_cast<uint32_t>(v);
  }
  // A P1 sample: one '0' or '1', digits need no separator.
  std::optional<uint32_t> bit() {
    skip_space();
    if (pos_ >= bytes_.size() || (bytes_[pos_] != '0' && bytes_[pos_] != '1')) return std::nullopt;
    return bytes_[pos_++] - '0';
  }
  // After the header of a binary format: exactly one whitespace byte.
  bool end_header() {
    if (pos_ >= bytes_.size() || !std::isspace(bytes_[pos_])) return false;
    ++pos_;
    return true;
  }
  size_t pos() const { return pos_; }

 private:
  void skip_space() {
    while (pos_ < bytes_.size()) {
      if (bytes_[pos_] == '#') {
        while (pos_ < bytes_.size() && bytes_[pos_] != '\n' && bytes_[pos_] != '\r') ++pos_;
      } else if (std::isspace(bytes_[pos_])) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  std::span<const uint8_t> bytes_;
  size_t pos_ = 2;  // past the magic number
};

Status malformed(char kind, std::string_view what) { return invalid_argument("malformed PNM (P{}): {}", kind, what); }

}  // namespace

Result<RgbImage> decode_pnm(std::span<const uint8_t> bytes) {
  const char kind = static_cast<char>(bytes[1]);
  if (kind == '7') return not_implemented("PAM images (P7)");
  Parser parser(bytes);
  const auto width = parser.number();
  const auto height = parser.number();
  if (!width || !height) return malformed(kind, "the header has no width and height");
  EMBER_RETURN_IF_ERROR(check_dimensions("PNM", *width, *height));
  const bool bitmap = kind == '1' || kind == '4';
  const bool color = kind == '3' || kind == '6';
  const bool binary = kind >= '4';
  uint32_t maxval = 1;
  if (!bitmap) {
    const auto m = parser.number();
    if (!m || *m < 1 || *m > 65535) return malformed(kind, "maxval must be 1 to 65535");
    maxval = *m;
  }
  if (binary && !parser.end_header()) return malformed(kind, "no whitespace after the header");

  const size_t channels = color ? 3 : 1;
  const size_t count = size_t{*width} * *height * channels;  // samples
  const size_t sample_bytes = maxval > 255 ? 2 : 1;
  const size_t row_bytes = bitmap ? (size_t{*width} + 7) / 8 : size_t{*width} * channels * sample_bytes;
  if (binary && (bytes.size() - parser.pos()) / row_bytes < *height) {
    return malformed(kind, fmt::format("{}x{} pixels need {} bytes of data, the file has {}", *width, *height,
                                       row_bytes * *height, bytes.size() - parser.pos()));
  }
  std::vector<uint8_t> samples(count);
  for (size_t i = 0; i < count; ++i) {
    uint32_t v = 0;
    if (kind == '1') {
      const auto b = parser.bit();
      if (!b) return malformed(kind, fmt::format("pixel {} of {} is missing or not 0/1", i, count));
      v = *b;
    } else if (kind == '4') {
      const size_t x = i % *width, y = i / *width;
      v = (bytes[parser.pos() + y * row_bytes + x / 8] >> (7 - x % 8)) & 1;
    } else if (binary) {
      const size_t at = parser.pos() + i * sample_bytes;
      v = sample_bytes == 2 ? (uint32_t{bytes[at]} << 8) | bytes[at + 1] : bytes[at];
    } else {
      const auto n = parser.number();
      if (!n) return malformed(kind, fmt::format("sample {} of {} is missing or not a number", i, count));
      v = *n;
    }
    if (v > maxval) return malformed(kind, fmt::format("sample {} is {}, over maxval {}", i, v, maxval));
    // Bitmaps store 1 for black; other kinds scale [0, maxval] to [0, 255], rounding.
    samples[i] = bitmap ? (v ? 0 : 255) : static_cast<uint8_t>((uint64_t{v} * 255 + maxval / 2) / maxval);
  }
  RgbImage image = make_rgb_image(*width, *height);
  for (size_t p = 0; p < size_t{*width} * *height; ++p) {
    for (size_t c = 0; c < 3; ++c) image.pixels[p * 3 + c] = samples[p * channels + (color ? c : 0)];
  }
  return image;
}

}  // namespace ember::image_codecs
