// MultiHeadAttention, com.microsoft Attention and ONNX Attention-23 against a
// double-precision attention written here from the ops' definitions: every
// layout is first turned into plain [B, heads, rows, head_size] arrays, scores
// get the masks as ONNX Runtime applies them (padding: + mask_filter_value;
// causal and bool masks: excluded), and a row that sees nothing outputs zeros.
// ctest: every ISA level
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "op_test_util.h"
#include "threading/thread_pool.h"

namespace ember::test {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// f32 scores and sums against double: errors stay near 1e-6 for these O(1) inputs.
constexpr double kTol = 2e-5;

// mask_filter_value where a test masks every key of a row: the row's scores
// then all carry it, and f32 rounds score + filter to its ulp (1e-3 at the
// default -10000, 4e-6 at -64), which the softmax turns into output error.
constexpr float kFilter = -64.0f;

std::vector<float> random_values(int64_t n, uint32_t seed, float lo = -1.5f, float hi = 1.5f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(rng);
  return v;
}

Tensor random_tensor(Shape shape, uint32_t seed) {
  Tensor t = Tensor::allocate(DType::kF32, shape);
  const std::vector<float> v = random_values(t.numel(), seed);
  std::copy(v.begin(), v.end(), t.data_as<float>());
  return t;
}

// Plain [B, N, R, H] heads.
struct Heads {
  int64_t b = 0, n = 0, r = 0, h = 0;
  std::vector<double> x;
  double& at(int64_t bi, int64_t ni, int64_t ri, int64_t d) { return x[static_cast<size_t>(((bi * n + ni) * r + ri) * h + d)]; }
  double at(int64_t bi, int64_t ni, int64_t ri, int64_t d) const {
    return x[static_cast<size_t>(((bi * n + ni) * r + ri) * h + d)];
  }
};

Heads make_heads(int64_t b, int64_t n, int64_t r, int64_t h) { return {b, n, r, h, std::vector<double>(static_cast<size_t>(b * n * r * h))}; }

// [B, R, N * H] (+ bias[n * H + d]) to heads.
Heads from_bsd(const Tensor& t, int64_t n, const float* bias = nullptr) {
  const int64_t h = t.dim(2) / n;
  Heads out = make_heads(t.dim(0), n, t.dim(1), h);
  const float* x = t.data_as<float>();
  for (int64_t b = 0; b < out.b; ++b)
    for (int64_t r = 0; r < out.r; ++r)
      for (int64_t ni = 0; ni < n; ++ni)
        for (int64_t d = 0; d < h; ++d)
          out.at(b, ni, r, d) = x[(b * out.r + r) * n * h + ni * h + d] + (bias ? bias[ni * h + d] : 0.0f);
  return out;
}

Heads from_bnsh(const Tensor& t) {
  Heads out = make_heads(t.dim(0), t.dim(1), t.dim(2), t.dim(3));
  for (int64_t i = 0; i < t.numel(); ++i) out.x[static_cast<size_t>(i)] = t.data_as<float>()[i];
  return out;
}

Heads concat_rows(const Heads& a, const Heads& b) {
  Heads out = make_heads(b.b, b.n, a.r + b.r, b.h);
  for (int64_t bi = 0; bi < b.b; ++bi)
    for (int64_t ni = 0; ni < b.n; ++ni)
      for (int64_t r = 0; r < out.r; ++r)
        for (int64_t d = 0; d < b.h; ++d) out.at(bi, ni, r, d) = r < a.r ? a.at(bi, ni, r, d) : b.at(bi, ni, r - a.r, d);
  return out;
}

// Additive scores [B, qN, S, T] (kInf entries: -inf) and the reference.
struct Scores {
  int64_t b, n, s, t;
  std::vector<double> add;
  double& at(int64_t bi, int64_t ni, int64_t si, int64_t ti) { return add[static_cast<size_t>(((bi * n + ni) * s + si) * t + ti)]; }
};
Scores zero_scores(int64_t b, int64_t n, int64_t s, int64_t t) { return {b, n, s, t, std::vector<double>(static_cast<size_t>(b * n * s * t))}; }

void add_causal(Scores& sc, int64_t offset) {
  for (int64_t b = 0; b < sc.b; ++b)
    for (int64_t n = 0; n < sc.n; ++n)
      for (int64_t s = 0; s < sc.s; ++s)
        for (int64_t t = offset + s + 1; t < sc.t; ++t) sc.at(b, n, s, t) = -kInf;
}

// out [B, qN, S, Hv]; query head n reads key/value head n / (qN / kvN).
Heads reference(const Heads& q, const Heads& k, const Heads& v, const Scores& sc, double scale, double softcap = 0) {
  Heads out = make_heads(q.b, q.n, q.r, v.h);
  const int64_t group = q.n / k.n;
  std::vector<double> p(static_cast<size_t>(k.r));
  for (int64_t b = 0; b < q.b; ++b) {
    for (int64_t n = 0; n < q.n; ++n) {
      for (int64_t s = 0; s < q.r; ++s) {
        double max = -kInf;
        for (int64_t t = 0; t < k.r; ++t) {
          double dot = 0;
          for (int64_t d = 0; d < q.h; ++d) dot += q.at(b, n, s, d) * k.at(b, n / group, t, d);
          double x = scale * dot;
          if (softcap > 0) x = softcap * std::tanh(x / softcap);
          x += sc.add[static_cast<size_t>(((b * q.n + n) * q.r + s) * k.r + t)];
          p[static_cast<size_t>(t)] = x;
          max = std::max(max, x);
        }
        if (!std::isfinite(max)) continue;
        double sum = 0;
        for (double& x : p) sum += x = std::exp(x - max);
        for (int64_t d = 0; d < v.h; ++d) {
          double acc = 0;
          for (int64_t t = 0; t < k.r; ++t) acc += p[static_cast<size_t>(t)] * v.at(b, n / group, t, d);
          out.at(b, n, s, d) = acc / sum;
        }
      }
    }
  }
  return out;
}

// Compares the op's output in [B, S, N * Hv] (or BNSH when bnsh) layout.
void expect_output(const Tensor& got, const Heads& want, bool bnsh = false, double tol = kTol) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.x.size()));
  for (int64_t b = 0; b < want.b; ++b)
    for (int64_t n = 0; n < want.n; ++n)
      for (int64_t s = 0; s < want.r; ++s)
        for (int64_t d = 0; d < want.h; ++d) {
          const int64_t i = bnsh ? ((b * want.n + n) * want.r + s) * want.h + d : ((b * want.r + s) * want.n + n) * want.h + d;
          ASSERT_NEAR(got.data_as<float>()[i], want.at(b, n, s, d), tol) << "b=" << b << " n=" << n << " s=" << s << " d=" << d;
        }
}

