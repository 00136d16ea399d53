// com.microsoft GatherBlockQuantized: the dequantization microkernels at every
// ISA level and the op, against a double-precision loop over the unpacked codes
// written here. (code - zp) * scale is exact in double and the one rounding to
// the output type matches the kernels' single f32 product (exact itself for
// 16-bit scales), so every comparison is bitwise.
// ctest: every ISA level
// ctest: emulated CPUs
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "base/isa.h"
#include "kernels/quant/gbq_ukernels.h"
#include "threading/thread_pool.h"
#include "unit/op_test_util.h"

namespace ember {
namespace {

using test::attr_int;
using test::run_op;
namespace quant = kernels::quant;

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// NaN matches any NaN; everything else bit for bit (so -0 differs from +0).
bool same_float(float a, float b) { return (std::isnan(a) && std::isnan(b)) || bits_of(a) == bits_of(b); }

int code_at(const uint8_t* codes, int64_t i, int bits) {
  if (bits == 8) return codes[i];
  if (bits == 2) return (codes[i / 4] >> (2 * (i % 4))) & 3;
  return (i & 1) ? codes[i >> 1] >> 4 : codes[i >> 1] & 0xF;
}

// Scales with the special values first: NaN, +-Inf, +-0, a denormal, then random.
std::vector<float> special_scales(int64_t n, std::mt19937& rng) {
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), 0.0f, -0.0f, 1e-40f, -3e-39f};
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> s(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) s[i] = i < 7 ? specials[i] : dist(rng);
  std::shuffle(s.begin(), s.end(), rng);
  return s;
}

void check_ukernel(Isa isa, int bits, int64_t block, int64_t k, bool with_zp, int64_t offset) {
  const quant::GbqTable& t = quant::gbq_table(isa);
  std::mt19937 rng(static_cast<uint32_t>(k * 131 + block * 7 + bits + (with_zp ? 1 : 0) + offset * 3));
  const int64_t blocks = (k + block - 1) / block;
  std::vector<uint8_t> codes(static_cast<size_t>(offset + (k * bits + 7) / 8 + 1));
  std::uniform_int_distribution<int> byte(0, 255);
  for (auto& c : codes) c = static_cast<uint8_t>(byte(rng));
  const std::vector<float> scales = special_scales(blocks, rng);
  std::vector<uint8_t> zps(static_cast<size_t>(blocks));
  for (auto& z : zps) z = static_cast<uint8_t>(byte(rng) % (1 << bits));
  std::vector<float> y(static_cast<size_t>(k + offset + 1), 12345.0f);
  const uint8_t* c = codes.data() + offset;
  float* out = y.data() + offset;
  auto fn = bits == 2 ? t.f32_q2_dequant : bits == 4 ? t.f32_q4_dequant : t.f32_q8_dequant;
  fn(c, k, block, scales.data(), with_zp ? zps.data() : nullptr, out);
  for (int64_t i = 0; i < k; ++i) {
    const int64_t b = i / block;
    const int zp = with_zp ? zps[b] : 1 << (bits - 1);
    const float want = static_cast<float>(static_cast<double>(code_at(c, i, bits) - zp) * scales[b]);
    ASSERT_TRUE(same_float(out[i], want)) << isa_name(isa) << " bits=" << bits << " block=" << block << " k=" << k
                                          << " zp=" << with_zp << " offset=" << offset << " i=" << i << ": got "
                                          << out[i] << " want " << want;
  }
  EXPECT_EQ(y[static_cast<size_t>(k + offset)], 12345.0f) << "wrote past the end at k=" << k;
  if (offset > 0) {
    EXPECT_EQ(y[0], 12345.0f) << "wrote before the start";
  }
}

TEST(GbqUkernels, MatchDoubleReferenceAtEveryIsa) {
  const int64_t ks[] = {0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 129, 1000, 1030, 4099};
  for (Isa isa : available_isas()) {
    for (int bits : {2, 4, 8}) {
      for (int64_t block : {16, 32, 64, 128, 256, 2048}) {
        for (int64_t k : ks) {
          for (bool zp : {false, true}) {
            // Packed rows start on a byte; offset 1 moves them to an odd address.
            for (int64_t offset : {int64_t{0}, int64_t{1}}) check_ukernel(isa, bits, block, k, zp, offset);
          }
        }
      }
    }
  }
}

