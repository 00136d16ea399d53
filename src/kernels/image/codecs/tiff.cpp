// TIFF through libtiff's RGBA image interface (any photometric, bit depth and
// compression libtiff reads), first directory only, alpha dropped. Errors reach
// this decoder through per-handle handlers, not libtiff's global stderr ones.
#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include <tiffio.h>

#include "kernels/image/codecs/codecs_internal.h"

namespace ember::image_codecs {
namespace {

struct Source {
  std::span<const uint8_t> bytes;
  toff_t offset = 0;
  std::string error;
};

tmsize_t read_proc(thandle_t handle, void* out, tmsize_t count) {
  auto* src = static_cast<Source*>(handle);
  if (count < 0 || src->offset >= src->bytes.size()) return 0;
  const auto n = static_cast<tmsize_t>(std::min<toff_t>(static_cast<toff_t>(count), src->bytes.size() - src->offset));
  std::memcpy(out, src->bytes.data() + src->offset, static_cast<size_t>(n));
  src->offset += static_cast<toff_t>(n);
  return n;
}

tmsize_t write_proc(thandle_t, void*, tmsize_t) { return -1; }

toff_t seek_proc(thandle_t handle, toff_t offset, int whence) {
  auto* src = static_cast<Source*>(handle);
  toff_t base = 0;
  if (whence == SEEK_CUR) base = src->offset;
  if (whence == SEEK_END) base = src->bytes.size();
  src->offset = base + offset;  // reads past the end return 0 bytes
  return src->offset;
}

int close_proc(thandle_t) { return 0; }
toff_t size_proc(thandle_t handle) { return static_cast<Source*>(handle)->bytes.size(); }
int map_proc(thandle_t, void**, toff_t*) { return 0; }
void unmap_proc(thandle_t, void*, toff_t) {}

int on_error(TIFF*, void* user_data, const char* module, const char* format, va_list args) {
  auto* src = static_cast<Source*>(user_data);
  if (src->error.empty()) {  // the first error is the cause; later ones follow from it
    char message[512];
    std::vsnprintf(message, sizeof(message), format, args);
    src->error = module ? fmt::format("{}: {}", module, message) : std::string(message);
  }
  return 1;
}

int on_warning(TIFF*, void*, const char*, const char*, va_list) { return 1; }

struct TiffCloser {
  void operator()(TIFF* tif) const { TIFFClose(tif); }
};
struct OptionsFree {
  void operator()(TIFFOpenOptions* opts) const { TIFFOpenOptionsFree(opts); }
};

}  // namespace

Result<RgbImage> decode_tiff(std::span<const uint8_t> bytes) {
  Source src;
  src.bytes = bytes;
  std::unique_ptr<TIFFOpenOptions, OptionsFree> opts(TIFFOpenOptionsAlloc());
  if (!opts) return internal_error("libtiff could not allocate its open options");
  TIFFOpenOptionsSetErrorHandlerExtR(opts.get(), on_error, &src);
  TIFFOpenOptionsSetWarningHandlerExtR(opts.get(), on_warning, &src);
  // libtiff's own buffers (strips, tiles) stay within the size of the largest RGBA image.
  TIFFOpenOptionsSetMaxSingleMemAlloc(opts.get(), static_cast<tmsize_t>(kMaxPixels * 4));
  std::unique_ptr<TIFF, TiffCloser> tif(TIFFClientOpenExt("ImageDecoder input", "rm", &src, read_proc, write_proc,
                                                          seek_proc, close_proc, size_proc, map_proc, unmap_proc,
                                                          opts.get()));
  if (!tif) return invalid_argument("malformed TIFF: {}", src.error.empty() ? "cannot read the header" : src.error);
  uint32_t width = 0, height = 0;
  if (!TIFFGetField(tif.get(), TIFFTAG_IMAGEWIDTH, &width) || !TIFFGetField(tif.get(), TIFFTAG_IMAGELENGTH, &height)) {
    return invalid_argument("malformed TIFF: the first directory has no image width or length");
  }
  EMBER_RETURN_IF_ERROR(check_dimensions("TIFF", width, height));
  char reason[1024] = "";
  if (!TIFFRGBAImageOK(tif.get(), reason)) return not_implemented("TIFF image libtiff cannot convert to RGB: {}", reason);
  std::vector<uint32_t> rgba(static_cast<size_t>(width) * height);
  if (!TIFFReadRGBAImageOriented(tif.get(), width, height, rgba.data(), ORIENTATION_TOPLEFT, /*stop_on_error=*/1)) {
    return invalid_argument("malformed TIFF: {}", src.error.empty() ? "cannot decode the image data" : src.error);
  }
  RgbImage image = make_rgb_image(width, height);
  for (size_t i = 0; i < rgba.size(); ++i) {
    image.pixels[i * 3 + 0] = static_cast<uint8_t>(TIFFGetR(rgba[i]));
    image.pixels[i * 3 + 1] = static_cast<uint8_t>(TIFFGetG(rgba[i]));
    image.pixels[i * 3 + 2] = static_cast<uint8_t>(TIFFGetB(rgba[i]));
  }
  return image;
}

}  // namespace ember::image_codecs
