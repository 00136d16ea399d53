// The radix-2 FFT against a plain DFT summed in long double over power-of-two
// and other lengths (NaN/Inf included), and the DFT op's padding, truncation,
// onesided and inverse forms against the same sums.
#include <cmath>
#include <complex>
#include <limits>
#include <numbers>
#include <random>

#include "kernels/signal/fft.h"
#include "op_test_util.h"

namespace ember::test {
namespace {

using Complex = std::complex<double>;

std::vector<Complex> naive_dft(const std::vector<Complex>& x, bool inverse) {
  const size_t n = x.size();
  std::vector<Complex> out(n);
  for (size_t k = 0; k < n; ++k) {
    std::complex<long double> sum = 0;
    for (size_t j = 0; j < n; ++j) {
      const long double angle = (inverse ? 2.0L : -2.0L) * std::numbers::pi_v<long double> *
                                static_cast<long double>((j * k) % n) / static_cast<long double>(n);
      sum += std::complex<long double>(x[j].real(), x[j].imag()) * std::complex<long double>(std::cos(angle), std::sin(angle));
    }
    out[k] = Complex(static_cast<double>(sum.real()), static_cast<double>(sum.imag()));
  }
  return out;
}

TEST(FourierTransformTest, MatchesPlainDftAtEveryLength) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (int64_t n : {1, 2, 3, 4, 5, 7, 8, 10, 16, 17, 31, 32, 64, 100, 128, 512}) {
    for (bool inverse : {false, true}) {
      std::vector<Complex> x(static_cast<size_t>(n));
      for (Complex& v : x) v = {dist(rng), dist(rng)};
      const std::vector<Complex> want = naive_dft(x, inverse);
      kernels::FourierTransform fft(n, inverse);
      std::vector<Complex> scratch;
      fft.apply(x.data(), scratch);
      for (int64_t k = 0; k < n; ++k) {
        EXPECT_NEAR(x[static_cast<size_t>(k)].real(), want[static_cast<size_t>(k)].real(), 1e-12 * static_cast<double>(n)) << n << " " << k;
        EXPECT_NEAR(x[static_cast<size_t>(k)].imag(), want[static_cast<size_t>(k)].imag(), 1e-12 * static_cast<double>(n)) << n << " " << k;
      }
    }
  }
}

TEST(FourierTransformTest, NaNAndInfReachEveryBin) {
  for (int64_t n : {8, 12}) {
    for (double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
      std::vector<Complex> x(static_cast<size_t>(n), Complex(1.0, 0.0));
      x[3] = Complex(bad, 0.0);
      kernels::FourierTransform fft(n, false);
      std::vector<Complex> scratch;
      fft.apply(x.data(), scratch);
      for (const Complex& v : x) EXPECT_FALSE(std::isfinite(v.real()) && std::isfinite(v.imag())) << n;
    }
  }
}

// DFT op: x [1, n, 1] real, the transform along axis 1.
std::vector<float> run_dft(const std::vector<float>& signal, std::vector<ir::Attribute> attrs, int64_t dft_length = 0,
                           int64_t components = 1, Shape* shape = nullptr) {
  const auto n = static_cast<int64_t>(signal.size()) / components;
  Tensor x = make_tensor<float>({1, n, components}, signal);
  Tensor len = make_tensor<int64_t>({}, {dft_length});
  auto out = run_op("DFT", {&x, dft_length ? &len : nullptr}, std::move(attrs), 1, 17);
  EXPECT_TRUE(out.is_ok()) << out.status().to_string();
  if (!out.is_ok()) return {};
  if (shape) *shape = out.value()[0].shape();
  return values_of<float>(out.value()[0]);
}

TEST(DftOpTest, PaddingTruncationOnesidedAndInverse) {
  const std::vector<float> signal = {1, 2, 3, 4, 5, 6};
  std::vector<Complex> padded(8, 0.0);
  for (size_t i = 0; i < signal.size(); ++i) padded[i] = signal[i];
  Shape shape;
  // Zero-padded to 8 (radix-2 path), onesided: 5 bins.
  std::vector<float> y = run_dft(signal, {attr_int("axis", 1), attr_int("onesided", 1)}, 8, 1, &shape);
  EXPECT_EQ(shape_to_string(shape), "[1,5,2]");
  std::vector<Complex> want = naive_dft(padded, false);
  for (size_t k = 0; k < 5; ++k) {
    EXPECT_NEAR(y[2 * k], want[k].real(), 1e-5);
    EXPECT_NEAR(y[2 * k + 1], want[k].imag(), 1e-5);
  }
  // Truncated to 5 (direct path).
  y = run_dft(signal, {attr_int("axis", 1)}, 5, 1, &shape);
  EXPECT_EQ(shape_to_string(shape), "[1,5,2]");
  want = naive_dft({1, 2, 3, 4, 5}, false);
  for (size_t k = 0; k < 5; ++k) EXPECT_NEAR(y[2 * k], want[k].real(), 1e-5);
  // Inverse of the forward transform gives the signal back (complex in, complex out).
  std::vector<float> spectrum = run_dft(signal, {attr_int("axis", 1)});
  std::vector<float> back = run_dft(spectrum, {attr_int("axis", 1), attr_int("inverse", 1)}, 0, 2);
  for (size_t i = 0; i < signal.size(); ++i) {
    EXPECT_NEAR(back[2 * i], signal[i], 1e-5);
    EXPECT_NEAR(back[2 * i + 1], 0.0, 1e-5);
  }
  // Inverse of the onesided spectrum (irfft) restores the even-length real signal.
  std::vector<float> half = run_dft(signal, {attr_int("axis", 1), attr_int("onesided", 1)});
  back = run_dft(half, {attr_int("axis", 1), attr_int("onesided", 1), attr_int("inverse", 1)}, 0, 2, &shape);
  EXPECT_EQ(shape_to_string(shape), "[1,6,1]");
  for (size_t i = 0; i < signal.size(); ++i) EXPECT_NEAR(back[i], signal[i], 1e-5);
}

TEST(DftOpTest, RejectsBadInputs) {
  Tensor x = make_tensor<float>({1, 4, 3}, std::vector<float>(12, 1.0f));
  EXPECT_FALSE(run_op("DFT", {&x}, {attr_int("axis", 1)}, 1, 17).is_ok());  // last dim 3
  Tensor y = make_tensor<float>({1, 4, 1}, std::vector<float>(4, 1.0f));
  EXPECT_FALSE(run_op("DFT", {&y}, {attr_int("axis", 2)}, 1, 17).is_ok());  // axis on the component dim
  Tensor zero = make_tensor<int64_t>({}, {0});
  EXPECT_FALSE(run_op("DFT", {&y, &zero}, {attr_int("axis", 1)}, 1, 17).is_ok());
}

}  // namespace
}  // namespace ember::test
