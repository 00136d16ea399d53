// Einsum (gathered operands and one GEMM per batch) against a brute-force sum
// over every label value: matmul shapes around tile sizes, zero-size labels,
// repeated indices, reductions, broadcasting ellipses, three operands, NaN/Inf,
// and f64 / int / bf16 inputs.
#include <cmath>
#include <limits>
#include <map>
#include <random>

#include "op_test_util.h"

namespace ember::test {
namespace {

// Terms of letters only, explicit output: out[o] = sum over the other labels of prod inputs.
std::vector<double> brute_force(const std::string& equation, const std::vector<const Tensor*>& inputs) {
  std::vector<std::string> terms;
  std::string lhs = equation.substr(0, equation.find("->")), out = equation.substr(equation.find("->") + 2);
  size_t start = 0;
  while (true) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::map<char, int64_t> sizes;
  for (size_t i = 0; i < terms.size(); ++i) {
    for (size_t a = 0; a < terms[i].size(); ++a) sizes[terms[i][a]] = inputs[i]->dim(static_cast<int64_t>(a));
  }
  std::vector<char> labels;
  for (auto& [c, s] : sizes) labels.push_back(c);
  int64_t out_size = 1;
  for (char c : out) out_size *= sizes[c];
  std::vector<double> result(static_cast<size_t>(out_size), 0.0);
  std::map<char, int64_t> idx;
  for (char c : labels) idx[c] = 0;
  int64_t total = 1;
  for (char c : labels) total *= sizes[c];
  for (int64_t n = 0; n < total; ++n) {
    int64_t rem = n;
    for (size_t l = labels.size(); l-- > 0;) {
      idx[labels[l]] = rem % sizes[labels[l]];
      rem /= sizes[labels[l]];
    }
    double prod = 1.0;
    for (size_t i = 0; i < terms.size(); ++i) {
      int64_t off = 0;
      for (char c : terms[i]) off = off * sizes[c] + idx[c];
      prod *= read_double(*inputs[i], off);
    }
    int64_t o = 0;
    for (char c : out) o = o * sizes[c] + idx[c];
    result[static_cast<size_t>(o)] += prod;
  }
  return result;
}

Tensor random_tensor(DType dtype, Shape shape, std::mt19937& rng) {
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  Tensor t = Tensor::allocate(dtype, shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dtype == DType::kF32) t.data_as<float>()[i] = static_cast<float>(dist(rng));
    if (dtype == DType::kF64) t.data_as<double>()[i] = dist(rng);
    if (dtype == DType::kI32) t.data_as<int32_t>()[i] = static_cast<int32_t>(dist(rng) * 10);
  }
  return t;
}

Tensor run_einsum(const std::string& equation, const std::vector<const Tensor*>& inputs) {
  auto out = run_op("Einsum", inputs, {attr_string("equation", equation)}, 1, 12);
  EXPECT_TRUE(out.is_ok()) << equation << ": " << out.status().to_string();
  if (!out.is_ok()) return {};
  return std::move(out.value()[0]);
}

void expect_matches(const Tensor& got, const std::vector<double>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = read_double(got, static_cast<int64_t>(i));
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(g)) << what << " at " << i;
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(g, want[i]) << what << " at " << i;
    } else {
      EXPECT_NEAR(g, want[i], tol * (1.0 + std::abs(want[i]))) << what << " at " << i;
    }
  }
}

struct Case {
  std::string equation;
  std::vector<Shape> shapes;
};

TEST(EinsumTest, MatchesBruteForce) {
  const std::vector<Case> cases = {
      {"ij,jk->ik", {{1, 1}, {1, 1}}},
      {"ij,jk->ik", {{7, 13}, {13, 17}}},
      {"ij,jk->ik", {{33, 65}, {65, 31}}},
      {"ij,kj->ik", {{5, 9}, {11, 9}}},
      {"ji,jk->ki", {{6, 5}, {6, 3}}},
      {"bij,bjk->bik", {{3, 4, 5}, {3, 5, 7}}},
      {"bij,bjk->kbi", {{2, 17, 3}, {2, 3, 19}}},
      {"i,i->", {{37}, {37}}},
      {"i,j->ij", {{5}, {9}}},
      {"ij,jk->", {{4, 6}, {6, 3}}},
      {"ijk,kl->il", {{3, 4, 5}, {5, 2}}},
      {"ij,jk,kl->il", {{3, 4}, {4, 5}, {5, 6}}},
      {"ab,bc,ca->", {{3, 4}, {4, 5}, {5, 3}}},
      {"ij->ji", {{3, 4}}},
      {"ij->i", {{3, 4}}},
      {"ijk->kji", {{2, 3, 4}}},
      {"ij,jk->ik", {{0, 4}, {4, 3}}},
      {"ij,jk->ik", {{3, 0}, {0, 5}}},
      {"ij,jk->ik", {{3, 4}, {4, 0}}},
  };
  std::mt19937 rng(7);
  for (DType dtype : {DType::kF32, DType::kF64, DType::kI32}) {
    for (const Case& c : cases) {
      std::vector<Tensor> tensors;
      for (const Shape& s : c.shapes) tensors.push_back(random_tensor(dtype, s, rng));
      std::vector<const Tensor*> ptrs;
      for (const Tensor& t : tensors) ptrs.push_back(&t);
      const Tensor y = run_einsum(c.equation, ptrs);
      expect_matches(y, brute_force(c.equation, ptrs), dtype == DType::kF32 ? 1e-5 : 1e-12,
                     c.equation + " " + std::string(dtype_name(dtype)));
    }
  }
}

