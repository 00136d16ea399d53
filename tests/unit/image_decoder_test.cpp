// ImageDecoder and its codecs: a tiny image of every format, encoded here by
// hand (BMP, PNM) or with the codec library itself (JPEG, PNG, TIFF, WebP,
// JPEG 2000), decodes to the pixels written; truncated, garbage and oversized
// inputs fail with an error naming the format; BGR and Grayscale outputs.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <jpeglib.h>
#include <openjpeg.h>
#include <png.h>
#include <tiffio.h>
#include <webp/encode.h>

#include "kernels/image/codecs/image_codec.h"
#include "unit/op_test_util.h"

namespace ember {
namespace {

using Bytes = std::vector<uint8_t>;
using test::attr_string;
using test::run_op;
using test::values_of;

constexpr int kWidth = 3, kHeight = 2;
// RGB, row-major: red green blue / white black gray.
const Bytes kPixels = {255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255, 0, 0, 0, 128, 128, 128};

Bytes read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

std::filesystem::path temp_path(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("ember_image_decoder_test_" + std::to_string(::getpid()) + name);
}

Bytes append(Bytes a, const std::string& s) {
  a.insert(a.end(), s.begin(), s.end());
  return a;
}

Bytes encode_ppm() { return append(append({}, "P6\n# a comment\n3 2\n255\n"), std::string(kPixels.begin(), kPixels.end())); }

void put_le(Bytes& b, uint32_t v, int n) {
  for (int i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// A 24-bit bottom-up BMP: rows of 9 bytes padded to 12.
Bytes encode_bmp() {
  Bytes b = {'B', 'M'};
  put_le(b, 14 + 40 + 24, 4);
  put_le(b, 0, 4);
  put_le(b, 14 + 40, 4);
  for (uint32_t v : {40u, uint32_t{kWidth}, uint32_t{kHeight}}) put_le(b, v, 4);
  put_le(b, 1, 2);
  put_le(b, 24, 2);
  for (int i = 0; i < 6; ++i) put_le(b, 0, 4);
  for (int y = kHeight - 1; y >= 0; --y) {
    for (int x = 0; x < kWidth; ++x) {
      const uint8_t* p = &kPixels[(y * kWidth + x) * 3];
      b.insert(b.end(), {p[2], p[1], p[0]});
    }
    b.insert(b.end(), 3, 0);
  }
  return b;
}

// A BMP with a 40-byte info header: `extra` (palette or bitfield masks) after
// it, then `rows` as stored (each padded to 4 bytes); height < 0 is top-down.
Bytes bmp_file(int width, int height, int bits, uint32_t compression, const Bytes& extra, const Bytes& rows) {
  Bytes b = {'B', 'M'};
  const uint32_t data_offset = static_cast<uint32_t>(14 + 40 + extra.size());
  put_le(b, data_offset + static_cast<uint32_t>(rows.size()), 4);
  put_le(b, 0, 4);
  put_le(b, data_offset, 4);
  put_le(b, 40, 4);
  put_le(b, static_cast<uint32_t>(width), 4);
  put_le(b, static_cast<uint32_t>(height), 4);
  put_le(b, 1, 2);
  put_le(b, static_cast<uint32_t>(bits), 2);
  put_le(b, compression, 4);
  for (int i = 0; i < 5; ++i) put_le(b, 0, 4);
  b.insert(b.end(), extra.begin(), extra.end());
  b.insert(b.end(), rows.begin(), rows.end());
  return b;
}

// 16x16 of one color per 8x8 block, quality 100 without chroma subsampling, so
// decoded pixels stay within a few levels of the source.
Bytes encode_jpeg(Bytes& source) {
  const int size = 16;
  source.resize(size * size * 3);
  for (int y = 0; y < size; ++y) {
    for (int x = 0; x < size; ++x) {
      const uint8_t* p = &kPixels[((y / 8) * kWidth + x / 8) * 3];
      std::copy(p, p + 3, &source[(y * size + x) * 3]);
    }
  }
  jpeg_compress_struct cinfo{};
  jpeg_error_mgr err{};
  cinfo.err = jpeg_std_error(&err);
  jpeg_create_compress(&cinfo);
  unsigned char* out = nullptr;
  unsigned long out_size = 0;
  jpeg_mem_dest(&cinfo, &out, &out_size);
  cinfo.image_width = size;
  cinfo.image_height = size;
  cinfo.input_components = 3;
  cinfo.in_color_space = JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, 100, TRUE);
  for (int c = 0; c < 3; ++c) cinfo.comp_info[c].h_samp_factor = cinfo.comp_info[c].v_samp_factor = 1;
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = &source[cinfo.next_scanline * size * 3];
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  Bytes bytes(out, out + out_size);
  jpeg_destroy_compress(&cinfo);
  free(out);
  return bytes;
}

Bytes encode_png() {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = kWidth;
  image.height = kHeight;
  image.format = PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  EXPECT_TRUE(png_image_write_to_memory(&image, nullptr, &size, 0, kPixels.data(), 0, nullptr));
  Bytes bytes(size);
  EXPECT_TRUE(png_image_write_to_memory(&image, bytes.data(), &size, 0, kPixels.data(), 0, nullptr));
  bytes.resize(size);
  return bytes;
}

Bytes encode_tiff() {
  const auto path = temp_path(".tif");
  TIFF* tif = TIFFOpen(path.c_str(), "w");
  EXPECT_NE(tif, nullptr);
  TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, kWidth);
  TIFFSetField(tif, TIFFTAG_IMAGELENGTH, kHeight);
  TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, 3);
  TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, 8);
  TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_RGB);
  TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
  TIFFSetField(tif, TIFFTAG_COMPRESSION, COMPRESSION_LZW);
  TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, kHeight);
  for (int y = 0; y < kHeight; ++y) {
    Bytes row(kPixels.begin() + y * kWidth * 3, kPixels.begin() + (y + 1) * kWidth * 3);
    EXPECT_EQ(TIFFWriteScanline(tif, row.data(), y, 0), 1);
  }
  TIFFClose(tif);
  Bytes bytes = read_file(path);
  std::filesystem::remove(path);
  return bytes;
}