void expect_cache(const Tensor& got, const Heads& want, double tol = 1e-6) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.x.size()));
  for (int64_t i = 0; i < got.numel(); ++i) ASSERT_NEAR(got.data_as<float>()[i], want.x[static_cast<size_t>(i)], tol) << i;
}

Tensor int_tensor(Shape shape, std::vector<int32_t> v) { return make_tensor<int32_t>(shape, std::move(v)); }

// ---------------------------------------------------------------- MultiHeadAttention

struct MhaCase {
  int64_t batch = 2, seq = 3, kv_seq = 3, past = 0, heads = 3, head_size = 4, v_head_size = 4;
  bool bias = false, causal = false;
};

struct MhaInputs {
  Tensor q, k, v, bias, pk, pv;
};

MhaInputs mha_inputs(const MhaCase& c, uint32_t seed) {
  const int64_t d = c.heads * c.head_size, dv = c.heads * c.v_head_size;
  MhaInputs in{random_tensor({c.batch, c.seq, d}, seed), random_tensor({c.batch, c.kv_seq, d}, seed + 1),
               random_tensor({c.batch, c.kv_seq, dv}, seed + 2), random_tensor({2 * d + dv}, seed + 3),
               random_tensor({c.batch, c.heads, c.past, c.head_size}, seed + 4),
               random_tensor({c.batch, c.heads, c.past, c.v_head_size}, seed + 5)};
  return in;
}

Result<std::vector<Tensor>> run_mha(const MhaCase& c, const MhaInputs& in, const Tensor* mask, const Tensor* attn_bias,
                                    size_t outputs = 3, std::vector<ir::Attribute> extra = {}) {
  std::vector<ir::Attribute> attrs = {attr_int("num_heads", c.heads), attr_int("unidirectional", c.causal)};
  for (auto& a : extra) attrs.push_back(a);
  const bool past = c.past > 0;
  return run_op("MultiHeadAttention",
                {&in.q, &in.k, &in.v, c.bias ? &in.bias : nullptr, mask, attn_bias, past ? &in.pk : nullptr,
                 past ? &in.pv : nullptr},
                attrs, outputs, 1, "com.microsoft");
}

Heads mha_expected(const MhaCase& c, const MhaInputs& in, Scores sc, Heads* k_all = nullptr, Heads* v_all = nullptr) {
  const int64_t d = c.heads * c.head_size;
  const float* bias = c.bias ? in.bias.data_as<float>() : nullptr;
  const Heads q = from_bsd(in.q, c.heads, bias);
  Heads k = from_bsd(in.k, c.heads, bias ? bias + d : nullptr);
  Heads v = from_bsd(in.v, c.heads, bias ? bias + 2 * d : nullptr);
  if (c.past > 0) {
    k = concat_rows(from_bnsh(in.pk), k);
    v = concat_rows(from_bnsh(in.pv), v);
  }
  if (c.causal && c.seq > 1) add_causal(sc, c.past);
  if (k_all) *k_all = k;
  if (v_all) *v_all = v;
  return reference(q, k, v, sc, 1.0 / std::sqrt(static_cast<double>(c.head_size)));
}

TEST(MultiHeadAttention, PlainBiasOddHeadsAndWiderValues) {
  for (bool bias : {false, true}) {
    MhaCase c;
    c.heads = 3;
    c.kv_seq = 5;
    c.v_head_size = 6;
    c.bias = bias;
    const MhaInputs in = mha_inputs(c, 10);
    auto out = run_mha(c, in, nullptr, nullptr);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    Heads k, v;
    expect_output((*out)[0], mha_expected(c, in, zero_scores(2, 3, 3, 5), &k, &v));
    expect_cache((*out)[1], k);
    expect_cache((*out)[2], v);
  }
}

TEST(MultiHeadAttention, PastPresentCausal) {
  for (int64_t past : {0, 4}) {
    for (int64_t seq : {1, 3}) {
      MhaCase c;
      c.past = past;
      c.seq = c.kv_seq = seq;
      c.causal = true;
      c.bias = true;
      const MhaInputs in = mha_inputs(c, 20);
      for (size_t outputs : {size_t{1}, size_t{3}}) {
        auto out = run_mha(c, in, nullptr, nullptr, outputs);
        ASSERT_TRUE(out.is_ok()) << out.status().to_string();
        Heads k, v;
        expect_output((*out)[0], mha_expected(c, in, zero_scores(2, 3, seq, past + seq), &k, &v));
        if (outputs == 3) {
          expect_cache((*out)[1], k);
          expect_cache((*out)[2], v);
        }
      }
    }
  }
}

// Masked keys add mask_filter_value; a row with every key masked therefore
// attends to all of them (the -10000 shift cancels), as ONNX Runtime computes.
Scores padding_scores(const MhaCase& c, const std::vector<std::vector<int>>& keep_bt, float filter = -10000.0f) {
  const int64_t t = c.past + c.kv_seq;
  Scores sc = zero_scores(c.batch, c.heads, c.seq, t);
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t n = 0; n < c.heads; ++n)
      for (int64_t s = 0; s < c.seq; ++s)
        for (int64_t ti = 0; ti < t; ++ti) {
          const auto& keep = keep_bt[static_cast<size_t>(keep_bt.size() == static_cast<size_t>(c.batch) ? b : b * c.seq + s)];
          if (!keep[static_cast<size_t>(ti)]) sc.at(b, n, s, ti) = filter;
        }
  return sc;
}