TEST(EinsumTest, RepeatedIndicesAndDiagonals) {
  Tensor x = make_tensor<float>({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  expect_matches(run_einsum("ii->i", {&x}), {1, 5, 9}, 0, "ii->i");
  expect_matches(run_einsum("ii", {&x}), {15}, 0, "trace");
  Tensor b = make_tensor<float>({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  expect_matches(run_einsum("...ii ->...i", {&b}), {1, 4, 5, 8}, 0, "batch diagonal");
  Tensor v = make_tensor<float>({3}, {1, 10, 100});
  // x[i][i] * v[i] summed over i.
  expect_matches(run_einsum("ii,i->", {&x, &v}), {1 + 50 + 900}, 0, "diagonal contracted");
}

TEST(EinsumTest, ImplicitOutputAndEllipsisBroadcast) {
  std::mt19937 rng(3);
  Tensor a = random_tensor(DType::kF32, {2, 3, 4, 5}, rng);
  Tensor b = random_tensor(DType::kF32, {3, 5, 6}, rng);
  // Implicit: letters used once, alphabetically, after the ellipsis dims.
  Tensor y = run_einsum("...ij,...jk", {&a, &b});
  EXPECT_EQ(shape_to_string(y.shape()), "[2,3,4,6]");
  Tensor b_full = Tensor::allocate(DType::kF32, {2, 3, 5, 6});
  for (int64_t n = 0; n < 2; ++n) {
    std::copy(b.data_as<float>(), b.data_as<float>() + b.numel(), b_full.data_as<float>() + n * b.numel());
  }
  expect_matches(y, brute_force("nbij,nbjk->nbik", {&a, &b_full}), 1e-5, "ellipsis broadcast");
  Tensor ones = Tensor::allocate(DType::kF32, {1, 5, 6});
  for (int64_t i = 0; i < ones.numel(); ++i) ones.data_as<float>()[i] = 1.0f;
  Tensor y1 = run_einsum("...ij,...jk->...ik", {&a, &ones});
  EXPECT_EQ(shape_to_string(y1.shape()), "[2,3,4,6]");
}

TEST(EinsumTest, NaNAndInfPropagate) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  Tensor a = make_tensor<float>({2, 3}, {1, nan, 0, 1, 2, inf});
  Tensor b = make_tensor<float>({3, 2}, {1, 0, 0, 1, 1, 0});
  std::vector<const Tensor*> in = {&a, &b};
  expect_matches(run_einsum("ij,jk->ik", in), brute_force("ij,jk->ik", in), 0, "nan/inf");
}

TEST(EinsumTest, BFloat16RoundsOnce) {
  Tensor a = Tensor::allocate(DType::kBF16, {2, 3});
  Tensor b = Tensor::allocate(DType::kBF16, {3, 2});
  for (int i = 0; i < 6; ++i) {
    a.data_as<BFloat16>()[i] = BFloat16(static_cast<float>(i));
    b.data_as<BFloat16>()[i] = BFloat16(static_cast<float>(i % 2));
  }
  Tensor y = run_einsum("ij,jk->ik", {&a, &b});
  ASSERT_EQ(y.dtype(), DType::kBF16);
  expect_matches(y, brute_force("ij,jk->ik", {&a, &b}), 0, "bf16");
}

TEST(EinsumTest, RejectsBadEquations) {
  Tensor x = make_tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  for (const char* eq : {"ij,jk->ik", "i->i", "ij->k", "ij->ii", "i.j->ij", "ij->i$"}) {
    auto out = run_op("Einsum", {&x}, {attr_string("equation", eq)}, 1, 12);
    EXPECT_FALSE(out.is_ok()) << eq;
  }
  Tensor y = make_tensor<float>({4, 5}, std::vector<float>(20, 1.0f));
  auto out = run_op("Einsum", {&x, &y}, {attr_string("equation", "ij,jk->ik")}, 1, 12);
  ASSERT_FALSE(out.is_ok());
}

}  // namespace
}  // namespace ember::test