Bytes encode_webp() {
  uint8_t* out = nullptr;
  const size_t size = WebPEncodeLosslessRGB(kPixels.data(), kWidth, kHeight, kWidth * 3, &out);
  Bytes bytes(out, out + size);
  WebPFree(out);
  return bytes;
}

// Lossless (reversible wavelet, one layer, one resolution for a 3x2 image).
Bytes encode_jpeg2000() {
  opj_image_cmptparm_t params[3]{};
  for (auto& p : params) {
    p.dx = p.dy = 1;
    p.w = kWidth;
    p.h = kHeight;
    p.prec = 8;
  }
  opj_image_t* image = opj_image_create(3, params, OPJ_CLRSPC_SRGB);
  image->x1 = kWidth;
  image->y1 = kHeight;
  for (int c = 0; c < 3; ++c) {
    for (int i = 0; i < kWidth * kHeight; ++i) image->comps[c].data[i] = kPixels[i * 3 + c];
  }
  opj_cparameters_t cparams;
  opj_set_default_encoder_parameters(&cparams);
  cparams.numresolution = 1;
  cparams.tcp_numlayers = 1;
  cparams.tcp_rates[0] = 0;
  cparams.cp_disto_alloc = 1;
  opj_codec_t* codec = opj_create_compress(OPJ_CODEC_JP2);
  EXPECT_TRUE(opj_setup_encoder(codec, &cparams, image));
  const auto path = temp_path(".jp2");
  opj_stream_t* stream = opj_stream_create_default_file_stream(path.c_str(), OPJ_FALSE);
  EXPECT_TRUE(opj_start_compress(codec, image, stream));
  EXPECT_TRUE(opj_encode(codec, stream));
  EXPECT_TRUE(opj_end_compress(codec, stream));
  opj_stream_destroy(stream);
  opj_destroy_codec(codec);
  opj_image_destroy(image);
  Bytes bytes = read_file(path);
  std::filesystem::remove(path);
  return bytes;
}

struct Format {
  const char* name;  // as the decoder's errors name it
  Bytes (*encode)();
};

const Format kLosslessFormats[] = {{"PNM", encode_ppm}, {"BMP", encode_bmp},   {"PNG", encode_png},
                                   {"TIFF", encode_tiff}, {"WebP", encode_webp}, {"JPEG 2000", encode_jpeg2000}};

