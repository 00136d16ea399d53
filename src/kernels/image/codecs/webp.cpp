// WebP (lossy and lossless, still images) through libwebp, decoded straight
// into the RGB buffer; alpha is dropped.
#include <webp/decode.h>

#include "kernels/image/codecs/codecs_internal.h"

namespace ember::image_codecs {
namespace {

const char* status_name(VP8StatusCode status) {
  switch (status) {
    case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
    case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR: return "bitstream error";
    case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported feature";
    case VP8_STATUS_SUSPENDED: return "decoding suspended";
    case VP8_STATUS_USER_ABORT: return "aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA: return "the stream is truncated";
    case VP8_STATUS_OK: break;
  }
  return "ok";
}

}  // namespace

Result<RgbImage> decode_webp(std::span<const uint8_t> bytes) {
  WebPDecoderConfig config;
  if (!WebPInitDecoderConfig(&config)) return internal_error("libwebp version mismatch");
  VP8StatusCode status = WebPGetFeatures(bytes.data(), bytes.size(), &config.input);
  if (status != VP8_STATUS_OK) return invalid_argument("malformed WebP: {}", status_name(status));
  if (config.input.has_animation) return not_implemented("animated WebP images are not supported");
  EMBER_RETURN_IF_ERROR(check_dimensions("WebP", config.input.width, config.input.height));
  RgbImage image = make_rgb_image(config.input.width, config.input.height);
  config.output.colorspace = MODE_RGB;
  config.output.is_external_memory = 1;
  config.output.u.RGBA.rgba = image.pixels.data();
  config.output.u.RGBA.stride = static_cast<int>(image.width * 3);
  config.output.u.RGBA.size = image.pixels.size();
  status = WebPDecode(bytes.data(), bytes.size(), &config);
  WebPFreeDecBuffer(&config.output);
  if (status != VP8_STATUS_OK) return invalid_argument("malformed WebP: {}", status_name(status));
  return image;
}

}  // namespace ember::image_codecs
