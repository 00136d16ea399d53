#pragma once
// Shared by the per-format decoders of decode_rgb (image_codec.h).
#include <string_view>

#include "kernels/image/codecs/image_codec.h"

namespace ember::image_codecs {

// Fails unless a width x height image is at least 1x1 and within kMaxPixels.
Status check_dimensions(std::string_view format, int64_t width, int64_t height);
// An RgbImage of the given (checked) size, its pixels zeroed.
RgbImage make_rgb_image(int64_t width, int64_t height);

Result<RgbImage> decode_jpeg(std::span<const uint8_t> bytes);      // jpeg.cpp
Result<RgbImage> decode_png(std::span<const uint8_t> bytes);       // png.cpp
Result<RgbImage> decode_tiff(std::span<const uint8_t> bytes);      // tiff.cpp
Result<RgbImage> decode_webp(std::span<const uint8_t> bytes);      // webp.cpp
Result<RgbImage> decode_jpeg2000(std::span<const uint8_t> bytes, bool codestream_only);  // jpeg2000.cpp
Result<RgbImage> decode_bmp(std::span<const uint8_t> bytes);       // bmp.cpp
Result<RgbImage> decode_pnm(std::span<const uint8_t> bytes);       // pnm.cpp

}  // namespace ember::image_codecs