struct OpCase {
  Shape lead = {10};  // data dims before the last (dim 0 is gathered)
  int64_t k = 64, block = 32;
  int bits = 4;
  bool zp = false;
  DType scale_dtype = DType::kF32;
  DType index_dtype = DType::kI64;
  Shape index_shape = {3};
  std::vector<int64_t> indices = {0, 9, -1};
};

struct OpInputs {
  Tensor data, indices, scales, zp;
  Shape out_shape;
  std::vector<double> want;  // exact dequantized values of the output
};

int64_t product(const Shape& s) {
  int64_t p = 1;
  for (int64_t d : s) p *= d;
  return p;
}

double stored_scale(const Tensor& t, int64_t i) {
  if (t.dtype() == DType::kF16) return static_cast<float>(t.data_as<Float16>()[i]);
  if (t.dtype() == DType::kBF16) return static_cast<float>(t.data_as<BFloat16>()[i]);
  return t.data_as<float>()[i];
}

OpInputs make_inputs(const OpCase& c) {
  std::mt19937 rng(static_cast<uint32_t>(c.k * 17 + c.block + c.bits * 3 + product(c.lead)));
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int64_t rows = product(c.lead), blocks = (c.k + c.block - 1) / c.block;
  const int64_t zp_bytes = (blocks * c.bits + 7) / 8;
  OpInputs in;
  Shape dshape = c.lead, sshape = c.lead, zshape = c.lead;
  dshape.push_back(c.k * c.bits / 8);
  sshape.push_back(blocks);
  zshape.push_back(zp_bytes);
  in.data = Tensor::allocate(DType::kU8, dshape);
  for (int64_t i = 0; i < in.data.numel(); ++i) in.data.data_as<uint8_t>()[i] = static_cast<uint8_t>(byte(rng));
  in.scales = Tensor::allocate(c.scale_dtype, sshape);
  for (int64_t i = 0; i < in.scales.numel(); ++i) {
    if (c.scale_dtype == DType::kF16) in.scales.data_as<Float16>()[i] = Float16(dist(rng));
    else if (c.scale_dtype == DType::kBF16) in.scales.data_as<BFloat16>()[i] = BFloat16(dist(rng));
    else in.scales.data_as<float>()[i] = dist(rng);
  }
  in.zp = Tensor::allocate(DType::kU8, zshape);
  for (int64_t i = 0; i < in.zp.numel(); ++i) in.zp.data_as<uint8_t>()[i] = static_cast<uint8_t>(byte(rng));
  in.indices = Tensor::allocate(c.index_dtype, c.index_shape);
  for (size_t i = 0; i < c.indices.size(); ++i) {
    if (c.index_dtype == DType::kI32) in.indices.data_as<int32_t>()[i] = static_cast<int32_t>(c.indices[i]);
    else in.indices.data_as<int64_t>()[i] = c.indices[i];
  }
  in.out_shape = c.index_shape;
  for (size_t d = 1; d < c.lead.size(); ++d) in.out_shape.push_back(c.lead[d]);
  in.out_shape.push_back(c.k);
  const int64_t slab = rows / c.lead[0];
  for (int64_t idx : c.indices) {
    const int64_t g = idx < 0 ? idx + c.lead[0] : idx;
    for (int64_t r = 0; r < slab; ++r) {
      const int64_t row = g * slab + r;
      const uint8_t* codes = in.data.data_as<uint8_t>() + row * (c.k * c.bits / 8);
      for (int64_t i = 0; i < c.k; ++i) {
        const int64_t b = i / c.block;
        int zp = 1 << (c.bits - 1);
        if (c.zp) zp = code_at(in.zp.data_as<uint8_t>() + row * zp_bytes, b, c.bits);
        const double scale = stored_scale(in.scales, row * blocks + b);
        in.want.push_back(static_cast<double>(code_at(codes, i, c.bits) - zp) * scale);
      }
    }
  }
  return in;
}

std::vector<ir::Attribute> attrs_of(const OpCase& c) {
  return {attr_int("gather_axis", 0), attr_int("quantize_axis", static_cast<int64_t>(c.lead.size())),
          attr_int("block_size", c.block), attr_int("bits", c.bits)};
}

