#pragma once
// Decoding of encoded image bytes (ImageDecoder): the format is recognised from
// its signature, and the codec libraries (libjpeg-turbo, libpng, libtiff,
// libwebp, OpenJPEG) decode the compressed formats; BMP and PNM are parsed here.
#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"

namespace ember::image_codecs {

// An image decoded to 8-bit interleaved RGB, row-major: pixels[(y * width + x) * 3 + c].
struct RgbImage {
  int64_t height = 0;
  int64_t width = 0;
  std::vector<uint8_t> pixels;
};

// The largest image decoded: 2^28 pixels (768 MiB as RGB). A header announcing
// more is refused before any pixel buffer is allocated.
inline constexpr int64_t kMaxPixels = int64_t{1} << 28;

// Decodes `bytes` (JPEG, PNG, TIFF, WebP, JPEG 2000, BMP or PNM P1-P6) to RGB.
// An unknown signature, a truncated or malformed stream, or an image over
// kMaxPixels is an invalid_argument error naming the format and the problem.
Result<RgbImage> decode_rgb(std::span<const uint8_t> bytes);

}  // namespace ember::image_codecs