void expect_error_naming(const Bytes& bytes, const std::string& format, const std::string& case_name) {
  auto r = image_codecs::decode_rgb(bytes);
  ASSERT_FALSE(r.is_ok()) << format << " " << case_name << " decoded";
  EXPECT_NE(r.status().message().find(format), std::string::npos)
      << format << " " << case_name << ": " << r.status().to_string();
}

TEST(ImageCodecs, LosslessFormatsDecodeTheWrittenPixels) {
  for (const Format& f : kLosslessFormats) {
    auto r = image_codecs::decode_rgb(f.encode());
    ASSERT_TRUE(r.is_ok()) << f.name << ": " << r.status().to_string();
    EXPECT_EQ(r.value().width, kWidth) << f.name;
    EXPECT_EQ(r.value().height, kHeight) << f.name;
    EXPECT_EQ(r.value().pixels, kPixels) << f.name;
  }
}

TEST(ImageCodecs, JpegDecodesCloseToTheSource) {
  Bytes source;
  auto r = image_codecs::decode_rgb(encode_jpeg(source));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r.value().pixels.size(), source.size());
  for (size_t i = 0; i < source.size(); ++i) EXPECT_NEAR(r.value().pixels[i], source[i], 3) << i;
}

TEST(ImageCodecs, TruncatedStreamsFailNamingTheFormat) {
  Bytes jpeg_source;
  std::vector<std::pair<std::string, Bytes>> encoded = {{"JPEG", encode_jpeg(jpeg_source)}};
  for (const Format& f : kLosslessFormats) encoded.emplace_back(f.name, f.encode());
  for (const auto& [name, bytes] : encoded) {
    for (size_t keep : {bytes.size() / 2, bytes.size() - 1}) {
      // A TIFF's directory may lie before its last byte (the IFD's next offset
      // is 4 bytes of zeros libtiff need not read), so only halves are cut there.
      if (name == "TIFF" && keep == bytes.size() - 1) continue;
      expect_error_naming(Bytes(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(keep)), name,
                          "cut to " + std::to_string(keep) + " bytes");
    }
  }
}