TEST(MultiHeadAttention, KeyPaddingMaskForms) {
  MhaCase c;
  c.past = 2;
  c.causal = true;
  const MhaInputs in = mha_inputs(c, 30);
  const int64_t t = 5;
  // [B] lengths: 3 and 0 (row fully masked).
  const std::vector<std::vector<int>> lens = {{1, 1, 1, 0, 0}, {0, 0, 0, 0, 0}};
  const Tensor m1 = int_tensor({2}, {3, 0});
  const Tensor m3b2 = int_tensor({8}, {3, 0, 7, 7, 7, 7, 7, 7});
  for (const Tensor* m : {&m1, &m3b2}) {
    auto out = run_mha(c, in, m, nullptr, 3, {attr_float("mask_filter_value", kFilter)});
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    expect_output((*out)[0], mha_expected(c, in, padding_scores(c, lens, kFilter)));
  }
  const std::vector<std::vector<int>> keep2 = {{1, 0, 1, 1, 0}, {0, 1, 0, 0, 1}};
  const Tensor m2 = int_tensor({2, t}, {1, 0, 1, 1, 0, 0, 1, 0, 0, 1});
  auto out = run_mha(c, in, &m2, nullptr, 3, {attr_float("mask_filter_value", -50.0f)});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  expect_output((*out)[0], mha_expected(c, in, padding_scores(c, keep2, -50.0f)));
  std::vector<std::vector<int>> keep3;
  std::vector<int32_t> flat;
  std::mt19937 rng(5);
  for (int i = 0; i < 2 * 3; ++i) {
    keep3.emplace_back();
    for (int j = 0; j < t; ++j) {
      keep3.back().push_back(static_cast<int>(rng() % 3 != 0));
      flat.push_back(keep3.back().back());
    }
  }
  const Tensor m3 = int_tensor({2, 3, t}, flat);
  out = run_mha(c, in, &m3, nullptr, 3, {attr_float("mask_filter_value", kFilter)});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  expect_output((*out)[0], mha_expected(c, in, padding_scores(c, keep3, kFilter)));
}

TEST(MultiHeadAttention, AttentionBiasBroadcastWithMask) {
  MhaCase c;
  c.kv_seq = 4;
  const MhaInputs in = mha_inputs(c, 40);
  const Tensor m = int_tensor({2}, {2, 4});
  for (Shape shape : {Shape{1, 3, 3, 4}, Shape{2, 1, 3, 4}, Shape{2, 3, 3, 4}, Shape{1, 1, 3, 4}}) {
    const Tensor ab = random_tensor(shape, 41);
    for (const Tensor* mask : {static_cast<const Tensor*>(nullptr), &m}) {
      auto out = run_mha(c, in, mask, &ab);
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      Scores sc = mask ? padding_scores(c, {{1, 1, 0, 0}, {1, 1, 1, 1}}) : zero_scores(2, 3, 3, 4);
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t n = 0; n < 3; ++n)
          for (int64_t s = 0; s < 3; ++s)
            for (int64_t t = 0; t < 4; ++t)
              sc.at(b, n, s, t) += ab.data_as<float>()[(((shape[0] == 1 ? 0 : b) * shape[1] + (shape[1] == 1 ? 0 : n)) * 3 + s) * 4 + t];
      expect_output((*out)[0], mha_expected(c, in, sc));
    }
  }
}

TEST(MultiHeadAttention, CrossAttentionOnBnshKeyValue) {
  const Tensor q = random_tensor({2, 3, 10}, 50);
  const Tensor k = random_tensor({2, 2, 6, 5}, 51);
  const Tensor v = random_tensor({2, 2, 6, 5}, 52);
  auto out = run_op("MultiHeadAttention", {&q, &k, &v}, {attr_int("num_heads", 2)}, 3, 1, "com.microsoft");
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  expect_output((*out)[0], reference(from_bsd(q, 2), from_bnsh(k), from_bnsh(v), zero_scores(2, 2, 3, 6), 1 / std::sqrt(5.0)));
  expect_cache((*out)[1], from_bnsh(k));
  expect_cache((*out)[2], from_bnsh(v));
}

TEST(MultiHeadAttention, RejectsWhatOrtCpuRejects) {
  const Tensor q5 = random_tensor({1, 2, 2, 3, 4}, 1);
  auto r = run_op("MultiHeadAttention", {&q5}, {attr_int("num_heads", 2)}, 1, 1, "com.microsoft");
  EXPECT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("packed QKV"), std::string::npos) << r.status().to_string();
  const Tensor q = random_tensor({1, 2, 8}, 2);
  const Tensor kv5 = random_tensor({1, 2, 2, 2, 4}, 3);
  r = run_op("MultiHeadAttention", {&q, &kv5}, {attr_int("num_heads", 2)}, 1, 1, "com.microsoft");
  EXPECT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("packed KV"), std::string::npos) << r.status().to_string();
  // A [B, L] padding mask with a past: ONNX Runtime wants [B, P + L].
  MhaCase c;
  c.past = 2;
  const MhaInputs in = mha_inputs(c, 4);
  const Tensor m = int_tensor({2, 3}, {1, 1, 1, 1, 1, 1});
  r = run_mha(c, in, &m, nullptr);
  EXPECT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("key_padding_mask"), std::string::npos) << r.status().to_string();
}

TEST(MultiHeadAttention, SameResultOnOneAndTwoThreads) {
  MhaCase c;
  c.batch = 2;
  c.seq = c.kv_seq = 37;
  c.past = 70;
  c.heads = 4;
  c.head_size = c.v_head_size = 32;
  c.causal = true;
  c.bias = true;
  const MhaInputs in = mha_inputs(c, 60);
  const Tensor m = int_tensor({2}, {90, 107});
  std::vector<Tensor> results[2];
  for (int threads : {1, 2}) {
    threading::ScopedThreadLimit limit(threads);
    auto out = run_mha(c, in, &m, nullptr);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    results[threads - 1] = std::move(*out);
  }
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_EQ(0, std::memcmp(results[0][i].data(), results[1][i].data(), results[0][i].nbytes())) << "output " << i;
  }
  std::vector<std::vector<int>> keep(2, std::vector<int>(107, 1));
  for (int t = 90; t < 107; ++t) keep[0][static_cast<size_t>(t)] = 0;
  expect_output(results[0][0], mha_expected(c, in, padding_scores(c, keep)));
}

