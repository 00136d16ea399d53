#pragma once
// What the suite's case files share: a model under construction with seeded
// random inputs and weights, name tags, and one adder per case family.
#include <fmt/format.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ab_cases.h"
#include "model_builder.h"

namespace ember::bench {

using ortref::attr_float;
using ortref::attr_int;
using ortref::attr_ints;
using ortref::ModelBuilder;

inline constexpr const char* kMs = "com.microsoft";

struct FloatType {
  DType dtype;
  const char* tag;
};
inline constexpr FloatType kFloatTypes[] = {{DType::kF32, "f32"}, {DType::kF16, "f16"}, {DType::kBF16, "bf16"}};

std::string size_tag(int64_t n);                        // 4096 -> "4Ki", 1 << 20 -> "1Mi"
std::string shape_tag(const std::vector<int64_t>& dims);  // "128x896"
std::string type_tag(DType dtype);                      // "f32", "bf16", "uint8"

// Floats uniform in [lo, hi); integers uniform in [0, int_limit).
Tensor random_tensor(DType dtype, const std::vector<int64_t>& dims, std::mt19937_64& rng, float lo, float hi,
                     int64_t int_limit);

// One model under construction, with the values of its inputs. Random values
// are seeded by the case name: each case gets the same bytes in every run.
class CaseBuilder {
 public:
  explicit CaseBuilder(const std::string& name);

  ModelBuilder& model() { return builder_; }

  // Activations cover [-4, 4): both saturated tails and the curved middle of
  // sigmoid, tanh, erf and GELU, where the polynomial approximations differ.
  void input(const std::string& name, DType dtype, std::vector<int64_t> dims, float lo = -4.0f, float hi = 4.0f);
  void index_input(const std::string& name, std::vector<int64_t> dims, int64_t limit);
  // Integers uniform in [0, limit).
  void int_input(const std::string& name, DType dtype, std::vector<int64_t> dims, int64_t limit);
  void weight(const std::string& name, DType dtype, std::vector<int64_t> dims, float lo = -1.0f, float hi = 1.0f);
  // Integers uniform in [0, limit) (quantized codes).
  void int_weight(const std::string& name, DType dtype, std::vector<int64_t> dims, int64_t limit);
  void output(const std::string& name, DType dtype) { builder_.add_output_unshaped(name, dtype); }

  CaseModel finish(int64_t copies = 1, std::optional<Tolerance> tolerance = std::nullopt) {
    return {builder_.serialize(), std::move(inputs_), copies, tolerance, {}, {}, {}};
  }

 private:
  std::mt19937_64 rng_;
  ModelBuilder builder_;
  std::vector<CaseInput> inputs_;
};

// Copies of an op with `weight_bytes` of weights that a cold case needs so that
// one run reads at least 64 MiB, twice this machine's 32 MiB L3: every copy's
// weights have left the cache by the time that copy runs again.
int64_t cold_copies(int64_t weight_bytes);

// Tolerance for outputs that are dot products of length k whose terms have mean
// absolute value `mean_abs_term`: rounding in a different summation order grows
// like sqrt(k) ulp of the sum of |terms| (Higham, Accuracy and Stability of
// Numerical Algorithms, 2nd ed., section 3.1), so atol = 2^-24 * sqrt(k) * k *
// mean_abs_term with the f32 accumulator, and the dtype's default rtol on top.
Tolerance dot_tolerance(DType dtype, int64_t k, double mean_abs_term);

// The projections of the language models the suite is shaped after:
// Qwen2.5-0.5B, Llama-3.2-1B and Phi-3-mini (hidden size, q+k+v width, FFN width).
struct Projection {
  std::string tag;  // "qwen0.5b.qkv"
  int64_t k, n;     // A [M, k] x W [k, n]
};
std::vector<Projection> llm_projections();

// The per-family parts of the suite, in ab_cases_<family>.cpp.
void add_gemm_cases(std::vector<BenchCase>& cases);       // f32 MatMul / Gemm
void add_lowp_gemm_cases(std::vector<BenchCase>& cases);  // f16 / bf16 MatMul
void add_nbits_cases(std::vector<BenchCase>& cases);      // com.microsoft MatMulNBits
void add_integer_cases(std::vector<BenchCase>& cases);    // MatMulInteger, QLinearMatMul, (De)QuantizeLinear
void add_gbq_cases(std::vector<BenchCase>& cases);        // com.microsoft GatherBlockQuantized
void add_attention_cases(std::vector<BenchCase>& cases);  // com.microsoft GroupQueryAttention
void add_overhead_cases(std::vector<BenchCase>& cases);  // one-element ops: per-run overhead
void add_conv_cases(std::vector<BenchCase>& cases);      // f32 Conv, ConvTranspose at Whisper and MobileNet shapes
void add_image_cases(std::vector<BenchCase>& cases);     // Resize, GridSample at a vision-tower feature map
void add_recurrent_cases(std::vector<BenchCase>& cases);  // LSTM, GRU at speech/sequence model layers

}  // namespace ember::bench
