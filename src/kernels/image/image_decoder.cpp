// ImageDecoder (opset 20): encoded image bytes to uint8 [H, W, C]. The codecs
// (kernels/image/codecs) decode to RGB; BGR reverses the channels, and
// Grayscale applies PIL's RGB -> L conversion, the ITU-R 601-2 luma transform
// L = R * 299/1000 + G * 587/1000 + B * 114/1000 (Pillow's Image.convert
// documentation), in Pillow's 16-bit fixed point with rounding (libImaging/
// Convert.c: weights 19595, 38470, 7471 and 0x8000 added before the shift), so
// that the output matches what the ONNX reference gets from PIL bit for bit.
// H and W are known only after decoding, so the kernel allocates its output.
#include <algorithm>

#include "kernels/image/codecs/image_codec.h"
#include "kernels/image/image_ops.h"

namespace ember::kernels::image {
namespace {

enum class PixelFormat { kRgb, kBgr, kGrayscale };

uint8_t luma(const uint8_t* rgb) {
  return static_cast<uint8_t>((rgb[0] * 19595u + rgb[1] * 38470u + rgb[2] * 7471u + 0x8000u) >> 16);
}

class ImageDecoderKernel final : public OpKernel {
 public:
  explicit ImageDecoderKernel(PixelFormat format) : format_(format) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_RETURN_IF_ERROR(check_input(ctx.input(0)));
    ctx.set_output(0, DType::kU8, Shape{0, 0, channels()});
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& encoded = ctx.input(0);
    EMBER_RETURN_IF_ERROR(check_input(encoded));
    EMBER_ASSIGN_OR_RETURN(image_codecs::RgbImage rgb,
                           image_codecs::decode_rgb({encoded.data_as<uint8_t>(), static_cast<size_t>(encoded.numel())}));
    Tensor out = Tensor::allocate_uninitialized(DType::kU8, Shape{rgb.height, rgb.width, channels()});
    uint8_t* dst = out.data_as<uint8_t>();
    const size_t pixels = static_cast<size_t>(rgb.height * rgb.width);
    const uint8_t* src = rgb.pixels.data();
    switch (format_) {
      case PixelFormat::kRgb:
        std::copy(rgb.pixels.begin(), rgb.pixels.end(), dst);
        break;
      case PixelFormat::kBgr:
        for (size_t i = 0; i < pixels; ++i) {
          dst[i * 3 + 0] = src[i * 3 + 2];
          dst[i * 3 + 1] = src[i * 3 + 1];
          dst[i * 3 + 2] = src[i * 3 + 0];
        }
        break;
      case PixelFormat::kGrayscale:
        for (size_t i = 0; i < pixels; ++i) dst[i] = luma(src + i * 3);
        break;
    }
    ctx.output(0) = std::move(out);
    return Status::ok();
  }

  bool allocates_outputs() const override { return true; }

 private:
  int64_t channels() const { return format_ == PixelFormat::kGrayscale ? 1 : 3; }

  static Status check_input(const Tensor& encoded) {
    if (encoded.rank() != 1) {
      return invalid_argument("encoded_stream must be a 1-D tensor of bytes, got {}", encoded.describe());
    }
    return Status::ok();
  }

  PixelFormat format_;
};

}  // namespace

KernelResult create_image_decoder(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 1));
  const DType dtype = input_dtype(init, 0);
  if (dtype != DType::kU8) {
    return invalid_argument("encoded_stream must be uint8, got {}", dtype_name(dtype));
  }
  ir::AttrReader attrs(init.node);
  const std::string format = attrs.get_string("pixel_format", "RGB");
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (format == "RGB") return std::unique_ptr<OpKernel>(new ImageDecoderKernel(PixelFormat::kRgb));
  if (format == "BGR") return std::unique_ptr<OpKernel>(new ImageDecoderKernel(PixelFormat::kBgr));
  if (format == "Grayscale") return std::unique_ptr<OpKernel>(new ImageDecoderKernel(PixelFormat::kGrayscale));
  return not_implemented("pixel_format '{}' (RGB, BGR and Grayscale are supported)", format);
}

}  // namespace ember::kernels::image