TEST(ImageCodecs, GarbageAfterTheSignatureFailsNamingTheFormat) {
  const std::pair<const char*, Bytes> signatures[] = {
      {"JPEG", {0xFF, 0xD8, 0xFF}},
      {"PNG", {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'}},
      {"TIFF", {'I', 'I', 42, 0}},
      {"WebP", {'R', 'I', 'F', 'F', 200, 0, 0, 0, 'W', 'E', 'B', 'P'}},
      {"JPEG 2000", {0, 0, 0, 12, 'j', 'P', ' ', ' ', '\r', '\n', 0x87, '\n'}},
      {"JPEG 2000 codestream", {0xFF, 0x4F, 0xFF, 0x51}},
      {"BMP", {'B', 'M'}},
      {"PNM", {'P', '6'}},
  };
  for (const auto& [name, signature] : signatures) {
    Bytes bytes = signature;
    for (int i = 0; i < 200; ++i) bytes.push_back(static_cast<uint8_t>(i * 37 + 11));
    expect_error_naming(bytes, name, "with garbage");
  }
}

TEST(ImageCodecs, UnknownAndEmptyInputsAreRefused) {
  auto unknown = image_codecs::decode_rgb(Bytes{'G', 'I', 'F', '8', '9', 'a', 0, 0});
  ASSERT_FALSE(unknown.is_ok());
  EXPECT_NE(unknown.status().message().find("unknown image format"), std::string::npos) << unknown.status().to_string();
  auto empty = image_codecs::decode_rgb(Bytes{});
  ASSERT_FALSE(empty.is_ok());
  EXPECT_NE(empty.status().message().find("empty"), std::string::npos) << empty.status().to_string();
}

TEST(ImageCodecs, ImagesOverThePixelLimitAreRefusedBeforeDecoding) {
  expect_error_naming(append({}, "P6\n100000 100000\n255\n"), "limit", "PNM of 10^10 pixels");
  Bytes bmp = encode_bmp();
  bmp[18] = 0xFF, bmp[19] = 0xFF, bmp[20] = 0xFF, bmp[21] = 0x00;  // width 2^24 - 1
  bmp[22] = 0xFF, bmp[23] = 0x00;                                  // height 255
  expect_error_naming(bmp, "limit", "BMP of 2^24 x 255 pixels");
}

TEST(ImageCodecs, BmpPaletteBitfieldsAndRowOrder) {
  // 8-bit palette (BGRA entries), bottom-up: the file's first row is the image's last.
  Bytes palette;
  for (int i = 0; i < kWidth * kHeight; ++i) {
    palette.insert(palette.end(), {kPixels[i * 3 + 2], kPixels[i * 3 + 1], kPixels[i * 3], 0});
  }
  palette.resize(256 * 4, 0);  // a colors-used count of 0 means all 2^8 entries
  auto p8 = image_codecs::decode_rgb(bmp_file(kWidth, kHeight, 8, 0, palette, {3, 4, 5, 0, 0, 1, 2, 0}));
  ASSERT_TRUE(p8.is_ok()) << p8.status().to_string();
  EXPECT_EQ(p8.value().pixels, kPixels);

  // 1-bit, top-down (negative height): 101 / 010, MSB first, index 1 is white.
  auto p1 = image_codecs::decode_rgb(
      bmp_file(3, -2, 1, 0, {0, 0, 0, 0, 255, 255, 255, 0}, {0xA0, 0, 0, 0, 0x40, 0, 0, 0}));
  ASSERT_TRUE(p1.is_ok()) << p1.status().to_string();
  EXPECT_EQ(p1.value().pixels, (Bytes{255, 255, 255, 0, 0, 0, 255, 255, 255, 0, 0, 0, 255, 255, 255, 0, 0, 0}));

  // 32-bit BI_BITFIELDS with R, G, B in the high three bytes.
  Bytes masks;
  for (uint32_t m : {0xFF000000u, 0x00FF0000u, 0x0000FF00u}) put_le(masks, m, 4);
  Bytes rows;
  for (int y = kHeight - 1; y >= 0; --y) {
    for (int x = 0; x < kWidth; ++x) {
      const uint8_t* p = &kPixels[(y * kWidth + x) * 3];
      put_le(rows, (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8), 4);
    }
  }
  auto p32 = image_codecs::decode_rgb(bmp_file(kWidth, kHeight, 32, 3, masks, rows));
  ASSERT_TRUE(p32.is_ok()) << p32.status().to_string();
  EXPECT_EQ(p32.value().pixels, kPixels);

  // 16-bit BI_RGB is 5-5-5: 31 -> 255, 16 -> round(16 * 255 / 31) = 132, 0 -> 0.
  Bytes row16;
  put_le(row16, (31u << 10) | (16u << 5), 2);
  put_le(row16, 0, 2);
  auto p16 = image_codecs::decode_rgb(bmp_file(1, 1, 16, 0, {}, row16));
  ASSERT_TRUE(p16.is_ok()) << p16.status().to_string();
  EXPECT_EQ(p16.value().pixels, (Bytes{255, 132, 0}));

  auto rle = image_codecs::decode_rgb(bmp_file(1, 1, 8, 1, Bytes(1024, 0), {0, 0, 0, 0}));
  ASSERT_FALSE(rle.is_ok());
  EXPECT_EQ(rle.status().code(), StatusCode::kNotImplemented) << rle.status().to_string();
}

TEST(ImageCodecs, NetpbmKindsAndMaxvalScaling) {
  // P1 digits need no separator; 1 is black.
  auto p1 = image_codecs::decode_rgb(append({}, "P1 3 1\n101"));
  ASSERT_TRUE(p1.is_ok()) << p1.status().to_string();
  EXPECT_EQ(p1.value().pixels, (Bytes{0, 0, 0, 255, 255, 255, 0, 0, 0}));
  // P4: one row of 3 bits, MSB first, padded to a byte.
  auto p4 = image_codecs::decode_rgb(append({}, "P4 3 1\n\xA0"));
  ASSERT_TRUE(p4.is_ok()) << p4.status().to_string();
  EXPECT_EQ(p4.value().pixels, (Bytes{0, 0, 0, 255, 255, 255, 0, 0, 0}));
  // P2 with maxval 4: 0, 2, 4 -> 0, 128, 255.
  auto p2 = image_codecs::decode_rgb(append({}, "P2 3 1 4\n0 2 4\n"));
  ASSERT_TRUE(p2.is_ok()) << p2.status().to_string();
  EXPECT_EQ(p2.value().pixels, (Bytes{0, 0, 0, 128, 128, 128, 255, 255, 255}));
  // P5 with 16-bit big-endian samples.
  auto p5 = image_codecs::decode_rgb(append({}, "P5 1 1 65535\n\xFF\xFF"));
  ASSERT_TRUE(p5.is_ok()) << p5.status().to_string();
  EXPECT_EQ(p5.value().pixels, (Bytes{255, 255, 255}));
  expect_error_naming(append({}, "P2 1 1 4\n5\n"), "over maxval", "a sample over maxval");
  expect_error_naming(append({}, "P7\nWIDTH 1\n"), "PAM", "PAM");
}

TEST(ImageDecoder, PixelFormats) {
  const Bytes ppm = encode_ppm();
  Tensor encoded = test::make_tensor<uint8_t>({static_cast<int64_t>(ppm.size())}, ppm);
  auto rgb = run_op("ImageDecoder", {&encoded}, {}, 1, 20);
  ASSERT_TRUE(rgb.is_ok()) << rgb.status().to_string();
  EXPECT_EQ(rgb.value()[0].shape(), (Shape{kHeight, kWidth, 3}));
  EXPECT_EQ(values_of<uint8_t>(rgb.value()[0]), kPixels);

  auto bgr = run_op("ImageDecoder", {&encoded}, {attr_string("pixel_format", "BGR")}, 1, 20);
  ASSERT_TRUE(bgr.is_ok()) << bgr.status().to_string();
  EXPECT_EQ(values_of<uint8_t>(bgr.value()[0]),
            (Bytes{0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 255, 255, 0, 0, 0, 128, 128, 128}));

  // PIL's L = R*299/1000 + G*587/1000 + B*114/1000 in its 16-bit fixed point:
  // red (255*19595 + 0x8000) >> 16 = 76, green 150, blue 29; gray stays gray.
  auto gray = run_op("ImageDecoder", {&encoded}, {attr_string("pixel_format", "Grayscale")}, 1, 20);
  ASSERT_TRUE(gray.is_ok()) << gray.status().to_string();
  EXPECT_EQ(gray.value()[0].shape(), (Shape{kHeight, kWidth, 1}));
  EXPECT_EQ(values_of<uint8_t>(gray.value()[0]), (Bytes{76, 150, 29, 255, 0, 128}));
}

TEST(ImageDecoder, BadInputsAndAttributesAreRefused) {
  const Bytes ppm = encode_ppm();
  Tensor encoded = test::make_tensor<uint8_t>({static_cast<int64_t>(ppm.size())}, ppm);
  auto bad_format = run_op("ImageDecoder", {&encoded}, {attr_string("pixel_format", "RGBA")}, 1, 20);
  ASSERT_FALSE(bad_format.is_ok());
  EXPECT_NE(bad_format.status().message().find("RGBA"), std::string::npos) << bad_format.status().to_string();

  Tensor as_i8 = Tensor::allocate(DType::kI8, {4});
  auto bad_dtype = run_op("ImageDecoder", {&as_i8}, {}, 1, 20);
  ASSERT_FALSE(bad_dtype.is_ok());
  EXPECT_NE(bad_dtype.status().message().find("int8"), std::string::npos) << bad_dtype.status().to_string();

  Tensor as_matrix = test::make_tensor<uint8_t>({1, static_cast<int64_t>(ppm.size())}, ppm);
  auto bad_rank = run_op("ImageDecoder", {&as_matrix}, {}, 1, 20);
  ASSERT_FALSE(bad_rank.is_ok());
  EXPECT_NE(bad_rank.status().message().find("1-D"), std::string::npos) << bad_rank.status().to_string();

  Tensor garbage = test::make_tensor<uint8_t>({4}, {'P', '6', 'x', 'y'});
  auto bad_bytes = run_op("ImageDecoder", {&garbage}, {}, 1, 20);
  ASSERT_FALSE(bad_bytes.is_ok());
  EXPECT_NE(bad_bytes.status().message().find("PNM"), std::string::npos) << bad_bytes.status().to_string();
}

}  // namespace
}  // namespace ember
