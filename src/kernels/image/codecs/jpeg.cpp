// JPEG through libjpeg-turbo. libjpeg reports errors by calling error_exit,
// which must not return: it longjmps back to decode_into's setjmp. Corrupt-data
// warnings (a truncated stream, which libjpeg would pad with gray) are errors too.
#include <csetjmp>
#include <cstdio>

#include <jpeglib.h>

#include "kernels/image/codecs/codecs_internal.h"

namespace ember::image_codecs {
namespace {

struct ErrorManager {
  jpeg_error_mgr base;  // first member: libjpeg passes &base as cinfo->err
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void on_error(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  err->base.format_message(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

void on_message(j_common_ptr cinfo, int level) {
  if (level < 0) on_error(cinfo);  // a corrupt-data warning; trace messages (level >= 0) are dropped
}

// Decodes into `image` (owned by the caller, so the longjmp skips no destructor
// of this frame). Returns false with err.message set on a libjpeg error.
bool decode_into(jpeg_decompress_struct& cinfo, ErrorManager& err, std::span<const uint8_t> bytes, RgbImage& image,
                 Status& size_status) {
  if (setjmp(err.jump)) return false;
  jpeg_mem_src(&cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  size_status = check_dimensions("JPEG", cinfo.image_width, cinfo.image_height);
  if (!size_status.is_ok()) return true;
  // libjpeg converts grayscale and YCbCr to RGB; CMYK/YCCK fail with its "unsupported color conversion".
  cinfo.out_color_space = JCS_RGB;
  jpeg_start_decompress(&cinfo);
  image = make_rgb_image(cinfo.output_width, cinfo.output_height);
  const size_t stride = static_cast<size_t>(image.width) * 3;
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = image.pixels.data() + cinfo.output_scanline * stride;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  return true;
}

}  // namespace

Result<RgbImage> decode_jpeg(std::span<const uint8_t> bytes) {
  jpeg_decompress_struct cinfo{};
  ErrorManager err{};
  cinfo.err = jpeg_std_error(&err.base);
  err.base.error_exit = on_error;
  err.base.emit_message = on_message;
  jpeg_create_decompress(&cinfo);
  RgbImage image;
  Status size_status;
  const bool decoded = decode_into(cinfo, err, bytes, image, size_status);
  jpeg_destroy_decompress(&cinfo);
  if (!decoded) return invalid_argument("malformed JPEG: {}", err.message);
  if (!size_status.is_ok()) return size_status;
  return image;
}

}  // namespace ember::image_codecs