// ---------------------------------------------------------------- com.microsoft Attention

struct ContribCase {
  int64_t batch = 2, seq = 3, input_hidden = 7, heads = 3, head_size = 4, v_head_size = 4, past = 0;
  bool causal = false, bias = true;
};

struct ContribInputs {
  Tensor x, w, bias, past;
};

ContribInputs contrib_inputs(const ContribCase& c, uint32_t seed) {
  const int64_t width = c.heads * (2 * c.head_size + c.v_head_size);
  return {random_tensor({c.batch, c.seq, c.input_hidden}, seed), random_tensor({c.input_hidden, width}, seed + 1),
          random_tensor({width}, seed + 2), random_tensor({2, c.batch, c.heads, c.past, c.head_size}, seed + 3)};
}

Result<std::vector<Tensor>> run_contrib(const ContribCase& c, const ContribInputs& in, const Tensor* mask,
                                        const Tensor* attn_bias, size_t outputs = 2) {
  std::vector<ir::Attribute> attrs = {attr_int("num_heads", c.heads), attr_int("unidirectional", c.causal),
                                      attr_float("mask_filter_value", kFilter)};
  if (c.v_head_size != c.head_size) {
    attrs.push_back(attr_ints("qkv_hidden_sizes", {c.heads * c.head_size, c.heads * c.head_size, c.heads * c.v_head_size}));
  }
  return run_op("Attention", {&in.x, &in.w, c.bias ? &in.bias : nullptr, mask, c.past > 0 ? &in.past : nullptr, attn_bias},
                attrs, outputs, 1, "com.microsoft");
}

// The projection in double, split into heads; present = [past K ; K], [past V ; V].
Heads round_f16(Heads h);

// f16_cache: attention reads K and V as a float16 cache holds them.
Heads contrib_expected(const ContribCase& c, const ContribInputs& in, Scores sc, Heads* present_k = nullptr,
                       Heads* present_v = nullptr, bool f16_cache = false) {
  const int64_t dq = c.heads * c.head_size, width = in.w.dim(1);
  Heads proj[3] = {make_heads(c.batch, c.heads, c.seq, c.head_size), make_heads(c.batch, c.heads, c.seq, c.head_size),
                   make_heads(c.batch, c.heads, c.seq, c.v_head_size)};
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t s = 0; s < c.seq; ++s)
      for (int64_t j = 0; j < width; ++j) {
        double acc = c.bias ? in.bias.data_as<float>()[j] : 0.0;
        for (int64_t i = 0; i < c.input_hidden; ++i) {
          acc += static_cast<double>(in.x.data_as<float>()[(b * c.seq + s) * c.input_hidden + i]) * in.w.data_as<float>()[i * width + j];
        }
        const int64_t part = j < dq ? 0 : j < 2 * dq ? 1 : 2, col = j - part * dq;
        proj[part].at(b, col / proj[part].h, s, col % proj[part].h) = acc;
      }
  Heads k = proj[1], v = proj[2];
  if (c.past > 0) {
    Heads pk = make_heads(c.batch, c.heads, c.past, c.head_size), pv = pk;
    const int64_t half = in.past.numel() / 2;
    for (int64_t i = 0; i < half; ++i) {
      pk.x[static_cast<size_t>(i)] = in.past.data_as<float>()[i];
      pv.x[static_cast<size_t>(i)] = in.past.data_as<float>()[half + i];
    }
    k = concat_rows(pk, k);
    v = concat_rows(pv, v);
  }
  if (c.causal && c.seq > 1) add_causal(sc, c.past);
  if (present_k) *present_k = k;
  if (present_v) *present_v = v;
  if (f16_cache) return reference(proj[0], round_f16(k), round_f16(v), sc, 1.0 / std::sqrt(static_cast<double>(c.head_size)));
  return reference(proj[0], k, v, sc, 1.0 / std::sqrt(static_cast<double>(c.head_size)));
}

TEST(AttentionContrib, ProjectionPastPresentCausal) {
  for (int64_t past : {0, 3}) {
    for (bool causal : {false, true}) {
      ContribCase c;
      c.past = past;
      c.causal = causal;
      const ContribInputs in = contrib_inputs(c, 70);
      auto out = run_contrib(c, in, nullptr, nullptr);
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      Heads k, v;
      expect_output((*out)[0], contrib_expected(c, in, zero_scores(2, 3, 3, past + 3), &k, &v));
      const Tensor& p = (*out)[1];
      ASSERT_EQ(p.numel(), static_cast<int64_t>(k.x.size() + v.x.size()));
      for (size_t i = 0; i < k.x.size(); ++i) {
        ASSERT_NEAR(p.data_as<float>()[i], k.x[i], 1e-5);
        ASSERT_NEAR(p.data_as<float>()[k.x.size() + i], v.x[i], 1e-5);
      }
    }
  }
}

TEST(AttentionContrib, NoBiasAndWiderValues) {
  ContribCase c;
  c.bias = false;
  c.v_head_size = 5;
  const ContribInputs in = contrib_inputs(c, 80);
  auto out = run_contrib(c, in, nullptr, nullptr, 1);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  expect_output((*out)[0], contrib_expected(c, in, zero_scores(2, 3, 3, 3)));
}