Result<std::vector<Tensor>> run_gbq(const OpInputs& in, bool zp, std::vector<ir::Attribute> attrs) {
  return run_op("GatherBlockQuantized", {&in.data, &in.indices, &in.scales, zp ? &in.zp : nullptr}, std::move(attrs),
                1, 1, "com.microsoft");
}

void check_op(const OpCase& c) {
  const OpInputs in = make_inputs(c);
  std::vector<Tensor> outs;
  for (int threads : {1, 2}) {
    threading::ScopedThreadLimit limit(threads);
    auto r = run_gbq(in, c.zp, attrs_of(c));
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    outs.push_back(std::move((*r)[0]));
  }
  const Tensor& y = outs[0];
  ASSERT_EQ(y.dtype(), c.scale_dtype);
  ASSERT_EQ(y.shape(), in.out_shape);
  ASSERT_EQ(y.numel(), static_cast<int64_t>(in.want.size()));
  ASSERT_EQ(std::memcmp(outs[0].data(), outs[1].data(), static_cast<size_t>(y.numel()) * dtype_size(y.dtype())), 0)
      << "1 and 2 threads differ";
  for (int64_t i = 0; i < y.numel(); ++i) {
    const float want32 = static_cast<float>(in.want[i]);
    float got, want;
    if (c.scale_dtype == DType::kF16) {
      got = y.data_as<Float16>()[i];
      want = static_cast<float>(Float16(want32));
    } else if (c.scale_dtype == DType::kBF16) {
      got = y.data_as<BFloat16>()[i];
      want = static_cast<float>(BFloat16(want32));
    } else {
      got = y.data_as<float>()[i];
      want = want32;
    }
    ASSERT_TRUE(same_float(got, want)) << "element " << i << ": got " << got << " want " << want;
  }
}

TEST(GatherBlockQuantized, FourBitEmbeddingLookup) {
  for (int64_t block : {16, 32, 64, 128, 256}) {
    for (int64_t k : {2, 30, 64, 96, 200, 1000, 2050}) {
      for (bool zp : {false, true}) {
        OpCase c;
        c.k = k;
        c.block = block;
        c.zp = zp;
        check_op(c);
      }
    }
  }
}

TEST(GatherBlockQuantized, EightBit) {
  for (int64_t k : {1, 17, 64, 1000, 2051}) {
    for (bool zp : {false, true}) {
      OpCase c;
      c.bits = 8;
      c.k = k;
      c.block = 64;
      c.zp = zp;
      check_op(c);
    }
  }
}

TEST(GatherBlockQuantized, TwoBit) {
  for (int64_t k : {4, 36, 1000, 2052}) {
    for (bool zp : {false, true}) {
      OpCase c;
      c.bits = 2;
      c.k = k;
      c.block = 16;
      c.zp = zp;
      check_op(c);
    }
  }
}

TEST(GatherBlockQuantized, BlockLongerThanAChunk) {
  for (int bits : {2, 4, 8}) {
    OpCase c;
    c.bits = bits;
    c.k = 5000;
    c.block = 4096;
    c.zp = true;
    c.lead = {4};
    c.indices = {3, 0, -4};
    check_op(c);
  }
}

TEST(GatherBlockQuantized, SixteenBitScales) {
  for (DType t : {DType::kF16, DType::kBF16}) {
    for (int bits : {2, 4, 8}) {
      OpCase c;
      c.scale_dtype = t;
      c.bits = bits;
      c.k = 1100;
      c.zp = true;
      check_op(c);
    }
  }
}

TEST(GatherBlockQuantized, IndexShapesAndTypes) {
  OpCase scalar;
  scalar.index_shape = {};
  scalar.indices = {-3};
  check_op(scalar);
  OpCase matrix;
  matrix.index_dtype = DType::kI32;
  matrix.index_shape = {2, 3};
  matrix.indices = {1, -10, 9, 4, 4, -2};
  check_op(matrix);
  OpCase empty;
  empty.index_shape = {0};
  empty.indices = {};
  check_op(empty);
  // Rank-3 data: each index selects 3 rows of K codes.
  OpCase slabs;
  slabs.lead = {5, 3};
  slabs.k = 40;
  slabs.block = 16;
  slabs.zp = true;
  slabs.indices = {4, -5, 2};
  check_op(slabs);
}

