// com.microsoft GroupQueryAttention: Ember's outputs (attention and present
// K/V) against ONNX Runtime's, one single-node model per case, over first
// prompts (with right padding), decode steps over a past, subsequent prompts,
// packed and separate QKV, rotary (half/interleaved, partial), local windows,
// softcap, scale, attention bias, head sinks and smooth softmax.
// ctest: every ISA level
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ostream>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "compare.h"
#include "model_builder.h"
#include "ort_reference.h"
#include "runtime/session.h"

namespace ember::ortref {
namespace {

struct Param {
  std::string name;
  int64_t batch = 1, seq = 1, past = 0, heads = 4, kv_heads = 2, head_size = 16;
  std::vector<int32_t> totals;  // per batch row: past + new valid tokens
  bool packed = false;
  bool rotary = false, interleaved = false;
  int64_t rot = 0;  // 0: the whole head
  int64_t window = -1;
  bool window_cache = false;  // sliding_window_cache=1 (the model builder's windowed layers)
  float softcap = 0.0f, scale = 0.0f;
  bool bias = false, sink = false, smooth = false;
  DType dtype = DType::kF32;
};

void PrintTo(const Param& p, std::ostream* os) { *os << p.name; }
std::string param_name(const testing::TestParamInfo<Param>& info) { return info.param.name; }

constexpr int64_t kMaxPos = 1024;

Tensor in_dtype(const Tensor& f32, DType dtype) {
  if (dtype == DType::kF32) return f32;
  Tensor t = Tensor::allocate(dtype, f32.shape());
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<Float16>()[i] = Float16(f32.data_as<float>()[i]);
  return t;
}

Tensor random_tensor(std::vector<int64_t> dims, std::mt19937& rng, float lo, float hi, DType dtype = DType::kF32) {
  Tensor t = Tensor::allocate(DType::kF32, Shape(std::span<const int64_t>(dims)));
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = d(rng);
  return in_dtype(t, dtype);
}

struct Case {
  std::string bytes;
  std::vector<std::pair<std::string, Tensor>> inputs;
};

Case build(const Param& p) {
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(p.name)));
  const int64_t total = *std::max_element(p.totals.begin(), p.totals.end());
  const int64_t total_len = p.seq == total || p.past == 0 ? total : std::max<int64_t>(total, p.seq);
  Case c;
  ModelBuilder mb(21);
  mb.set_opset("com.microsoft", 1);
  mb.set_ir_version(10);
  const int64_t q_hidden = (p.packed ? p.heads + 2 * p.kv_heads : p.heads) * p.head_size;
  const int64_t kv_hidden = p.kv_heads * p.head_size;
  auto input = [&](const std::string& name, Tensor t) {
    mb.add_input(name, t.dtype(), std::vector<int64_t>(t.shape().begin(), t.shape().end()));
    c.inputs.emplace_back(name, std::move(t));
  };
  input("query", random_tensor({p.batch, p.seq, q_hidden}, rng, -1.5f, 1.5f, p.dtype));
  if (!p.packed) {
    input("key", random_tensor({p.batch, p.seq, kv_hidden}, rng, -1.5f, 1.5f, p.dtype));
    input("value", random_tensor({p.batch, p.seq, kv_hidden}, rng, -1.0f, 1.0f, p.dtype));
  }
  if (p.past > 0) {
    input("past_key", random_tensor({p.batch, p.kv_heads, p.past, p.head_size}, rng, -1.5f, 1.5f, p.dtype));
    input("past_value", random_tensor({p.batch, p.kv_heads, p.past, p.head_size}, rng, -1.0f, 1.0f, p.dtype));
  }
  Tensor seqlens = Tensor::allocate(DType::kI32, {p.batch});
  for (int64_t b = 0; b < p.batch; ++b) seqlens.data_as<int32_t>()[b] = p.totals[static_cast<size_t>(b)] - 1;
  input("seqlens_k", std::move(seqlens));
  Tensor total_t = Tensor::allocate(DType::kI32, Shape{});
  total_t.data_as<int32_t>()[0] = static_cast<int32_t>(total_len);
  input("total_sequence_length", std::move(total_t));
  std::vector<std::string> node_inputs = {"query", p.packed ? "" : "key", p.packed ? "" : "value",
                                          p.past > 0 ? "past_key" : "", p.past > 0 ? "past_value" : "",
                                          "seqlens_k", "total_sequence_length"};
  if (p.rotary) {
    const int64_t rot = p.rot ? p.rot : p.head_size;
    Tensor cos = Tensor::allocate(DType::kF32, {kMaxPos, rot / 2});
    Tensor sin = Tensor::allocate(DType::kF32, {kMaxPos, rot / 2});
    for (int64_t r = 0; r < kMaxPos; ++r) {
      for (int64_t i = 0; i < rot / 2; ++i) {
        const double angle = static_cast<double>(r) * std::pow(10000.0, -2.0 * static_cast<double>(i) / rot);
        cos.data_as<float>()[r * rot / 2 + i] = static_cast<float>(std::cos(angle));
        sin.data_as<float>()[r * rot / 2 + i] = static_cast<float>(std::sin(angle));
      }
    }
    mb.add_initializer("cos", in_dtype(cos, p.dtype));
    mb.add_initializer("sin", in_dtype(sin, p.dtype));
    node_inputs.push_back("cos");
    node_inputs.push_back("sin");
  } else if (p.bias || p.sink) {
    node_inputs.push_back("");
    node_inputs.push_back("");
  }
  if (p.bias || p.sink) node_inputs.push_back("");  // position_ids
  if (p.bias) {
    input("attention_bias", random_tensor({p.batch, 1, p.seq, total_len}, rng, -2.0f, 2.0f, p.dtype));
    node_inputs.push_back("attention_bias");
  } else if (p.sink) {
    node_inputs.push_back("");
  }
  if (p.sink) {
    input("head_sink", random_tensor({p.heads}, rng, -1.0f, 2.0f, p.dtype));
    node_inputs.push_back("head_sink");
  }
  std::vector<ir::Attribute> attrs = {attr_int("num_heads", p.heads), attr_int("kv_num_heads", p.kv_heads)};
  if (p.rotary) attrs.push_back(attr_int("do_rotary", 1));
  if (p.interleaved) attrs.push_back(attr_int("rotary_interleaved", 1));
  if (p.window > 0) attrs.push_back(attr_int("local_window_size", p.window));
  if (p.window_cache) attrs.push_back(attr_int("sliding_window_cache", 1));
  if (p.softcap > 0) attrs.push_back(attr_float("softcap", p.softcap));
  if (p.scale != 0) attrs.push_back(attr_float("scale", p.scale));
  if (p.smooth) attrs.push_back(attr_int("smooth_softmax", 1));
  mb.add_node("GroupQueryAttention", node_inputs, {"output", "present_key", "present_value"}, attrs, "com.microsoft");
  mb.add_output_unshaped("output", p.dtype);
  mb.add_output_unshaped("present_key", p.dtype);
  mb.add_output_unshaped("present_value", p.dtype);
  c.bytes = mb.serialize();
  return c;
}