TEST(AttentionContrib, MaskIndexForms) {
  ContribCase c;
  c.past = 2;
  c.causal = true;
  const ContribInputs in = contrib_inputs(c, 90);
  // [B] right padding, [2B] right and left padding (start 4 > end 3: all masked).
  const Tensor m1 = int_tensor({2}, {4, 2});
  auto out = run_contrib(c, in, &m1, nullptr);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  MhaCase shape{2, 3, 3, 2, 3, 4, 4};
  expect_output((*out)[0], contrib_expected(c, in, padding_scores(shape, {{1, 1, 1, 1, 0}, {1, 1, 0, 0, 0}}, kFilter)));
  const Tensor m2b = int_tensor({4}, {5, 3, 1, 4});
  out = run_contrib(c, in, &m2b, nullptr);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  expect_output((*out)[0], contrib_expected(c, in, padding_scores(shape, {{0, 1, 1, 1, 1}, {0, 0, 0, 0, 0}}, kFilter)));
  const Tensor m2 = int_tensor({2, 5}, {0, 1, 1, 0, 1, 1, 1, 1, 1, 0});
  out = run_contrib(c, in, &m2, nullptr);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  expect_output((*out)[0], contrib_expected(c, in, padding_scores(shape, {{0, 1, 1, 0, 1}, {1, 1, 1, 1, 0}}, kFilter)));
  const Tensor m4 = int_tensor({2, 1, 5, 5}, std::vector<int32_t>(50, 1));
  EXPECT_FALSE(run_contrib(c, in, &m4, nullptr).is_ok());
}

TEST(AttentionContrib, AttentionBiasAndRejections) {
  ContribCase c;
  const ContribInputs in = contrib_inputs(c, 100);
  const Tensor ab = random_tensor({1, 3, 3, 3}, 101);
  const Tensor m = int_tensor({2}, {2, 3});
  auto out = run_contrib(c, in, &m, &ab);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  MhaCase shape{2, 3, 3, 0, 3, 4, 4};
  Scores sc = padding_scores(shape, {{1, 1, 0}, {1, 1, 1}}, kFilter);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < 27; ++i) sc.add[static_cast<size_t>(b * 27 + i)] += ab.data_as<float>()[i];
  expect_output((*out)[0], contrib_expected(c, in, sc));
  ContribCase with_past = c;
  with_past.past = 1;
  const ContribInputs in2 = contrib_inputs(with_past, 102);
  const Tensor ab2 = random_tensor({1, 3, 3, 4}, 103);
  EXPECT_FALSE(run_contrib(with_past, in2, nullptr, &ab2).is_ok());
  auto rotary = run_op("Attention", {&in.x, &in.w, &in.bias}, {attr_int("num_heads", 3), attr_int("do_rotary", 1)}, 1, 1,
                       "com.microsoft");
  EXPECT_FALSE(rotary.is_ok());
}

// ---------------------------------------------------------------- ONNX Attention-23

struct OnnxCase {
  int64_t batch = 2, seq = 3, kv_seq = 3, past = 0, q_heads = 6, kv_heads = 2, head_size = 4, v_head_size = 4;
  bool bnsh = true, causal = false;
  float softcap = 0.0f;
};

struct OnnxInputs {
  Tensor q, k, v, pk, pv;
};

OnnxInputs onnx_inputs(const OnnxCase& c, uint32_t seed) {
  auto shape = [&](int64_t heads, int64_t rows, int64_t h) {
    return c.bnsh ? Shape{c.batch, heads, rows, h} : Shape{c.batch, rows, heads * h};
  };
  return {random_tensor(shape(c.q_heads, c.seq, c.head_size), seed),
          random_tensor(shape(c.kv_heads, c.kv_seq, c.head_size), seed + 1),
          random_tensor(shape(c.kv_heads, c.kv_seq, c.v_head_size), seed + 2),
          random_tensor({c.batch, c.kv_heads, c.past, c.head_size}, seed + 3),
          random_tensor({c.batch, c.kv_heads, c.past, c.v_head_size}, seed + 4)};
}

Result<std::vector<Tensor>> run_onnx(const OnnxCase& c, const OnnxInputs& in, const Tensor* mask, size_t outputs = 3,
                                     int64_t qk_mode = -1) {
  std::vector<ir::Attribute> attrs = {attr_int("is_causal", c.causal)};
  if (!c.bnsh) {
    attrs.push_back(attr_int("q_num_heads", c.q_heads));
    attrs.push_back(attr_int("kv_num_heads", c.kv_heads));
  }
  if (c.softcap > 0) attrs.push_back(attr_float("softcap", c.softcap));
  if (qk_mode >= 0) attrs.push_back(attr_int("qk_matmul_output_mode", qk_mode));
  const bool past = c.past > 0;
  return run_op("Attention", {&in.q, &in.k, &in.v, mask, past ? &in.pk : nullptr, past ? &in.pv : nullptr}, attrs,
                outputs, 23);
}

Heads onnx_expected(const OnnxCase& c, const OnnxInputs& in, Scores sc, Heads* k_all = nullptr, Heads* v_all = nullptr) {
  const Heads q = c.bnsh ? from_bnsh(in.q) : from_bsd(in.q, c.q_heads);
  Heads k = c.bnsh ? from_bnsh(in.k) : from_bsd(in.k, c.kv_heads);
  Heads v = c.bnsh ? from_bnsh(in.v) : from_bsd(in.v, c.kv_heads);
  if (c.past > 0) {
    k = concat_rows(from_bnsh(in.pk), k);
    v = concat_rows(from_bnsh(in.pv), v);
  }
  if (c.causal) add_causal(sc, c.past);
  if (k_all) *k_all = k;
  if (v_all) *v_all = v;
  return reference(q, k, v, sc, 1.0 / std::sqrt(static_cast<double>(c.head_size)), c.softcap);
}

TEST(AttentionOnnx, GroupedHeadsLayoutsPastCausal) {
  for (bool bnsh : {true, false}) {
    for (int64_t kv_heads : {1, 2, 3, 6}) {
      for (int64_t past : {0, 4}) {
        OnnxCase c;
        c.bnsh = bnsh;
        c.kv_heads = kv_heads;
        c.past = past;
        c.causal = past > 0;
        c.v_head_size = bnsh ? 5 : 4;
        const OnnxInputs in = onnx_inputs(c, 110);
        auto out = run_onnx(c, in, nullptr);
        ASSERT_TRUE(out.is_ok()) << out.status().to_string();
        Heads k, v;
        expect_output((*out)[0], onnx_expected(c, in, zero_scores(2, 6, 3, past + 3), &k, &v), bnsh);
        expect_cache((*out)[1], k);
        expect_cache((*out)[2], v);
      }
    }
  }
}

