// decode_rgb: picks the decoder from the leading signature bytes.
#include <algorithm>
#include <array>

#include "kernels/image/codecs/codecs_internal.h"

namespace ember::image_codecs {
namespace {

bool starts_with(std::span<const uint8_t> bytes, std::initializer_list<uint8_t> prefix) {
  return bytes.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), bytes.begin());
}

}  // namespace

Status check_dimensions(std::string_view format, int64_t width, int64_t height) {
  if (width <= 0 || height <= 0) {
    return invalid_argument("{} image has size {}x{}; width and height must be positive", format, width, height);
  }
  if (width > kMaxPixels / height) {
    return invalid_argument("{} image of {}x{} pixels is over the decoder's limit of {} pixels", format, width,
                            height, kMaxPixels);
  }
  return Status::ok();
}

RgbImage make_rgb_image(int64_t width, int64_t height) {
  RgbImage image;
  image.width = width;
  image.height = height;
  image.pixels.assign(static_cast<size_t>(width * height * 3), 0);
  return image;
}

Result<RgbImage> decode_rgb(std::span<const uint8_t> bytes) {
  if (starts_with(bytes, {0xFF, 0xD8, 0xFF})) return decode_jpeg(bytes);
  if (starts_with(bytes, {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'})) return decode_png(bytes);
  if (starts_with(bytes, {'I', 'I', 42, 0}) || starts_with(bytes, {'M', 'M', 0, 42})) return decode_tiff(bytes);
  if (bytes.size() >= 12 && starts_with(bytes, {'R', 'I', 'F', 'F'}) &&
      std::equal(bytes.begin() + 8, bytes.begin() + 12, std::array<uint8_t, 4>{'W', 'E', 'B', 'P'}.begin())) {
    return decode_webp(bytes);
  }
  if (starts_with(bytes, {0, 0, 0, 12, 'j', 'P', ' ', ' ', '\r', '\n', 0x87, '\n'})) {
    return decode_jpeg2000(bytes, /*codestream_only=*/false);
  }
  if (starts_with(bytes, {0xFF, 0x4F, 0xFF, 0x51})) return decode_jpeg2000(bytes, /*codestream_only=*/true);
  if (starts_with(bytes, {'B', 'M'})) return decode_bmp(bytes);
  if (bytes.size() >= 2 && bytes[0] == 'P' && bytes[1] >= '1' && bytes[1] <= '7') return decode_pnm(bytes);
  if (bytes.empty()) return invalid_argument("the encoded image is empty");
  std::string head;
  for (size_t i = 0; i < std::min<size_t>(bytes.size(), 8); ++i) head += fmt::format("{:02x}", bytes[i]);
  return invalid_argument("unknown image format: leading bytes {} match none of JPEG, PNG, TIFF, WebP, "
                          "JPEG 2000, BMP or PNM",
                          head);
}

}  // namespace ember::image_codecs