// Both sum q.k and p.v in f32 (ORT: MLAS GEMMs over the whole row, Ember: chunked
// dot products and an online softmax), so outputs of magnitude <= 1 differ by a
// few f32 ulps of the largest term: seen max |diff| about 1e-6 over this suite;
// a wrong mask, position or head mapping moves outputs by 1e-2 or more. Present
// K/V are copies and rotations computed the same way: within 1 ulp.
constexpr Tolerance kOutputTolerance{1e-5, 2e-5};
constexpr Tolerance kPresentTolerance{0.0, 1e-6};
// float16: both compute in f32 and round the output once (one f16 ulp is ~1e-3
// relative); keys are rotated in f32 and rounded to f16, one ulp apart at most.
constexpr Tolerance kF16Tolerance{2e-3, 2e-3};

class GqaOrt : public testing::TestWithParam<Param> {};

TEST_P(GqaOrt, MatchesOnnxRuntime) {
  const Param& p = GetParam();
  const Case c = build(p);
  std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(c.bytes.data()), c.bytes.size());
  auto ort = OrtSession::load_from_bytes(bytes);
  ASSERT_TRUE(ort.is_ok()) << ort.status().to_string();
  auto ember = runtime::Session::load_from_bytes(bytes);
  ASSERT_TRUE(ember.is_ok()) << ember.status().to_string();
  std::vector<OrtInput> ort_in;
  std::vector<runtime::NamedInput> ember_in;
  for (const auto& [name, t] : c.inputs) {
    ort_in.push_back({name, &t});
    ember_in.push_back({name, &t});
  }
  auto want = (*ort)->run(ort_in);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  auto got = (*ember)->run(ember_in);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  // Rows at or past a row's total length are padding (first prompt): compare valid rows.
  const Tensor& out_want = (*want)[0];
  const Tensor& out_got = (*got)[0];
  ASSERT_EQ(out_got.shape(), out_want.shape());
  const int64_t row = out_want.dim(2);
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t valid = p.seq == 1 ? 1 : std::min<int64_t>(p.seq, p.totals[static_cast<size_t>(b)]);
    const size_t esize = dtype_size(p.dtype);
    Tensor w = Tensor::allocate(p.dtype, {valid, row});
    Tensor g = Tensor::allocate(p.dtype, {valid, row});
    std::memcpy(w.data(), static_cast<const char*>(out_want.data()) + b * p.seq * row * esize, valid * row * esize);
    std::memcpy(g.data(), static_cast<const char*>(out_got.data()) + b * p.seq * row * esize, valid * row * esize);
    const Status s = compare(g, w, p.dtype == DType::kF16 ? kF16Tolerance : kOutputTolerance);
    EXPECT_TRUE(s.is_ok()) << "output, batch row " << b << ": " << s.to_string();
  }
  for (size_t i : {size_t{1}, size_t{2}}) {
    // Rows at or past a row's total length hold nothing (ORT leaves the buffer's old bytes, Ember zeros).
    Tensor g = (*got)[i].clone(), w = (*want)[i].clone();
    const int64_t rows = w.dim(2), esize = static_cast<int64_t>(dtype_size(p.dtype)), row_bytes = w.dim(3) * esize;
    for (int64_t bh = 0; bh < w.dim(0) * w.dim(1); ++bh) {
      const int64_t total_b = p.totals[static_cast<size_t>(bh / w.dim(1))];
      for (int64_t r = total_b; r < rows; ++r) {
        std::memset(static_cast<char*>(g.data()) + (bh * rows + r) * row_bytes, 0, static_cast<size_t>(row_bytes));
        std::memset(static_cast<char*>(w.data()) + (bh * rows + r) * row_bytes, 0, static_cast<size_t>(row_bytes));
      }
    }
    const Status s = compare(g, w, p.dtype == DType::kF16 ? kF16Tolerance : kPresentTolerance);
    EXPECT_TRUE(s.is_ok()) << (i == 1 ? "present_key: " : "present_value: ") << s.to_string();
  }
}

