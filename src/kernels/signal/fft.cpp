#include "kernels/signal/fft.h"

#include <cmath>
#include <numbers>
#include <utility>

namespace ember::kernels {

FourierTransform::FourierTransform(int64_t n, bool inverse)
    : n_(n), power_of_two_(n > 0 && (n & (n - 1)) == 0), twiddles_(static_cast<size_t>(n)) {
  const double sign = inverse ? 1.0 : -1.0;
  // Each twiddle from its own angle: no drift from repeated multiplication.
  for (int64_t k = 0; k < n; ++k) {
    const double angle = sign * 2.0 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(n);
    twiddles_[static_cast<size_t>(k)] = {std::cos(angle), std::sin(angle)};
  }
  if (power_of_two_) {
    int bits = 0;
    while ((int64_t{1} << bits) < n) ++bits;
    bit_reverse_.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      int64_t r = 0;
      for (int b = 0; b < bits; ++b) r |= ((i >> b) & 1) << (bits - 1 - b);
      bit_reverse_[static_cast<size_t>(i)] = r;
    }
  }
}

void FourierTransform::apply(std::complex<double>* data, std::vector<std::complex<double>>& scratch) const {
  const auto n = static_cast<size_t>(n_);
  if (power_of_two_) {
    for (size_t i = 0; i < n; ++i) {
      const auto r = static_cast<size_t>(bit_reverse_[i]);
      if (i < r) std::swap(data[i], data[r]);
    }
    for (size_t half = 1; half < n; half *= 2) {
      const size_t stride = n / (2 * half);
      for (size_t start = 0; start < n; start += 2 * half) {
        for (size_t j = 0; j < half; ++j) {
          const std::complex<double> t = twiddles_[j * stride] * data[start + j + half];
          data[start + j + half] = data[start + j] - t;
          data[start + j] += t;
        }
      }
    }
    return;
  }
  scratch.assign(data, data + n);
  for (size_t k = 0; k < n; ++k) {
    std::complex<double> sum = 0.0;
    size_t index = 0;  // j * k mod n
    for (size_t j = 0; j < n; ++j) {
      sum += scratch[j] * twiddles_[index];
      index += k;
      if (index >= n) index -= n;
    }
    data[k] = sum;
  }
}

}  // namespace ember::kernels
