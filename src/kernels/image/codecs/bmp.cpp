// BMP (Windows bitmap) parsed here: the core (OS/2, 12-byte) and the
// BITMAPINFOHEADER family of headers, uncompressed 1/4/8-bit palette and
// 16/24/32-bit pixels, and BI_BITFIELDS masks at 16 and 32 bits. RLE and
// embedded JPEG/PNG compressions are refused. Every read is bounds-checked.
#include <algorithm>
#include <bit>
#include <string>

#include "kernels/image/codecs/codecs_internal.h"

namespace ember::image_codecs {
namespace {

constexpr uint32_t kBiRgb = 0, kBiBitfields = 3;

uint32_t read_le(std::span<const uint8_t> bytes, size_t offset, size_t width) {
  uint32_t v = 0;
  for (size_t i = 0; i < width; ++i) v |= static_cast<uint32_t>(bytes[offset + i]) << (8 * i);
  return v;
}

// One channel of a bitfield mask, scaled to 8 bits (a zero mask reads as 0).
struct Channel {
  uint32_t mask = 0;
  int shift = 0;
  uint32_t max = 0;

  explicit Channel(uint32_t m) : mask(m) {
    if (m == 0) return;
    shift = std::countr_zero(m);
    max = m >> shift;
  }
  uint8_t extract(uint32_t pixel) const {
    if (max == 0) return 0;
    const uint64_t v = (pixel & mask) >> shift;
    return static_cast<uint8_t>((v * 255 + max / 2) / max);
  }
};

Status malformed(std::string_view what) { return invalid_argument("malformed BMP: {}", what); }

}  // namespace

Result<RgbImage> decode_bmp(std::span<const uint8_t> bytes) {
  if (bytes.size() < 14 + 12) return malformed("the file is shorter than its headers");
  const uint32_t data_offset = read_le(bytes, 10, 4);
  const uint32_t header_size = read_le(bytes, 14, 4);
  if (header_size < 12 || header_size > 124) return malformed(fmt::format("info header size {}", header_size));
  if (header_size != 12 && header_size < 40) {
    return not_implemented("BMP info header of {} bytes (12 and 40-124 are supported)", header_size);
  }
  if (bytes.size() < 14 + size_t{header_size}) return malformed("the file is shorter than its info header");
  const bool core = header_size == 12;
  // The core header's sizes are unsigned 16-bit; later headers' are signed 32-bit.
  const int64_t width = core ? int64_t{read_le(bytes, 18, 2)} : int64_t{static_cast<int32_t>(read_le(bytes, 18, 4))};
  const int64_t signed_height =
      core ? int64_t{read_le(bytes, 20, 2)} : int64_t{static_cast<int32_t>(read_le(bytes, 22, 4))};
  const uint32_t bit_count = core ? read_le(bytes, 24, 2) : read_le(bytes, 28, 2);
  const uint32_t compression = core ? kBiRgb : read_le(bytes, 30, 4);
  const uint32_t colors_used = core ? 0 : read_le(bytes, 46, 4);
  const bool top_down = signed_height < 0;
  const int64_t height = top_down ? -signed_height : signed_height;
  EMBER_RETURN_IF_ERROR(check_dimensions("BMP", width, height));

  std::vector<uint8_t> palette;  // RGB triples
  uint32_t masks[3] = {0x7C00, 0x03E0, 0x001F};  // BI_RGB at 16 bits is 5-5-5
  if (bit_count == 32) masks[0] = 0xFF0000, masks[1] = 0xFF00, masks[2] = 0xFF;
  if (compression == kBiBitfields) {
    if (bit_count != 16 && bit_count != 32) return malformed("BI_BITFIELDS needs 16 or 32 bits per pixel");
    // The masks follow a 40-byte header; later headers hold them at the same place.
    if (bytes.size() < 14 + 40 + 12) return malformed("the file is shorter than its bitfield masks");
    for (size_t c = 0; c < 3; ++c) masks[c] = read_le(bytes, 14 + 40 + 4 * c, 4);
  } else if (compression != kBiRgb) {
    return not_implemented("BMP compression {} (only uncompressed and BI_BITFIELDS are supported)", compression);
  }
  if (bit_count == 1 || bit_count == 4 || bit_count == 8) {
    const size_t entry = core ? 3 : 4;
    const uint32_t entries = colors_used ? colors_used : (1u << bit_count);
    if (entries > (1u << bit_count)) return malformed(fmt::format("{} palette entries at {} bits", entries, bit_count));
    const size_t start = 14 + size_t{header_size};
    if (bytes.size() < start + entries * entry) return malformed("the file is shorter than its palette");
    palette.assign((size_t{1} << bit_count) * 3, 0);  // indices past `entries` read black
    for (size_t i = 0; i < entries; ++i) {
      const size_t at = start + i * entry;
      palette[i * 3 + 0] = bytes[at + 2];
      palette[i * 3 + 1] = bytes[at + 1];
      palette[i * 3 + 2] = bytes[at + 0];
    }
  } else if (bit_count != 16 && bit_count != 24 && bit_count != 32) {
    return not_implemented("BMP with {} bits per pixel", bit_count);
  }

  const uint64_t row_bytes = ((static_cast<uint64_t>(width) * bit_count + 31) / 32) * 4;
  if (data_offset > bytes.size() || (bytes.size() - data_offset) / row_bytes < static_cast<uint64_t>(height)) {
    return malformed(fmt::format("{}x{} pixels at {} bits need {} bytes of pixel data from offset {}, the file has {}",
                                 width, height, bit_count, row_bytes * height, data_offset, bytes.size()));
  }
  const Channel channels[3] = {Channel(masks[0]), Channel(masks[1]), Channel(masks[2])};
  RgbImage image = make_rgb_image(width, height);
  for (int64_t y = 0; y < height; ++y) {
    const int64_t file_row = top_down ? y : height - 1 - y;
    const size_t row = data_offset + static_cast<size_t>(file_row * row_bytes);
    uint8_t* out = image.pixels.data() + y * width * 3;
    for (int64_t x = 0; x < width; ++x, out += 3) {
      if (!palette.empty()) {
        const uint64_t bit = static_cast<uint64_t>(x) * bit_count;
        const uint32_t index = (bytes[row + bit / 8] >> (8 - bit_count - bit % 8)) & ((1u << bit_count) - 1);
        std::copy_n(palette.data() + index * 3, 3, out);
      } else if (bit_count == 24) {
        const size_t at = row + static_cast<size_t>(x) * 3;
        out[0] = bytes[at + 2], out[1] = bytes[at + 1], out[2] = bytes[at];
      } else {
        const uint32_t pixel = read_le(bytes, row + static_cast<size_t>(x) * (bit_count / 8), bit_count / 8);
        for (size_t c = 0; c < 3; ++c) out[c] = channels[c].extract(pixel);
      }
    }
  }
  return image;
}

}  // namespace ember::image_codecs