TEST(AttentionOnnx, BoolAndFloatMasksBroadcast) {
  OnnxCase c;
  c.past = 2;
  const OnnxInputs in = onnx_inputs(c, 120);
  const int64_t t = 5;
  // bool [S, T] with row 1 fully masked: that row outputs zeros.
  std::vector<uint8_t> keep = {1, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1};
  Tensor mb = Tensor::allocate(DType::kBool, {3, t});
  for (size_t i = 0; i < keep.size(); ++i) mb.data_as<bool>()[i] = keep[i] != 0;
  auto out = run_onnx(c, in, &mb);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  Scores sc = zero_scores(2, 6, 3, t);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t n = 0; n < 6; ++n)
      for (int64_t s = 0; s < 3; ++s)
        for (int64_t ti = 0; ti < t; ++ti) {
          if (!keep[static_cast<size_t>(s * t + ti)]) sc.at(b, n, s, ti) = -kInf;
        }
  expect_output((*out)[0], onnx_expected(c, in, sc), true);
  // float [B, 1, 1, T] and [qN, S, T].
  for (Shape shape : {Shape{2, 1, 3, t}, Shape{6, 3, t}, Shape{3, t}}) {
    const Tensor mf = random_tensor(shape, 121);
    out = run_onnx(c, in, &mf);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    Scores sf = zero_scores(2, 6, 3, t);
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t n = 0; n < 6; ++n)
        for (int64_t s = 0; s < 3; ++s)
          for (int64_t ti = 0; ti < t; ++ti) {
            int64_t i = s * t + ti;
            if (shape.size() == 4) i = (b * 3 + s) * t + ti;
            if (shape.size() == 3) i = (n * 3 + s) * t + ti;
            sf.at(b, n, s, ti) = mf.data_as<float>()[i];
          }
    expect_output((*out)[0], onnx_expected(c, in, sf), true);
  }
  for (Shape bad_shape : {Shape{3, 6}, Shape{2, t}, Shape{3, 3, t}}) {
    const Tensor bad = random_tensor(bad_shape, 122);
    EXPECT_FALSE(run_onnx(c, in, &bad).is_ok()) << shape_to_string(bad_shape);
  }
}

TEST(AttentionOnnx, SoftcapBeforeMaskAndScoreOutputs) {
  OnnxCase c;
  c.causal = true;
  c.softcap = 1.5f;
  const OnnxInputs in = onnx_inputs(c, 130);
  const Tensor mf = random_tensor({3, 3}, 131);
  Scores sc = zero_scores(2, 6, 3, 3);
  for (int64_t i = 0; i < 2 * 6; ++i)
    for (int64_t j = 0; j < 9; ++j) sc.add[static_cast<size_t>(i * 9 + j)] = mf.data_as<float>()[j];
  for (int64_t mode : {0, 1, 2, 3}) {
    auto out = run_onnx(c, in, &mf, 4, mode);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    expect_output((*out)[0], onnx_expected(c, in, sc), true);
    const Heads q = from_bnsh(in.q), k = from_bnsh(in.k);
    const float* qk = (*out)[3].data_as<float>();
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t n = 0; n < 6; ++n)
        for (int64_t s = 0; s < 3; ++s) {
          double row[3], max = -kInf, sum = 0;
          for (int64_t t = 0; t < 3; ++t) {
            double dot = 0;
            for (int64_t d = 0; d < 4; ++d) dot += q.at(b, n, s, d) * k.at(b, n / 3, t, d);
            double x = dot / 2.0;
            if (mode >= 1) x = 1.5 * std::tanh(x / 1.5);
            if (mode >= 2) x = t > s ? -kInf : x + mf.data_as<float>()[s * 3 + t];
            row[t] = x;
            max = std::max(max, x);
          }
          for (double& x : row) sum += mode == 3 ? std::exp(x - max) : 0;
          for (int64_t t = 0; t < 3; ++t) {
            const double want = mode == 3 ? std::exp(row[t] - max) / sum : row[t];
            const float got = qk[((b * 6 + n) * 3 + s) * 3 + t];
            if (want == -kInf) {
              ASSERT_EQ(got, -std::numeric_limits<float>::infinity());
            } else {
              ASSERT_NEAR(got, want, kTol) << "mode " << mode;
            }
          }
        }
  }
}

// ---------------------------------------------------------------- float16

// float16 ops convert their inputs to f32, store caches in float16 and round the
// output once: against the double reference over the f16 inputs, an output of
// magnitude <= 1.5 is off by half an f16 ulp (4.9e-4) plus the f32 error.
constexpr double kF16Tol = 1e-3;

Tensor to_f16(const Tensor& t) {
  Tensor h = Tensor::allocate(DType::kF16, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) h.data_as<Float16>()[i] = Float16(t.data_as<float>()[i]);
  return h;
}

Tensor widen(const Tensor& h) {
  EXPECT_EQ(h.dtype(), DType::kF16);
  Tensor t = Tensor::allocate(DType::kF32, h.shape());
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = h.data_as<Float16>()[i];
  return t;
}

// Values as a float16 cache holds them (attention reads the stored cache).
Heads round_f16(Heads h) {
  for (double& x : h.x) x = static_cast<float>(Float16(static_cast<float>(x)));
  return h;
}

