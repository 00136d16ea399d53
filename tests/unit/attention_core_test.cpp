// The shared attention core: the decode microkernels at every ISA level
// (operands against guard pages) against double-precision sums, attend()
// against attend_reference over decode and prompt shapes with every visibility
// and scoring option, thread-count independence, and GroupQueryAttention's
// in-place (shared past/present) cache.
// ctest: every ISA level
// ctest: emulated CPUs, gtest filter AttentionUkernels.*:GroupQueryAttention.*
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "base/isa.h"
#include "guard_buffer.h"
#include "kernels/attention/attention_core.h"
#include "kernels/attention/attention_ukernels.h"
#include "kernels/kernel.h"
#include "op_test_util.h"
#include "threading/thread_pool.h"

namespace ember::kernels::attention {
namespace {

std::vector<float> random_floats(size_t n, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Q, K, the scores and the accumulators against guard pages, at the end and at
// the start: each ends with its last row's last element, and a sentinel follows
// every other row in its padded stride.
TEST(AttentionUkernels, ScoresAndWeightedSumsMatchDoubleSums) {
  std::mt19937 rng(7);
  for (Isa isa : available_isas()) {
    const AttentionTable& t = attention_table(isa);
    for (int64_t heads : {1, 3, 7, 8, 9, 17}) {
      for (int64_t keys : {0, 1, 7, 15, 16, 17, 33, 256}) {
        for (int64_t hs : {8, 16, 20, 64, 80, 128}) {
          const int64_t qs = hs + 3, ks = hs + 5, ld = keys + 2, as = hs + 1;  // padded strides
          const auto q = random_floats(static_cast<size_t>(heads * qs + 1), rng);
          const auto k = random_floats(static_cast<size_t>(keys * ks + 1), rng);
          const auto acc0 = random_floats(static_cast<size_t>(heads * as), rng);
          const std::span<const float> q_read = std::span(q).subspan(1, static_cast<size_t>((heads - 1) * qs + hs));
          const std::span<const float> k_read =
              std::span(k).subspan(1, static_cast<size_t>(keys ? (keys - 1) * ks + hs : 0));
          const std::span<const float> acc_read = std::span(acc0).first(static_cast<size_t>((heads - 1) * as + hs));
          for (test::GuardAt at : test::kBothGuards) {
            const test::GuardedBuffer<float> gq(q_read, at), gk(k_read, at);
            test::GuardedBuffer<float> scores(static_cast<size_t>((heads - 1) * ld + keys), -7.0f, at);
            t.f32_qk(gq.data(), qs, heads, gk.data(), ks, keys, hs, 0.5f, scores.data(), ld);
            test::GuardedBuffer<float> acc(acc_read, at);
            t.f32_pv(scores.data(), ld, heads, gk.data(), ks, keys, hs, acc.data(), as);
            const std::string where = std::string(isa_name(isa)) + " heads " + std::to_string(heads) + " keys " +
                                      std::to_string(keys) + " hs " + std::to_string(hs) + " " + test::guard_name(at);
            for (int64_t h = 0; h < heads; ++h) {
              for (int64_t j = 0; j < keys; ++j) {
                double dot = 0;
                for (int64_t d = 0; d < hs; ++d) {
                  dot += double{q[static_cast<size_t>(1 + h * qs + d)]} * k[static_cast<size_t>(1 + j * ks + d)];
                }
                ASSERT_NEAR(scores[static_cast<size_t>(h * ld + j)], 0.5 * dot, 1e-5 * hs) << where;
              }
              if (h + 1 < heads) {
                EXPECT_EQ(scores[static_cast<size_t>(h * ld + keys)], -7.0f) << "wrote past the keys";
              }
              for (int64_t d = 0; d < hs; ++d) {
                double sum = acc0[static_cast<size_t>(h * as + d)];
                for (int64_t j = 0; j < keys; ++j) {
                  sum += double{scores[static_cast<size_t>(h * ld + j)]} * k[static_cast<size_t>(1 + j * ks + d)];
                }
                ASSERT_NEAR(acc[static_cast<size_t>(h * as + d)], sum, 1e-4 * (1 + keys)) << "pv " << where;
              }
              if (h + 1 < heads) {
                EXPECT_EQ(acc[static_cast<size_t>(h * as + hs)], acc0[static_cast<size_t>(h * as + hs)])
                    << "pv wrote past hs";
              }
            }
          }
        }
      }
    }
  }
}

struct Problem {
  AttentionSpec spec;
  int64_t count = 1, heads = 1, rows = 1, keys = 1;
  int64_t causal_end = -1, window = 0;
  bool bias = false, sinks = false, mask_row = false;
  std::vector<float> q, k, v, bias_v, sink_v;
  std::vector<float> out;

  AttentionSlice slice(int64_t i) {
    const int64_t hs = spec.head_size, vs = spec.v_head_size;
    AttentionSlice s;
    s.heads = heads;
    s.rows = rows;
    s.keys = keys - i % 2;  // slices of different lengths
    s.q = q.data() + i * heads * rows * (hs + 1);
    s.q_head_stride = rows * (hs + 1);
    s.q_row_stride = hs + 1;
    s.k = k.data() + i * keys * (hs + 2);
    s.k_row_stride = hs + 2;
    s.v = v.data() + i * keys * (vs + 3);
    s.v_row_stride = vs + 3;
    s.out = out.data() + i * heads * rows * vs;
    s.out_head_stride = vs;
    s.out_row_stride = heads * vs;
    s.causal_end = causal_end;
    s.window = window;
    if (bias) {
      s.bias = bias_v.data() + i * rows * keys;
      s.bias_head_stride = 0;  // broadcast over heads
      s.bias_row_stride = keys;
    }
    if (sinks) s.sinks = sink_v.data() + i * heads;
    return s;
  }
};

Problem make_problem(std::mt19937& rng, int64_t count, int64_t heads, int64_t rows, int64_t keys, int64_t hs,
                     int64_t vs) {
  Problem p;
  p.spec.head_size = hs;
  p.spec.v_head_size = vs;
  p.spec.scale = 1.0f / std::sqrt(static_cast<float>(hs));
  p.count = count;
  p.heads = heads;
  p.rows = rows;
  p.keys = keys;
  p.q = random_floats(static_cast<size_t>(count * heads * rows * (hs + 1)), rng, -2, 2);
  p.k = random_floats(static_cast<size_t>(count * std::max<int64_t>(keys, 1) * (hs + 2)), rng, -2, 2);
  p.v = random_floats(static_cast<size_t>(count * std::max<int64_t>(keys, 1) * (vs + 3)), rng);
  p.bias_v = random_floats(static_cast<size_t>(count * rows * std::max<int64_t>(keys, 1)), rng, -3, 3);
  p.sink_v = random_floats(static_cast<size_t>(count * heads), rng, -1, 2);
  p.out.assign(static_cast<size_t>(count * heads * rows * vs), std::nanf(""));
  return p;
}

std::vector<float> run_fast(Problem& p) {
  std::fill(p.out.begin(), p.out.end(), std::nanf(""));
  attend(p.spec, p.count, [&](int64_t i) { return p.slice(i); });
  return p.out;
}

std::vector<float> run_reference(Problem& p) {
  std::fill(p.out.begin(), p.out.end(), std::nanf(""));
  for (int64_t i = 0; i < p.count; ++i) attend_reference(p.spec, p.slice(i));
  return p.out;
}

TEST(AttentionCore, FastPathMatchesReference) {
  std::mt19937 rng(11);
  int cases = 0;
  for (int64_t rows : {1, 2, 4, 5, 64, 65, 130}) {
    for (int64_t keys : {1, 2, 17, 255, 256, 257, 700}) {
      for (int variant = 0; variant < 6; ++variant) {
        const int64_t heads = variant % 3 == 0 ? 7 : (variant % 3 == 1 ? 1 : 4);
        const int64_t hs = variant < 3 ? 64 : 24, vs = variant == 4 ? 40 : hs;
        Problem p = make_problem(rng, 3, heads, rows, keys, hs, vs);
        p.causal_end = variant == 1 ? -1 : std::max<int64_t>(0, keys - rows);
        p.window = variant == 2 ? 13 : (variant == 5 ? 300 : 0);
        p.bias = variant >= 3;
        p.spec.softcap = variant == 3 ? 2.5f : (variant == 5 ? 4.0f : 0.0f);
        p.spec.softcap_after_bias = variant == 5;
        p.spec.smooth_softmax = variant == 4 || variant == 2;
        p.sinks = variant == 4;
        const auto want = run_reference(p);
        const auto got = run_fast(p);
        for (size_t j = 0; j < want.size(); ++j) {
          ASSERT_NEAR(got[j], want[j], 2e-5 + 2e-5 * std::fabs(want[j]))
              << "rows " << rows << " keys " << keys << " variant " << variant << " at " << j;
        }
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 7 * 7 * 6);
}

TEST(AttentionCore, MaskedRowsGiveZerosAndNaNPropagates) {
  std::mt19937 rng(3);
  for (int64_t rows : {1, 8}) {
    Problem p = make_problem(rng, 1, 2, rows, 40, 16, 16);
    p.bias = true;
    for (int64_t t = 0; t < p.keys; ++t) p.bias_v[static_cast<size_t>(t)] = -std::numeric_limits<float>::infinity();
    p.q[static_cast<size_t>(1 * (p.spec.head_size + 1))] = std::nanf("");  // head 0, row 1 (if any)
    const auto got = run_fast(p);
    const auto want = run_reference(p);
    for (int64_t d = 0; d < 16; ++d) {
      EXPECT_EQ(got[static_cast<size_t>(d)], 0.0f) << "row 0 is fully masked";
      EXPECT_EQ(want[static_cast<size_t>(d)], 0.0f);
    }
    if (rows > 1) EXPECT_TRUE(std::isnan(got[static_cast<size_t>(2 * 16)])) << "NaN query row must give NaN";
  }
}

TEST(AttentionCore, SameBitsForAnyThreadCount) {
  std::mt19937 rng(5);
  for (int64_t rows : {1, 3, 100}) {
    Problem p = make_problem(rng, 2, 7, rows, 1500, 64, 64);
    p.causal_end = 1500 - rows;
    std::vector<float> one, two;
    {
      threading::ScopedThreadLimit limit(1);
      one = run_fast(p);
    }
    {
      threading::ScopedThreadLimit limit(2);
      two = run_fast(p);
    }
    ASSERT_EQ(one.size(), two.size());
    for (size_t j = 0; j < one.size(); ++j) ASSERT_EQ(one[j], two[j]) << "rows " << rows << " at " << j;
  }
}

// past_present_share_buffer: present outputs are the past buffers; the new
// token lands at position seqlens_k in place and the output equals the
// separate-buffer run's.
TEST(GroupQueryAttention, SharedPastPresentBufferAppendsInPlace) {
  std::mt19937 rng(9);
  const int64_t b = 2, nkv = 2, n = 4, hs = 16, max_len = 32;
  const std::vector<int32_t> seqlens = {9, 20};  // totals 10 and 21
  auto tensor = [&](Shape s) {
    Tensor t = Tensor::allocate(DType::kF32, s);
    auto v = random_floats(static_cast<size_t>(t.numel()), rng);
    std::copy(v.begin(), v.end(), t.data_as<float>());
    return t;
  };
  Tensor q = tensor({b, 1, n * hs}), k = tensor({b, 1, nkv * hs}), v = tensor({b, 1, nkv * hs});
  Tensor past_k = tensor({b, nkv, max_len, hs}), past_v = tensor({b, nkv, max_len, hs});
  Tensor sk = test::make_tensor<int32_t>({b}, {seqlens[0], seqlens[1]});
  Tensor total = test::make_tensor<int32_t>(Shape{}, {21});
  const std::vector<ir::Attribute> attrs = {test::attr_int("num_heads", n), test::attr_int("kv_num_heads", nkv)};
  auto separate = test::run_op("GroupQueryAttention", {&q, &k, &v, &past_k, &past_v, &sk, &total}, attrs, 3, 1,
                               "com.microsoft");
  ASSERT_TRUE(separate.is_ok()) << separate.status().to_string();

  ir::Node node;
  node.op_type = "GroupQueryAttention";
  node.domain = "com.microsoft";
  node.opset = 1;
  node.attributes = attrs;
  node.num_explicit_inputs = 7;
  const std::vector<DType> dtypes = {DType::kF32, DType::kF32, DType::kF32, DType::kF32,
                                     DType::kF32, DType::kI32, DType::kI32};
  const std::vector<const Tensor*> constants(7, nullptr);
  auto kernel = create_kernel(KernelInit{node, dtypes, constants, nullptr});
  ASSERT_TRUE(kernel.is_ok()) << kernel.status().to_string();
  Tensor out = Tensor::allocate(DType::kF32, {b, 1, n * hs});
  Tensor shared_k = past_k.clone(), shared_v = past_v.clone();
  const std::vector<const Tensor*> ins = {&q, &k, &v, &shared_k, &shared_v, &sk, &total};
  const std::vector<Tensor*> outs = {&out, &shared_k, &shared_v};
  KernelContext ctx(ins, outs);
  const Status st = (*kernel)->run(ctx);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  for (size_t j = 0; j < static_cast<size_t>(out.numel()); ++j) {
    ASSERT_EQ(out.data_as<float>()[j], (*separate)[0].data_as<float>()[j]) << "output at " << j;
  }
  // Each (batch, kv head) block: rows < total equal the separate present, rows after untouched past.
  for (int64_t bh = 0; bh < b * nkv; ++bh) {
    const int64_t total_b = seqlens[static_cast<size_t>(bh / nkv)] + 1;
    for (int64_t r = 0; r < max_len; ++r) {
      for (int64_t d = 0; d < hs; ++d) {
        const int64_t at = (bh * max_len + r) * hs + d;
        const float want = r < total_b ? (*separate)[1].data_as<float>()[at] : past_k.data_as<float>()[at];
        ASSERT_EQ(shared_k.data_as<float>()[at], want) << "present_key block " << bh << " row " << r;
      }
    }
  }
}

}  // namespace
}  // namespace ember::kernels::attention

namespace ember::kernels::attention {
namespace {

// Bad lengths and shapes are errors naming the input, never reads past a buffer.
TEST(GroupQueryAttention, BadInputsAreClearErrors) {
  const int64_t n = 2, nkv = 1, hs = 16;
  Tensor q = Tensor::allocate(DType::kF32, {1, 1, n * hs});
  Tensor k = Tensor::allocate(DType::kF32, {1, 1, nkv * hs});
  Tensor v = Tensor::allocate(DType::kF32, {1, 1, nkv * hs});
  Tensor past = Tensor::allocate(DType::kF32, {1, nkv, 32, hs});
  Tensor total = test::make_tensor<int32_t>(Shape{}, {8});
  const std::vector<ir::Attribute> attrs = {test::attr_int("num_heads", n), test::attr_int("kv_num_heads", nkv)};
  auto run = [&](const Tensor& seqlens, const Tensor* position_ids) {
    std::vector<const Tensor*> in = {&q, &k, &v, &past, &past, &seqlens, &total, nullptr, nullptr};
    if (position_ids) in.push_back(position_ids);
    auto r = test::run_op("GroupQueryAttention", in, attrs, 3, 1, "com.microsoft");
    return r.is_ok() ? std::string() : r.status().to_string();
  };
  EXPECT_NE(run(test::make_tensor<int32_t>({1}, {8}), nullptr).find("seqlens_k[0] = 8"), std::string::npos)
      << "a row longer than total_sequence_length";
  EXPECT_NE(run(test::make_tensor<int32_t>({1}, {-5}), nullptr).find("seqlens_k[0] = -5"), std::string::npos);
  EXPECT_NE(run(test::make_tensor<int32_t>({2}, {3, 3}), nullptr).find("'seqlens_k'"), std::string::npos);
  const Tensor pos = test::make_tensor<int64_t>({3}, {0, 1, 2});
  EXPECT_NE(run(test::make_tensor<int32_t>({1}, {7}), &pos).find("'position_ids'"), std::string::npos);
  EXPECT_EQ(run(test::make_tensor<int32_t>({1}, {7}), nullptr), "") << "a valid decode step";
}

}  // namespace
}  // namespace ember::kernels::attention
