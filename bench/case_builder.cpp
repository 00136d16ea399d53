#include "case_builder.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "compare.h"

namespace ember::bench {

std::string size_tag(int64_t n) {
  return n % (1 << 20) == 0 ? fmt::format("{}Mi", n >> 20) : fmt::format("{}Ki", n >> 10);
}

std::string shape_tag(const std::vector<int64_t>& dims) { return fmt::format("{}", fmt::join(dims, "x")); }

std::string type_tag(DType dtype) {
  for (const FloatType& t : kFloatTypes)
    if (t.dtype == dtype) return t.tag;
  return std::string(dtype_name(dtype));
}

namespace {

// FNV-1a of the case name.
uint64_t seed_of(const std::string& name) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

Tensor random_tensor(DType dtype, const std::vector<int64_t>& dims, std::mt19937_64& rng, float lo, float hi,
                     int64_t int_limit) {
  Tensor t = Tensor::allocate(dtype, Shape(dims.begin(), dims.end()));
  std::uniform_real_distribution<float> real(lo, hi);
  std::uniform_int_distribution<int64_t> integer(0, std::max<int64_t>(int_limit, 1) - 1);
  EMBER_SWITCH_ALL(dtype, T, {
    T* data = t.data_as<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      if constexpr (std::is_floating_point_v<compute_t<T>>) {
        data[i] = static_cast<T>(real(rng));
      } else {
        data[i] = static_cast<T>(integer(rng));
      }
    }
  }, {});
  return t;
}

int64_t cold_copies(int64_t weight_bytes) {
  constexpr int64_t kColdBytes = int64_t{64} << 20;
  return std::max<int64_t>(1, (kColdBytes + weight_bytes - 1) / std::max<int64_t>(weight_bytes, 1));
}

Tolerance dot_tolerance(DType dtype, int64_t k, double mean_abs_term) {
  Tolerance t = ortref::default_tolerance(dtype);
  const double kd = static_cast<double>(k);
  t.atol = std::max(t.atol, std::ldexp(1.0, -24) * std::sqrt(kd) * kd * mean_abs_term);
  return t;
}

std::vector<Projection> llm_projections() {
  struct Model {
    const char* tag;
    int64_t hidden, qkv, ffn;
  };
  static constexpr Model kModels[] = {
      {"qwen0.5b", 896, 1152, 4864}, {"llama1b", 2048, 3072, 8192}, {"phi3mini", 3072, 9216, 8192}};
  std::vector<Projection> out;
  for (const Model& m : kModels) {
    out.push_back({fmt::format("{}.qkv", m.tag), m.hidden, m.qkv});
    out.push_back({fmt::format("{}.up", m.tag), m.hidden, m.ffn});
    out.push_back({fmt::format("{}.down", m.tag), m.ffn, m.hidden});
  }
  return out;
}

CaseBuilder::CaseBuilder(const std::string& name) : rng_(seed_of(name)) {}

void CaseBuilder::input(const std::string& name, DType dtype, std::vector<int64_t> dims, float lo, float hi) {
  builder_.add_input(name, dtype, dims);
  inputs_.push_back({name, random_tensor(dtype, dims, rng_, lo, hi, 0)});
}

void CaseBuilder::index_input(const std::string& name, std::vector<int64_t> dims, int64_t limit) {
  int_input(name, DType::kI64, std::move(dims), limit);
}

void CaseBuilder::int_input(const std::string& name, DType dtype, std::vector<int64_t> dims, int64_t limit) {
  builder_.add_input(name, dtype, dims);
  inputs_.push_back({name, random_tensor(dtype, dims, rng_, 0, 0, limit)});
}

void CaseBuilder::weight(const std::string& name, DType dtype, std::vector<int64_t> dims, float lo, float hi) {
  builder_.add_initializer(name, random_tensor(dtype, dims, rng_, lo, hi, 0));
}

void CaseBuilder::int_weight(const std::string& name, DType dtype, std::vector<int64_t> dims, int64_t limit) {
  builder_.add_initializer(name, random_tensor(dtype, dims, rng_, 0, 0, limit));
}

}  // namespace ember::bench