TEST(AttentionFloat16, MultiHeadAttentionPastCausalMaskAndBias) {
  MhaCase c;
  c.past = 2;
  c.causal = true;
  const MhaInputs f = mha_inputs(c, 400);
  const MhaInputs h{to_f16(f.q), to_f16(f.k), to_f16(f.v), to_f16(f.bias), to_f16(f.pk), to_f16(f.pv)};
  const MhaInputs r{widen(h.q), widen(h.k), widen(h.v), widen(h.bias), widen(h.pk), widen(h.pv)};
  const Tensor m = int_tensor({2, 5}, {1, 1, 0, 1, 1, 0, 1, 1, 1, 1});
  const Tensor ab = to_f16(random_tensor({1, 3, 3, 5}, 401));
  auto out = run_mha(c, h, &m, &ab);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  for (const Tensor& t : *out) ASSERT_EQ(t.dtype(), DType::kF16);
  Scores sc = padding_scores(c, {{1, 1, 0, 1, 1}, {0, 1, 1, 1, 1}});
  const Tensor abw = widen(ab);
  for (size_t i = 0; i < sc.add.size(); ++i) sc.add[i] += abw.data_as<float>()[i % static_cast<size_t>(abw.numel())];
  Heads k, v;
  expect_output(widen((*out)[0]), mha_expected(c, r, sc, &k, &v), false, kF16Tol);
  expect_cache(widen((*out)[1]), k, 0.0);  // float16 copies of past and key rows
  expect_cache(widen((*out)[2]), v, 0.0);
  // With a bias the cache holds key + bias rounded once.
  c.bias = true;
  out = run_mha(c, h, nullptr, nullptr);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  const Heads want = mha_expected(c, r, zero_scores(2, 3, 3, 5), &k, &v);
  expect_cache(widen((*out)[1]), round_f16(k), 0.0);
  expect_cache(widen((*out)[2]), round_f16(v), 0.0);
  // Attention reads the rounded cache: |v + bias| < 3 rounds by up to 1e-3.
  expect_output(widen((*out)[0]), want, false, 2.5e-3);
}

TEST(AttentionFloat16, ContribProjectionPastPresent) {
  ContribCase c;
  c.past = 2;
  c.causal = true;
  const ContribInputs f = contrib_inputs(c, 410);
  const ContribInputs h{to_f16(f.x), to_f16(f.w), to_f16(f.bias), to_f16(f.past)};
  const ContribInputs r{widen(h.x), widen(h.w), widen(h.bias), widen(h.past)};
  auto out = run_contrib(c, h, nullptr, nullptr);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  Heads k, v;
  const Heads want = contrib_expected(c, r, zero_scores(2, 3, 3, 5), &k, &v, true);
  const Tensor present = widen((*out)[1]);
  const Heads rk = round_f16(k), rv = round_f16(v);
  for (size_t i = 0; i < k.x.size(); ++i) {
    // The projection differs from double by ~1e-6, which can flip one rounding.
    ASSERT_NEAR(present.data_as<float>()[i], rk.x[i], std::abs(k.x[i]) * 1e-3) << i;
    ASSERT_NEAR(present.data_as<float>()[k.x.size() + i], rv.x[i], std::abs(v.x[i]) * 1e-3) << i;
  }
  // Attention reads the rounded cache; outputs stay below 4 (half an f16 ulp: 2e-3).
  expect_output(widen((*out)[0]), want, false, 2e-3);
}

TEST(AttentionFloat16, OnnxGroupedFloatMaskAndScores) {
  OnnxCase c;
  c.bnsh = false;
  c.past = 2;
  c.causal = true;
  const OnnxInputs f = onnx_inputs(c, 420);
  const OnnxInputs h{to_f16(f.q), to_f16(f.k), to_f16(f.v), to_f16(f.pk), to_f16(f.pv)};
  const OnnxInputs r{widen(h.q), widen(h.k), widen(h.v), widen(h.pk), widen(h.pv)};
  const Tensor mask = to_f16(random_tensor({3, 5}, 421));
  auto out = run_onnx(c, h, &mask, 4, 0);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  for (const Tensor& t : *out) ASSERT_EQ(t.dtype(), DType::kF16);
  Scores sc = zero_scores(2, 6, 3, 5);
  const Tensor mw = widen(mask);
  for (size_t i = 0; i < sc.add.size(); ++i) sc.add[i] = mw.data_as<float>()[i % 15];
  Heads k, v;
  expect_output(widen((*out)[0]), onnx_expected(c, r, sc, &k, &v), false, kF16Tol);
  expect_cache(widen((*out)[1]), k, 0.0);
  expect_cache(widen((*out)[2]), v, 0.0);
  // Output 3 in mode 0: the scaled Q.K, rounded once (|score| < 4: half ulp 1e-3).
  const Tensor qk = widen((*out)[3]);
  const Heads q = from_bsd(r.q, 6);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t n = 0; n < 6; ++n)
      for (int64_t s = 0; s < 3; ++s)
        for (int64_t t = 0; t < 5; ++t) {
          double dot = 0;
          for (int64_t d = 0; d < 4; ++d) dot += q.at(b, n, s, d) * k.at(b, n / 3, t, d);
          ASSERT_NEAR(qk.data_as<float>()[((b * 6 + n) * 3 + s) * 5 + t], dot / 2.0, 1e-3);
        }
}

TEST(AttentionFloat16, OneAndTwoThreadsIdentical) {
  MhaCase c;
  c.past = 40;
  c.seq = c.kv_seq = 17;
  c.bias = c.causal = true;
  const MhaInputs f = mha_inputs(c, 430);
  const MhaInputs h{to_f16(f.q), to_f16(f.k), to_f16(f.v), to_f16(f.bias), to_f16(f.pk), to_f16(f.pv)};
  std::vector<Tensor> results[2];
  for (int threads : {1, 2}) {
    threading::ScopedThreadLimit limit(threads);
    auto out = run_mha(c, h, nullptr, nullptr);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    results[threads - 1] = std::move(*out);
  }
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_EQ(0, std::memcmp(results[0][i].data(), results[1][i].data(), results[0][i].nbytes())) << "output " << i;
  }
}

void expect_error_naming(const Result<std::vector<Tensor>>& r, const std::string& name) {
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find(name), std::string::npos) << r.status().to_string();
}

