#include "kernels/attention/attention_core.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "base/isa.h"
#include "kernels/attention/attention_fast.h"
#include "threading/thread_pool.h"

namespace ember::kernels::attention {

void attend_reference(const AttentionSpec& spec, const AttentionSlice& s) {
  std::vector<double> score(static_cast<size_t>(s.keys));
  std::vector<double> acc(static_cast<size_t>(spec.v_head_size));
  for (int64_t h = 0; h < s.heads; ++h) {
    for (int64_t r = 0; r < s.rows; ++r) {
      const float* q = s.q + h * s.q_head_stride + r * s.q_row_stride;
      const float* bias = s.bias ? s.bias + h * s.bias_head_stride + r * s.bias_row_stride : nullptr;
      const int64_t first = slice_key_first(s, r), end = slice_key_end(s, r);
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t t = first; t < end; ++t) {
        const float* k = slice_key(s, t);
        double dot = 0;
        for (int64_t d = 0; d < spec.head_size; ++d) dot += static_cast<double>(q[d]) * k[d];
        double x = spec.scale * dot;
        if (spec.softcap > 0 && !spec.softcap_after_bias) x = spec.softcap * std::tanh(x / spec.softcap);
        if (bias) x += bias[t];
        if (spec.softcap > 0 && spec.softcap_after_bias) x = spec.softcap * std::tanh(x / spec.softcap);
        score[static_cast<size_t>(t)] = x;
        max = std::max(max, x);
      }
      double sink = 0;
      if (spec.smooth_softmax) {
        sink = s.sinks ? s.sinks[h] : 0.0;
        max = std::max(max, sink);
      }
      std::fill(acc.begin(), acc.end(), 0.0);
      double sum = spec.smooth_softmax ? std::exp(sink - max) : 0.0;
      if (std::isfinite(max)) {
        for (int64_t t = first; t < end; ++t) {
          const double p = std::exp(score[static_cast<size_t>(t)] - max);
          sum += p;
          const float* v = slice_value(s, t);
          for (int64_t d = 0; d < spec.v_head_size; ++d) acc[static_cast<size_t>(d)] += p * v[d];
        }
      }
      float* out = s.out + h * s.out_head_stride + r * s.out_row_stride;
      for (int64_t d = 0; d < spec.v_head_size; ++d) {
        out[d] = sum > 0 ? static_cast<float>(acc[static_cast<size_t>(d)] / sum) : 0.0f;
      }
    }
  }
}

void attend(const AttentionSpec& spec, int64_t count, threading::FunctionRef<AttentionSlice(int64_t)> slice) {
  if (reference_mode()) {
    threading::parallel_for(count, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) attend_reference(spec, slice(i));
    });
    return;
  }
  attend_fast(spec, count, slice);
}

}  // namespace ember::kernels::attention
