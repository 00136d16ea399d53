// JPEG 2000 (a JP2 file or a bare J2K codestream) through OpenJPEG. Gray, RGB
// and RGBA images whose components are not subsampled; samples of other
// precisions are shifted to 8 bits (signed ones offset first), as PIL does.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include <openjpeg.h>

#include "kernels/image/codecs/codecs_internal.h"

namespace ember::image_codecs {
namespace {

struct Source {
  std::span<const uint8_t> bytes;
  size_t offset = 0;
  std::string error;
};

OPJ_SIZE_T read_proc(void* out, OPJ_SIZE_T count, void* user) {
  auto* src = static_cast<Source*>(user);
  if (src->offset >= src->bytes.size()) return static_cast<OPJ_SIZE_T>(-1);  // OpenJPEG's end of stream
  const size_t n = std::min(count, src->bytes.size() - src->offset);
  std::memcpy(out, src->bytes.data() + src->offset, n);
  src->offset += n;
  return n;
}

OPJ_OFF_T skip_proc(OPJ_OFF_T count, void* user) {
  auto* src = static_cast<Source*>(user);
  const auto remaining = static_cast<OPJ_OFF_T>(src->bytes.size() - src->offset);
  const OPJ_OFF_T n = std::clamp<OPJ_OFF_T>(count, -static_cast<OPJ_OFF_T>(src->offset), remaining);
  src->offset = static_cast<size_t>(static_cast<OPJ_OFF_T>(src->offset) + n);
  return n;
}

OPJ_BOOL seek_proc(OPJ_OFF_T position, void* user) {
  auto* src = static_cast<Source*>(user);
  if (position < 0 || static_cast<uint64_t>(position) > src->bytes.size()) return OPJ_FALSE;
  src->offset = static_cast<size_t>(position);
  return OPJ_TRUE;
}

void on_error(const char* message, void* user) {
  auto* src = static_cast<Source*>(user);
  if (!src->error.empty()) return;  // the first error is the cause
  src->error = message;
  while (!src->error.empty() && src->error.back() == '\n') src->error.pop_back();
}

void on_quiet(const char*, void*) {}

struct CodecFree {
  void operator()(opj_codec_t* codec) const { opj_destroy_codec(codec); }
};
struct StreamFree {
  void operator()(opj_stream_t* stream) const { opj_stream_destroy(stream); }
};
struct ImageFree {
  void operator()(opj_image_t* image) const { opj_image_destroy(image); }
};

uint8_t to_u8(const opj_image_comp_t& comp, size_t i) {
  const int64_t offset = comp.sgnd ? int64_t{1} << (comp.prec - 1) : 0;
  const int64_t v = offset + comp.data[i];
  const int shift = 8 - static_cast<int>(comp.prec);
  return static_cast<uint8_t>(std::clamp<int64_t>(shift >= 0 ? v << shift : v >> -shift, 0, 255));
}

}  // namespace

Result<RgbImage> decode_jpeg2000(std::span<const uint8_t> bytes, bool codestream_only) {
  Source src;
  src.bytes = bytes;
  std::unique_ptr<opj_stream_t, StreamFree> stream(opj_stream_create(OPJ_J2K_STREAM_CHUNK_SIZE, OPJ_TRUE));
  std::unique_ptr<opj_codec_t, CodecFree> codec(opj_create_decompress(codestream_only ? OPJ_CODEC_J2K : OPJ_CODEC_JP2));
  if (!stream || !codec) return internal_error("OpenJPEG could not create its decoder");
  opj_stream_set_read_function(stream.get(), read_proc);
  opj_stream_set_skip_function(stream.get(), skip_proc);
  opj_stream_set_seek_function(stream.get(), seek_proc);
  opj_stream_set_user_data(stream.get(), &src, nullptr);
  opj_stream_set_user_data_length(stream.get(), bytes.size());
  opj_set_error_handler(codec.get(), on_error, &src);
  opj_set_warning_handler(codec.get(), on_quiet, nullptr);
  opj_set_info_handler(codec.get(), on_quiet, nullptr);
  opj_dparameters_t params;
  opj_set_default_decoder_parameters(&params);
  const char* format = codestream_only ? "JPEG 2000 codestream" : "JPEG 2000";
  if (!opj_setup_decoder(codec.get(), &params)) return internal_error("OpenJPEG rejected its default parameters");
  // A partial codestream is an error, not an image decoded from the data that came.
  opj_decoder_set_strict_mode(codec.get(), OPJ_TRUE);
  opj_image_t* header = nullptr;
  const bool header_read = opj_read_header(stream.get(), codec.get(), &header);
  std::unique_ptr<opj_image_t, ImageFree> image(header);
  if (!header_read) return invalid_argument("malformed {}: {}", format, src.error.empty() ? "bad header" : src.error);
  EMBER_RETURN_IF_ERROR(check_dimensions(format, static_cast<int64_t>(image->x1) - image->x0,
                                         static_cast<int64_t>(image->y1) - image->y0));
  const uint32_t numcomps = image->numcomps;
  if (numcomps != 1 && numcomps != 3 && numcomps != 4) {
    return not_implemented("{} image with {} components (gray, RGB and RGBA are supported)", format, numcomps);
  }
  if (image->color_space == OPJ_CLRSPC_SYCC || image->color_space == OPJ_CLRSPC_EYCC ||
      image->color_space == OPJ_CLRSPC_CMYK) {
    return not_implemented("{} image in a YCC or CMYK color space", format);
  }
  if (!opj_decode(codec.get(), stream.get(), image.get()) || !opj_end_decompress(codec.get(), stream.get())) {
    return invalid_argument("malformed {}: {}", format, src.error.empty() ? "cannot decode the image data" : src.error);
  }
  const opj_image_comp_t& first = image->comps[0];
  for (uint32_t c = 0; c < numcomps; ++c) {
    const opj_image_comp_t& comp = image->comps[c];
    if (comp.dx != 1 || comp.dy != 1 || comp.w != first.w || comp.h != first.h) {
      return not_implemented("{} image with subsampled components", format);
    }
    if (comp.prec < 1 || comp.prec > 31 || !comp.data) {
      return invalid_argument("malformed {}: component {} has precision {}", format, c, comp.prec);
    }
  }
  EMBER_RETURN_IF_ERROR(check_dimensions(format, first.w, first.h));
  RgbImage out = make_rgb_image(first.w, first.h);
  const size_t count = static_cast<size_t>(out.width * out.height);
  for (size_t i = 0; i < count; ++i) {
    for (uint32_t c = 0; c < 3; ++c) {
      out.pixels[i * 3 + c] = to_u8(image->comps[numcomps == 1 ? 0 : c], i);
    }
  }
  return out;
}

}  // namespace ember::image_codecs
