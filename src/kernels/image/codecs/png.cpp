// PNG through libpng's sequential read API, with the transforms that give
// 8-bit RGB as PIL's convert("RGB") does: palettes and low bit depths expanded,
// 16-bit samples keep their high byte, gray replicated, alpha dropped.
#include <csetjmp>
#include <cstring>
#include <string>

#include <png.h>

#include "kernels/image/codecs/codecs_internal.h"

namespace ember::image_codecs {
namespace {

struct Reader {
  std::span<const uint8_t> bytes;
  size_t offset = 0;
  std::string error;
};

void read_bytes(png_structp png, png_bytep out, size_t count) {
  auto* reader = static_cast<Reader*>(png_get_io_ptr(png));
  if (count > reader->bytes.size() - reader->offset) png_error(png, "the stream is truncated");
  std::memcpy(out, reader->bytes.data() + reader->offset, count);
  reader->offset += count;
}

void on_error(png_structp png, png_const_charp message) {
  static_cast<Reader*>(png_get_error_ptr(png))->error = message;
  png_longjmp(png, 1);
}

void on_warning(png_structp, png_const_charp) {}

// Decodes into `image` (owned by the caller, so the longjmp skips no destructor
// of this frame). Returns false with reader.error set on a libpng error.
bool decode_into(png_structp png, png_infop info, RgbImage& image, Status& size_status,
                 std::vector<png_bytep>& rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_info(png, info);
  size_status = check_dimensions("PNG", png_get_image_width(png, info), png_get_image_height(png, info));
  if (!size_status.is_ok()) return true;
  png_set_expand(png);
  png_set_strip_16(png);
  png_set_strip_alpha(png);
  png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  image = make_rgb_image(png_get_image_width(png, info), png_get_image_height(png, info));
  if (png_get_rowbytes(png, info) != static_cast<size_t>(image.width) * 3) {
    png_error(png, "the transforms did not give 8-bit RGB rows");
  }
  rows.resize(static_cast<size_t>(image.height));
  for (size_t y = 0; y < rows.size(); ++y) rows[y] = image.pixels.data() + y * static_cast<size_t>(image.width) * 3;
  png_read_image(png, rows.data());
  png_read_end(png, nullptr);
  return true;
}

}  // namespace

Result<RgbImage> decode_png(std::span<const uint8_t> bytes) {
  Reader reader;
  reader.bytes = bytes;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &reader, on_error, on_warning);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!info) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    return internal_error("libpng could not create its read structures");
  }
  png_set_read_fn(png, &reader, read_bytes);
  RgbImage image;
  Status size_status;
  std::vector<png_bytep> rows;
  const bool decoded = decode_into(png, info, image, size_status, rows);
  png_destroy_read_struct(&png, &info, nullptr);
  if (!decoded) return invalid_argument("malformed PNG: {}", reader.error);
  if (!size_status.is_ok()) return size_status;
  return image;
}

}  // namespace ember::image_codecs