// ONNX Runtime evicts from a window cache shorter than the sequence; Ember
// refuses it by name rather than read positions that are not where it expects.
TEST(GqaOrtWindowCache, BufferShorterThanSequenceIsRefused) {
  Param p{.name = "evicting", .seq = 1, .past = 16, .totals = {21}, .window = 8};
  p.window_cache = true;
  const Case c = build(p);
  std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(c.bytes.data()), c.bytes.size());
  auto ember = runtime::Session::load_from_bytes(bytes);
  ASSERT_TRUE(ember.is_ok()) << ember.status().to_string();
  std::vector<runtime::NamedInput> in;
  for (const auto& [name, t] : c.inputs) in.push_back({name, &t});
  auto got = (*ember)->run(in);
  ASSERT_FALSE(got.is_ok());
  EXPECT_NE(got.status().message().find("does not evict from window-sized caches"), std::string::npos)
      << got.status().to_string();
}

std::vector<Param> cases() {
  std::vector<Param> out;
  auto add = [&](Param p) { out.push_back(std::move(p)); };
  {
    Param p{.name = "prompt", .seq = 7, .totals = {7}};
    add(p);
    p.name = "prompt_packed_rotary";
    p.packed = true;
    p.rotary = true;
    add(p);
    p.name = "prompt_rotary_interleaved_partial";
    p.packed = false;
    p.interleaved = true;
    p.head_size = 32;
    p.rot = 16;
    add(p);
  }
  {
    Param p{.name = "prompt_long_qwen_heads", .seq = 70, .heads = 14, .kv_heads = 2, .head_size = 64, .totals = {70}};
    p.rotary = true;
    add(p);
    p.name = "prompt_long_window_softcap";
    p.window = 9;
    p.softcap = 3.0f;
    add(p);
  }
  {
    Param p{.name = "prompt_padded_batch2", .batch = 2, .seq = 9, .totals = {9, 5}};
    p.rotary = true;
    add(p);
  }
  for (int64_t past : {1, 20, 300, 600}) {
    Param p{.name = "decode_past" + std::to_string(past), .seq = 1, .past = past, .totals = {static_cast<int32_t>(past + 1)}};
    p.rotary = true;
    add(p);
  }
  {
    Param p{.name = "decode_batch3_ragged", .batch = 3, .seq = 1, .past = 40, .heads = 6, .kv_heads = 3,
            .totals = {41, 12, 30}};
    p.rotary = true;
    add(p);
    p.name = "decode_batch3_ragged_packed_window";
    p.packed = true;
    p.window = 8;
    add(p);
  }
  {
    Param p{.name = "decode_buffer_longer_than_total", .seq = 1, .past = 64, .totals = {20}};
    p.rotary = true;
    add(p);
    // A window cache that has not filled up: nothing is evicted, by ORT or Ember.
    p.name = "decode_window_cache_not_full";
    p.window = 8;
    p.window_cache = true;
    add(p);
    p = Param{.name = "prompt_window_cache", .seq = 30, .past = 48, .totals = {30}, .window = 8};
    p.rotary = true;
    p.window_cache = true;
    add(p);
  }
  {
    Param p{.name = "decode_llama_heads_scale_softcap", .seq = 1, .past = 257, .heads = 32, .kv_heads = 8,
            .head_size = 64, .totals = {258}};
    p.rotary = true;
    p.scale = 0.2f;
    p.softcap = 2.0f;
    add(p);
  }
  {
    Param p{.name = "subsequent_prompt", .seq = 5, .past = 11, .totals = {16}};
    p.rotary = true;
    add(p);
    p.name = "subsequent_prompt_window";
    p.window = 4;
    add(p);
  }
  {
    Param p{.name = "odd_heads_mha", .seq = 3, .heads = 5, .kv_heads = 5, .head_size = 24, .totals = {3}};
    add(p);
  }
  {
    Param p{.name = "decode_bias", .batch = 2, .seq = 1, .past = 10, .totals = {11, 11}, .bias = true};
    add(p);
    p.name = "prompt_bias";
    p.seq = 6;
    p.past = 0;
    p.totals = {6, 6};
    add(p);
  }
  {
    Param p{.name = "decode_sink", .seq = 1, .past = 30, .totals = {31}, .sink = true};
    add(p);
    p.name = "prompt_smooth";
    p.sink = false;
    p.smooth = true;
    p.seq = 8;
    p.past = 0;
    p.totals = {8};
    add(p);
  }
  // float16 twins of a prompt, a long decode, a ragged batch with window, and bias + sink.
  for (const char* base : {"prompt_long_window_softcap", "decode_past600", "decode_batch3_ragged_packed_window",
                           "decode_bias", "decode_sink"}) {
    auto it = std::find_if(out.begin(), out.end(), [&](const Param& p) { return p.name == base; });
    Param p = *it;
    p.name += "_f16";
    p.dtype = DType::kF16;
    out.push_back(p);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Cases, GqaOrt, testing::ValuesIn(cases()), param_name);

}  // namespace
}  // namespace ember::ortref