TEST(GatherBlockQuantized, ManyRowsSplitAcrossThreads) {
  OpCase c;
  c.lead = {300};
  c.k = 512;
  c.index_shape = {128};
  c.indices.clear();
  for (int64_t i = 0; i < 128; ++i) c.indices.push_back((i * 37) % 600 - 300);
  check_op(c);
}

TEST(GatherBlockQuantized, HandComputedValues) {
  // Row 1 = bytes 0x21, 0xF0: codes 1, 2, 0, 15; block 16, scale 0.5, default zp 8.
  Tensor data = test::make_tensor<uint8_t>({2, 2}, {0x00, 0x00, 0x21, 0xF0});
  Tensor idx = test::make_tensor<int64_t>({1}, {-1});
  Tensor scales = test::make_tensor<float>({2, 1}, {1.0f, 0.5f});
  auto r = run_op("GatherBlockQuantized", {&data, &idx, &scales},
                  {attr_int("block_size", 16), attr_int("quantize_axis", 1)}, 1, 1, "com.microsoft");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(test::values_of<float>((*r)[0]), (std::vector<float>{-3.5f, -3.0f, -4.0f, 3.5f}));
  // Packed zero point 0x3 for row 1 (low nibble of its byte): (q - 3) * 0.5.
  Tensor zp = test::make_tensor<uint8_t>({2, 1}, {0xF7, 0x53});
  r = run_op("GatherBlockQuantized", {&data, &idx, &scales, &zp},
             {attr_int("block_size", 16), attr_int("quantize_axis", -1)}, 1, 1, "com.microsoft");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(test::values_of<float>((*r)[0]), (std::vector<float>{-1.0f, -0.5f, -1.5f, 6.0f}));
}

TEST(GatherBlockQuantized, OutOfRangeIndexNamesIndexAndBound) {
  for (int64_t bad : {10, -11}) {
    OpCase c;
    c.indices = {0, bad, 1};
    const OpInputs in = make_inputs(OpCase{});
    Tensor idx = test::make_tensor<int64_t>({3}, {0, bad, 1});
    auto r = run_op("GatherBlockQuantized", {&in.data, &idx, &in.scales}, attrs_of(c), 1, 1, "com.microsoft");
    ASSERT_FALSE(r.is_ok());
    const std::string msg = r.status().to_string();
    EXPECT_NE(msg.find(std::to_string(bad)), std::string::npos) << msg;
    EXPECT_NE(msg.find("10"), std::string::npos) << msg;
  }
}

TEST(GatherBlockQuantized, RejectsBadAttributesAndShapes) {
  const OpCase c;
  const OpInputs in = make_inputs(c);
  auto with = [&](std::vector<ir::Attribute> attrs) { return run_gbq(in, false, std::move(attrs)).status(); };
  EXPECT_FALSE(with({attr_int("block_size", 8), attr_int("quantize_axis", 1)}).is_ok());
  EXPECT_FALSE(with({attr_int("block_size", 48), attr_int("quantize_axis", 1)}).is_ok());
  EXPECT_FALSE(with({attr_int("block_size", 32), attr_int("bits", 3), attr_int("quantize_axis", 1)}).is_ok());
  EXPECT_FALSE(with({attr_int("block_size", 32), attr_int("gather_axis", 1), attr_int("quantize_axis", 1)}).is_ok());
  EXPECT_FALSE(with({attr_int("block_size", 32), attr_int("quantize_axis", 0)}).is_ok());
  // Scales for block 64 do not fit block 32.
  Tensor scales = Tensor::allocate(DType::kF32, {10, 1});
  auto r = run_op("GatherBlockQuantized", {&in.data, &in.indices, &scales}, attrs_of(c), 1, 1, "com.microsoft");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().to_string().find("scales"), std::string::npos) << r.status().to_string();
  // Zero points must be packed two a byte for 4-bit: 2 blocks -> 1 byte a row.
  Tensor zp = Tensor::allocate(DType::kU8, {10, 2});
  r = run_op("GatherBlockQuantized", {&in.data, &in.indices, &in.scales, &zp}, attrs_of(c), 1, 1, "com.microsoft");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().to_string().find("zero_points"), std::string::npos) << r.status().to_string();
}

}  // namespace
}  // namespace ember