TEST(AttentionFloat16, MismatchedAndUnsupportedDtypesRejected) {
  MhaCase mc;
  const MhaInputs mf = mha_inputs(mc, 440);
  const MhaInputs mixed{to_f16(mf.q), mf.k, to_f16(mf.v), mf.bias, mf.pk, mf.pv};
  expect_error_naming(run_mha(mc, mixed, nullptr, nullptr), "'key'");
  const MhaInputs half{to_f16(mf.q), to_f16(mf.k), to_f16(mf.v), mf.bias, mf.pk, mf.pv};
  mc.bias = true;
  expect_error_naming(run_mha(mc, half, nullptr, nullptr), "'bias'");
  mc.bias = false;
  const Tensor ab = random_tensor({1, 3, 3, 3}, 441);
  expect_error_naming(run_mha(mc, half, nullptr, &ab), "'attention_bias'");
  Tensor bf = Tensor::allocate(DType::kBF16, mf.q.shape());
  const MhaInputs brain{bf, mf.k, mf.v, mf.bias, mf.pk, mf.pv};
  auto r = run_mha(mc, brain, nullptr, nullptr);
  expect_error_naming(r, "bfloat16");
  EXPECT_EQ(r.status().code(), StatusCode::kNotImplemented) << r.status().to_string();

  ContribCase cc;
  const ContribInputs cf = contrib_inputs(cc, 450);
  expect_error_naming(run_contrib(cc, {to_f16(cf.x), cf.w, to_f16(cf.bias), cf.past}, nullptr, nullptr), "'weights'");
  expect_error_naming(run_contrib(cc, {to_f16(cf.x), to_f16(cf.w), cf.bias, cf.past}, nullptr, nullptr), "'bias'");

  OnnxCase oc;
  oc.past = 2;
  const OnnxInputs of = onnx_inputs(oc, 460);
  expect_error_naming(run_onnx(oc, {to_f16(of.q), to_f16(of.k), of.v, to_f16(of.pk), to_f16(of.pv)}, nullptr), "'V'");
  expect_error_naming(run_onnx(oc, {to_f16(of.q), to_f16(of.k), to_f16(of.v), of.pk, to_f16(of.pv)}, nullptr),
                      "'past_key'");
  const Tensor f32_mask = random_tensor({3, 5}, 461);
  expect_error_naming(run_onnx(oc, {to_f16(of.q), to_f16(of.k), to_f16(of.v), to_f16(of.pk), to_f16(of.pv)}, &f32_mask),
                      "'attn_mask'");
}

// ---------------------------------------------------------------- ONNX Attention-24/25

// Attention-24/25 masks against scores built from the spec's rule: query s
// sits at position o + s (o: the past length, or nonpad[b] - S) and sees key t
// when t <= o + s (causal), o + s - left <= t <= o + s + right (windows, -1
// unbounded) and t < nonpad[b]; attn_mask entries past its last dim mask.
struct WindowCase {
  bool causal = false;
  int64_t left = -1, right = -1, past = 0;
  std::vector<int64_t> nonpad;  // empty: no nonpad_kv_seqlen
  int64_t mask_keys = 0;        // > 0: a float attn_mask [S, mask_keys]
};

TEST(AttentionOnnx, WindowsNonpadAndShortMasks) {
  const std::vector<WindowCase> cases = {
      {true, 1, -1, 2, {}, 0},  {false, 1, 1, 0, {}, 0},  {false, -1, 0, 2, {}, 4}, {true, -1, -1, 0, {5, 3}, 0},
      {true, 2, -1, 0, {4, 1}, 0}, {false, 0, 2, 0, {5, 2}, 3}, {false, -1, -1, 0, {}, 2},
  };
  for (const WindowCase& w : cases) {
    OnnxCase c;
    c.causal = w.causal;
    c.past = w.past;
    c.kv_seq = 5 - w.past;
    const OnnxInputs in = onnx_inputs(c, 140);
    const int64_t total = 5;
    Tensor mask = w.mask_keys > 0 ? random_tensor({c.seq, w.mask_keys}, 141) : Tensor();
    Tensor nonpad = Tensor::allocate(DType::kI64, {2});
    if (!w.nonpad.empty()) std::copy(w.nonpad.begin(), w.nonpad.end(), nonpad.data_as<int64_t>());
    std::vector<ir::Attribute> attrs = {attr_int("is_causal", w.causal), attr_int("left_window_size", w.left),
                                        attr_int("right_window_size", w.right)};
    const bool past = c.past > 0;
    auto out = run_op("Attention",
                      {&in.q, &in.k, &in.v, w.mask_keys > 0 ? &mask : nullptr, past ? &in.pk : nullptr,
                       past ? &in.pv : nullptr, w.nonpad.empty() ? nullptr : &nonpad},
                      attrs, 4, 25);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    Scores sc = zero_scores(2, 6, 3, total);
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t n = 0; n < 6; ++n)
        for (int64_t s = 0; s < 3; ++s)
          for (int64_t t = 0; t < total; ++t) {
            const int64_t pos = (w.nonpad.empty() ? c.past : w.nonpad[static_cast<size_t>(b)] - 3) + s;
            const bool seen = (!w.causal || t <= pos) && (w.left < 0 || t >= pos - w.left) &&
                              (w.right < 0 || t <= pos + w.right) &&
                              (w.nonpad.empty() || t < w.nonpad[static_cast<size_t>(b)]) &&
                              (w.mask_keys == 0 || t < w.mask_keys);
            const double m = w.mask_keys > 0 && t < w.mask_keys ? mask.data_as<float>()[s * w.mask_keys + t] : 0.0;
            sc.at(b, n, s, t) = seen ? m : -kInf;
          }
    OnnxCase plain = c;
    plain.causal = false;  // the scores above already hold the causal frontier
    expect_output((*out)[0], onnx_expected(plain, in, sc), true);
  }
  OnnxCase c;
  c.past = 2;
  const OnnxInputs in = onnx_inputs(c, 150);
  Tensor nonpad = Tensor::allocate(DType::kI64, {2});
  auto r = run_op("Attention", {&in.q, &in.k, &in.v, nullptr, &in.pk, &in.pv, &nonpad}, {}, 3, 25);
  expect_error_naming(r, "nonpad_kv_seqlen");
  r = run_op("Attention", {&in.q, &in.k, &in.v}, {attr_int("left_window_size", -2)}, 1, 25);
  expect_error_naming(r, "left_window_size");
}

}  // namespace
}  // namespace ember::test
