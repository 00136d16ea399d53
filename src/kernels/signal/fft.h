#pragma once
// Complex discrete Fourier transforms in double precision: an iterative
// radix-2 FFT for power-of-two lengths, a direct O(n^2) DFT otherwise.
#include <complex>
#include <cstdint>
#include <vector>

namespace ember::kernels {

class FourierTransform {
 public:
  // A transform of length n >= 1; inverse uses exp(+2*pi*i*j*k/n) and is not scaled.
  FourierTransform(int64_t n, bool inverse);
  int64_t size() const { return n_; }
  // data[0..n) becomes its transform; scratch is resized as needed.
  void apply(std::complex<double>* data, std::vector<std::complex<double>>& scratch) const;

 private:
  int64_t n_;
  bool power_of_two_;
  std::vector<std::complex<double>> twiddles_;  // exp(sign * 2*pi*i*k/n), k < n
  std::vector<int64_t> bit_reverse_;            // power-of-two lengths only
};

}  // namespace ember::kernels
