// RNN, GRU and LSTM. The input projection of every time step and direction is
// one GEMM (X * W^T for W of all directions stacked); each step then multiplies
// the hidden state by R once (GRU without linear_before_reset: twice, the second
// after the reset gate) and updates the gates of each batch row: pre-activations
// summed into a work row, then each function applied to a whole gate block
// (f32 sigmoid and tanh vectorized, recurrent_activation.h).
#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/common/convert.h"
#include "kernels/matmul/gemm_ref.h"
#include "kernels/matmul/sgemm.h"
#include "kernels/recurrent/recurrent_activation.h"
#include "kernels/recurrent/recurrent_ops.h"

namespace ember::kernels {
namespace {

enum class Cell { kRnn, kGru, kLstm };

// Input and output positions shared by the three ops (LSTM adds initial_c, P, Y_c).
constexpr size_t kX = 0, kW = 1, kR = 2, kB = 3, kSequenceLens = 4, kInitialH = 5, kInitialC = 6, kP = 7;

int64_t gates_of(Cell cell) { return cell == Cell::kRnn ? 1 : cell == Cell::kGru ? 3 : 4; }

// C [m, n] = A [m, k] * B^T (+ C when accumulate) for B stored [n, k], all
// row-major and contiguous.
void matmul_bt(const float* a, int64_t m, int64_t k, const float* b, int64_t n, float* c, bool accumulate = false) {
  GemmParams p;
  p.trans_b = true;
  p.m = m, p.n = n, p.k = k, p.lda = k, p.ldb = k, p.ldc = n, p.beta = accumulate ? 1.0f : 0.0f;
  sgemm::gemm(sgemm::sgemm_table(), p, a, b, c);
}
void matmul_bt(const double* a, int64_t m, int64_t k, const double* b, int64_t n, double* c,
               bool accumulate = false) {
  GemmParams p;
  p.trans_b = true;
  p.m = m, p.n = n, p.k = k, p.lda = k, p.ldb = k, p.ldc = n, p.beta = accumulate ? 1.0f : 0.0f;
  gemm_ref<double>(p, a, b, c);
}

// Constant f32 weights packed once at creation: W of all directions stacked
// (the projection's B), and per direction the block of R the step multiplies
// first and, for GRU without linear_before_reset, Rh.
struct PackedRecurrentWeights {
  sgemm::PackedWeight w;
  std::vector<sgemm::PackedWeight> r_first, r_hidden;

  int64_t bytes() const {
    int64_t n = w.bytes();
    for (const auto& r : r_first) n += r.bytes();
    for (const auto& r : r_hidden) n += r.bytes();
    return n;
  }
};

// A block of R (n rows of k) multiplied from the right, transposed, once per step.
template <typename T>
class RecurrentWeight {
 public:
  RecurrentWeight(const T* r, int64_t n, int64_t k, const sgemm::PackedWeight* /*prepacked*/)
      : r_(r), n_(n), k_(k) {}
  void multiply(const T* h, int64_t m, T* out) const { matmul_bt(h, m, k_, r_, n_, out); }

 private:
  const T* r_;
  int64_t n_, k_;
};

// f32: the prepacked block, or R packed once per run.
template <>
class RecurrentWeight<float> {
 public:
  RecurrentWeight(const float* r, int64_t n, int64_t k, const sgemm::PackedWeight* prepacked) : n_(n), k_(k) {
    if (!prepacked) owned_ = sgemm::PackedWeight(sgemm::sgemm_table(), r, k, true, k, n);
    packed_ = prepacked ? prepacked : &owned_;
  }
  RecurrentWeight(const RecurrentWeight&) = delete;
  RecurrentWeight& operator=(const RecurrentWeight&) = delete;
  void multiply(const float* h, int64_t m, float* out) const {
    GemmParams p;
    p.m = m, p.n = n_, p.k = k_, p.lda = k_, p.ldc = n_;
    packed_->gemm(sgemm::sgemm_table(), p, h, out);
  }

 private:
  sgemm::PackedWeight owned_;
  const sgemm::PackedWeight* packed_ = nullptr;
  int64_t n_, k_;
};

// X [m, k] * W^T into xw [m, n] (added to xw's biases when accumulate): through
// the prepacked W when there is one.
void project(const float* x, int64_t m, int64_t k, const float* w, int64_t n, float* xw,
             const PackedRecurrentWeights* packed, bool accumulate) {
  if (!packed) {
    matmul_bt(x, m, k, w, n, xw, accumulate);
    return;
  }
  GemmParams p;
  p.m = m, p.n = n, p.k = k, p.lda = k, p.ldc = n, p.beta = accumulate ? 1.0f : 0.0f;
  packed->w.gemm(sgemm::sgemm_table(), p, x, xw);
}
void project(const double* x, int64_t m, int64_t k, const double* w, int64_t n, double* xw,
             const PackedRecurrentWeights* /*packed*/, bool accumulate) {
  matmul_bt(x, m, k, w, n, xw, accumulate);
}

struct Dims {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0;
};

class RecurrentKernel final : public OpKernel {
 public:
  RecurrentKernel(Cell cell, DType dtype, int64_t hidden_size, size_t num_directions, bool reverse,
                  std::vector<RecurrentActivation> activations, std::optional<float> clip, int64_t layout,
                  bool linear_before_reset, bool input_forget, std::unique_ptr<PackedRecurrentWeights> packed)
      : cell_(cell), dtype_(dtype), hidden_size_(hidden_size), num_directions_(num_directions), reverse_(reverse),
        activations_(std::move(activations)), clip_(clip), layout_(layout),
        linear_before_reset_(linear_before_reset), input_forget_(input_forget), packed_(std::move(packed)) {}

  bool prepacked_input(size_t i) const override { return packed_ && (i == kW || i == kR); }
  int64_t packed_bytes() const override { return packed_ ? packed_->bytes() : 0; }

  Status infer(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(Dims d, dims_of(ctx));
    const int64_t dirs = static_cast<int64_t>(num_directions_);
    Shape y = layout_ == 0 ? Shape{d.seq, dirs, d.batch, d.hidden} : Shape{d.batch, d.seq, dirs, d.hidden};
    Shape state = layout_ == 0 ? Shape{dirs, d.batch, d.hidden} : Shape{d.batch, dirs, d.hidden};
    ctx.set_output(0, dtype_, y);
    ctx.set_output(1, dtype_, state);
    if (cell_ == Cell::kLstm) ctx.set_output(2, dtype_, state);
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(Dims d, dims_of(ctx));
    std::vector<int64_t> lens(static_cast<size_t>(d.batch), d.seq);
    if (ctx.has_input(kSequenceLens)) {
      for (int64_t b = 0; b < d.batch; ++b) {
        const int64_t len = read_int(ctx.input(kSequenceLens), b);
        if (len < 0 || len > d.seq) {
          return invalid_argument("sequence_lens[{}] = {} is outside [0, {}] (the sequence length of X)", b, len,
                                  d.seq);
        }
        lens[static_cast<size_t>(b)] = len;
      }
    }
    if (dtype_ == DType::kF32) return run_typed<float>(ctx, d, lens);
    if (dtype_ == DType::kF64) return run_typed<double>(ctx, d, lens);
    return run_widened(ctx, d, lens);
  }

 private:
  Result<Dims> dims_of(const KernelContext& ctx) const {
    const Shape& x = ctx.input(kX).shape();
    const Shape& r = ctx.input(kR).shape();
    if (x.size() != 3) return invalid_argument("X must have rank 3, got {}", shape_to_string(x));
    Dims d;
    d.seq = layout_ == 0 ? x[0] : x[1];
    d.batch = layout_ == 0 ? x[1] : x[0];
    d.input = x[2];
    d.hidden = hidden_size_ >= 0 ? hidden_size_ : (r.size() == 3 ? r[2] : -1);
    const int64_t dirs = static_cast<int64_t>(num_directions_);
    const int64_t gh = gates_of(cell_) * d.hidden;
    auto expect = [&](size_t i, const char* name, Shape want) -> Status {
      if (!ctx.has_input(i)) return Status::ok();
      const Shape& got = ctx.input(i).shape();
      if (got != want) {
        return invalid_argument("{} has shape {}, expected {} (X {}, hidden_size {}, {} direction(s), layout {})",
                                name, shape_to_string(got), shape_to_string(want), shape_to_string(x), d.hidden,
                                dirs, layout_);
      }
      return Status::ok();
    };
    EMBER_RETURN_IF_ERROR(expect(kW, "W", Shape{dirs, gh, d.input}));
    EMBER_RETURN_IF_ERROR(expect(kR, "R", Shape{dirs, gh, d.hidden}));
    EMBER_RETURN_IF_ERROR(expect(kB, "B", Shape{dirs, 2 * gh}));
    EMBER_RETURN_IF_ERROR(expect(kSequenceLens, "sequence_lens", Shape{d.batch}));
    const Shape state = layout_ == 0 ? Shape{dirs, d.batch, d.hidden} : Shape{d.batch, dirs, d.hidden};
    EMBER_RETURN_IF_ERROR(expect(kInitialH, "initial_h", state));
    if (cell_ == Cell::kLstm) {
      EMBER_RETURN_IF_ERROR(expect(kInitialC, "initial_c", state));
      EMBER_RETURN_IF_ERROR(expect(kP, "P", Shape{dirs, 3 * d.hidden}));
    }
    return d;
  }

  // float16 / bfloat16: every float input widened to f32, the f32 path, outputs rounded once.
  Status run_widened(KernelContext& ctx, const Dims& d, const std::vector<int64_t>& lens) const {
    const ConvertTable& convert = convert_table();
    const bool half = dtype_ == DType::kF16;
    std::vector<Tensor> inputs(ctx.num_inputs()), outputs(ctx.num_outputs());
    std::vector<const Tensor*> in_ptrs(ctx.num_inputs(), nullptr);
    std::vector<Tensor*> out_ptrs(ctx.num_outputs(), nullptr);
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) continue;
      const Tensor& t = ctx.input(i);
      if (i == kSequenceLens) {
        in_ptrs[i] = &t;
        continue;
      }
      inputs[i] = Tensor::allocate_uninitialized(DType::kF32, t.shape());
      (half ? convert.f16_to_f32 : convert.bf16_to_f32)(t.data_as<uint16_t>(), inputs[i].data_as<float>(), t.numel());
      in_ptrs[i] = &inputs[i];
    }
    for (size_t k = 0; k < ctx.num_outputs(); ++k) {
      if (!ctx.has_output(k)) continue;
      outputs[k] = Tensor::allocate_uninitialized(DType::kF32, ctx.output(k).shape());
      out_ptrs[k] = &outputs[k];
    }
    KernelContext wide(in_ptrs, out_ptrs);
    EMBER_RETURN_IF_ERROR(run_typed<float>(wide, d, lens));
    for (size_t k = 0; k < ctx.num_outputs(); ++k) {
      if (!out_ptrs[k]) continue;
      (half ? convert.f32_to_f16 : convert.f32_to_bf16)(outputs[k].data_as<float>(), ctx.output(k).data_as<uint16_t>(),
                                                        outputs[k].numel());
    }
    return Status::ok();
  }

  // x[i] = clip(x[i]) for i < n (NaN stays NaN).
  template <typename T>
  void clip_all(T* x, int64_t n) const {
    if (!clip_) return;
    const T c = static_cast<T>(*clip_);
    for (int64_t i = 0; i < n; ++i) x[i] = std::min(std::max(x[i], -c), c);
  }

  // out[j] = f(clip(a[j] + b[j])) for j < n.
  template <typename T>
  void activate(const RecurrentActivation& f, const T* a, const T* b, int64_t n, T* out) const {
    for (int64_t j = 0; j < n; ++j) out[j] = a[j] + b[j];
    clip_all(out, n);
    f.apply(out, out, n);
  }

  // Offset of state (direction, batch row) in initial_h / Y_h / Y_c.
  int64_t state_offset(const Dims& d, int64_t dir, int64_t b) const {
    const int64_t dirs = static_cast<int64_t>(num_directions_);
    return (layout_ == 0 ? dir * d.batch + b : b * dirs + dir) * d.hidden;
  }
  int64_t y_offset(const Dims& d, int64_t t, int64_t dir, int64_t b) const {
    const int64_t dirs = static_cast<int64_t>(num_directions_);
    return (layout_ == 0 ? (t * dirs + dir) * d.batch + b : (b * d.seq + t) * dirs + dir) * d.hidden;
  }
  // Row of X (and of the projection) holding time step t of batch row b.
  int64_t x_row(const Dims& d, int64_t t, int64_t b) const { return layout_ == 0 ? t * d.batch + b : b * d.seq + t; }

  template <typename T>
  Status run_typed(KernelContext& ctx, const Dims& d, const std::vector<int64_t>& lens) const {
    const int64_t dirs = static_cast<int64_t>(num_directions_);
    const int64_t hidden = d.hidden, gh = gates_of(cell_) * hidden;
    const int64_t rows = d.seq * d.batch;
    const T* x = ctx.input(kX).data_as<T>();
    // W and R are read only when they were not prepacked (their bytes may be released then).
    const T* w = packed_ ? nullptr : ctx.input(kW).data_as<T>();
    const T* r = packed_ ? nullptr : ctx.input(kR).data_as<T>();
    const T* bias = ctx.has_input(kB) ? ctx.input(kB).data_as<T>() : nullptr;

    // xw[row][dir * gh + g]: every step's input projection, accumulated onto the
    // biases (left uninitialized without them: the GEMM only writes it then).
    std::unique_ptr<T[]> xw(new T[static_cast<size_t>(rows * dirs * gh)]);
    if (bias) fill_bias(xw.get(), rows, dirs, gh, bias);
    project(x, rows, d.input, w, dirs * gh, xw.get(), packed_.get(), bias != nullptr);

    T* y = ctx.has_output(0) ? ctx.output(0).data_as<T>() : nullptr;
    T* y_h = ctx.has_output(1) ? ctx.output(1).data_as<T>() : nullptr;
    T* y_c = cell_ == Cell::kLstm && ctx.has_output(2) ? ctx.output(2).data_as<T>() : nullptr;
    const bool ragged = std::any_of(lens.begin(), lens.end(), [&](int64_t len) { return len < d.seq; });
    if (y && ragged) std::fill(y, y + ctx.output(0).numel(), T(0));

    const size_t state_size = static_cast<size_t>(d.batch * hidden);
    std::vector<T> h(state_size), c(state_size), rec(static_cast<size_t>(d.batch * gh)), scratch(state_size),
        reset_h(state_size), work(static_cast<size_t>(gh));
    for (int64_t dir = 0; dir < dirs; ++dir) {
      const bool reverse = reverse_ || dir == 1;
      load_state(ctx, kInitialH, d, dir, h.data());
      if (cell_ == Cell::kLstm) load_state(ctx, kInitialC, d, dir, c.data());
      const T* r_dir = r ? r + dir * gh * hidden : nullptr;
      // GRU without linear_before_reset multiplies r * H by Rh after the reset gate.
      const bool split_gru = cell_ == Cell::kGru && !linear_before_reset_;
      const int64_t first_cols = split_gru ? 2 * hidden : gh;
      const auto prepacked = [&](const std::vector<sgemm::PackedWeight>& blocks) {
        return packed_ ? &blocks[static_cast<size_t>(dir)] : nullptr;
      };
      RecurrentWeight<T> r_first(r_dir, first_cols, hidden, packed_ ? prepacked(packed_->r_first) : nullptr);
      std::optional<RecurrentWeight<T>> r_hidden;
      if (split_gru) {
        r_hidden.emplace(r_dir ? r_dir + 2 * hidden * hidden : nullptr, hidden, hidden,
                         packed_ ? prepacked(packed_->r_hidden) : nullptr);
      }
      const T* peephole = cell_ == Cell::kLstm && ctx.has_input(kP) ? ctx.input(kP).data_as<T>() + dir * 3 * hidden
                                                                     : nullptr;
      const T* r_bias_h = cell_ == Cell::kGru && linear_before_reset_ && bias ? bias + dir * 2 * gh + gh + 2 * hidden
                                                                             : nullptr;
      const RecurrentActivation* act = activations_.data() + dir * (activations_.size() / num_directions_);

      for (int64_t s = 0; s < d.seq; ++s) {
        r_first.multiply(h.data(), d.batch, rec.data());
        for (int64_t b = 0; b < d.batch; ++b) {
          const int64_t len = lens[static_cast<size_t>(b)];
          if (s >= len) continue;
          const int64_t t = reverse ? len - 1 - s : s;
          const T* gates = xw.get() + x_row(d, t, b) * dirs * gh + dir * gh;
          const T* rg = rec.data() + b * first_cols;
          T* hb = h.data() + b * hidden;
          if (cell_ == Cell::kRnn) {
            activate(act[0], gates, rg, hidden, hb);
          } else if (cell_ == Cell::kLstm) {
            lstm_step(gates, rg, peephole, act, hb, c.data() + b * hidden, hidden, work.data());
          } else if (split_gru) {
            // z and r in one pass; r * H waits in reset_h for Rh.
            activate(act[0], gates, rg, 2 * hidden, work.data());
            std::memcpy(scratch.data() + b * hidden, work.data(), static_cast<size_t>(hidden) * sizeof(T));
            T* rh = reset_h.data() + b * hidden;
            for (int64_t j = 0; j < hidden; ++j) rh[j] = work[static_cast<size_t>(hidden + j)] * hb[j];
          } else {
            gru_linear_step(gates, rg, r_bias_h, act, hb, hidden, work.data());
          }
        }
        if (split_gru) {
          // rec's first hidden * batch elements are free again: reuse them for (r * H) * Rh^T.
          r_hidden->multiply(reset_h.data(), d.batch, rec.data());
          for (int64_t b = 0; b < d.batch; ++b) {
            const int64_t len = lens[static_cast<size_t>(b)];
            if (s >= len) continue;
            const int64_t t = reverse ? len - 1 - s : s;
            const T* gates = xw.get() + x_row(d, t, b) * dirs * gh + dir * gh + 2 * hidden;
            const T* rg = rec.data() + b * hidden;
            const T* z = scratch.data() + b * hidden;
            T* hb = h.data() + b * hidden;
            const T* candidate = work.data();
            activate(act[1], gates, rg, hidden, work.data());
            for (int64_t j = 0; j < hidden; ++j) hb[j] = (T(1) - z[j]) * candidate[j] + z[j] * hb[j];
          }
        }
        if (y) {
          for (int64_t b = 0; b < d.batch; ++b) {
            const int64_t len = lens[static_cast<size_t>(b)];
            if (s >= len) continue;
            const int64_t t = reverse ? len - 1 - s : s;
            std::memcpy(y + y_offset(d, t, dir, b), h.data() + b * hidden, static_cast<size_t>(hidden) * sizeof(T));
          }
        }
      }
      for (int64_t b = 0; b < d.batch; ++b) {
        const size_t bytes = static_cast<size_t>(hidden) * sizeof(T);
        if (y_h) std::memcpy(y_h + state_offset(d, dir, b), h.data() + b * hidden, bytes);
        if (y_c) std::memcpy(y_c + state_offset(d, dir, b), c.data() + b * hidden, bytes);
      }
    }
    return Status::ok();
  }

  // Every row of xw [rows, dirs * gh] set to Wb + Rb of each direction; GRU with
  // linear_before_reset keeps Rbh for after the reset gate.
  template <typename T>
  void fill_bias(T* xw, int64_t rows, int64_t dirs, int64_t gh, const T* bias) const {
    std::vector<T> sum(static_cast<size_t>(dirs * gh));
    const int64_t hidden = gh / gates_of(cell_);
    for (int64_t dir = 0; dir < dirs; ++dir) {
      const T* b = bias + dir * 2 * gh;
      for (int64_t g = 0; g < gh; ++g) {
        const bool keep_r = cell_ == Cell::kGru && linear_before_reset_ && g >= 2 * hidden;
        sum[static_cast<size_t>(dir * gh + g)] = b[g] + (keep_r ? T(0) : b[gh + g]);
      }
    }
    for (int64_t row = 0; row < rows; ++row) std::copy(sum.begin(), sum.end(), xw + row * dirs * gh);
  }

  template <typename T>
  void load_state(const KernelContext& ctx, size_t input, const Dims& d, int64_t dir, T* state) const {
    const size_t bytes = static_cast<size_t>(d.hidden) * sizeof(T);
    for (int64_t b = 0; b < d.batch; ++b) {
      T* dst = state + b * d.hidden;
      if (ctx.has_input(input)) {
        std::memcpy(dst, ctx.input(input).data_as<T>() + state_offset(d, dir, b), bytes);
      } else {
        std::fill(dst, dst + d.hidden, T(0));
      }
    }
  }

  // Gates i, o, f, c; peepholes i, o, f. work holds 4 * hidden.
  template <typename T>
  void lstm_step(const T* gates, const T* rg, const T* peephole, const RecurrentActivation* act, T* h, T* c,
                 int64_t hidden, T* work) const {
    T* in = work;
    T* out = work + hidden;
    T* forget = work + 2 * hidden;
    T* cell = work + 3 * hidden;
    for (int64_t j = 0; j < 4 * hidden; ++j) work[j] = gates[j] + rg[j];
    if (peephole) {
      for (int64_t j = 0; j < hidden; ++j) {
        in[j] += peephole[j] * c[j];
        forget[j] += peephole[2 * hidden + j] * c[j];
      }
      // o's peephole reads the new c: o is clipped and activated after it.
      clip_all(in, hidden);
      clip_all(forget, 2 * hidden);
    } else {
      clip_all(work, 4 * hidden);
      act[0].apply(out, out, hidden);
    }
    act[0].apply(in, in, hidden);
    if (input_forget_) {
      for (int64_t j = 0; j < hidden; ++j) forget[j] = T(1) - in[j];
    } else {
      act[0].apply(forget, forget, hidden);
    }
    act[1].apply(cell, cell, hidden);
    for (int64_t j = 0; j < hidden; ++j) c[j] = forget[j] * c[j] + in[j] * cell[j];
    if (peephole) {
      for (int64_t j = 0; j < hidden; ++j) out[j] += peephole[hidden + j] * c[j];
      clip_all(out, hidden);
      act[0].apply(out, out, hidden);
    }
    act[2].apply(c, cell, hidden);
    for (int64_t j = 0; j < hidden; ++j) h[j] = out[j] * cell[j];
  }

  // GRU with linear_before_reset: rg is H * R^T for all three gates, r_bias_h is
  // Rbh. work holds 3 * hidden.
  template <typename T>
  void gru_linear_step(const T* gates, const T* rg, const T* r_bias_h, const RecurrentActivation* act, T* h,
                       int64_t hidden, T* work) const {
    activate(act[0], gates, rg, 2 * hidden, work);
    const T* z = work;
    const T* reset = work + hidden;
    T* candidate = work + 2 * hidden;
    for (int64_t j = 0; j < hidden; ++j) {
      const T recurrent = rg[2 * hidden + j] + (r_bias_h ? r_bias_h[j] : T(0));
      candidate[j] = gates[2 * hidden + j] + reset[j] * recurrent;
    }
    clip_all(candidate, hidden);
    act[1].apply(candidate, candidate, hidden);
    for (int64_t j = 0; j < hidden; ++j) h[j] = (T(1) - z[j]) * candidate[j] + z[j] * h[j];
  }

  Cell cell_;
  DType dtype_;
  int64_t hidden_size_;  // -1: taken from R
  size_t num_directions_;
  bool reverse_;
  std::vector<RecurrentActivation> activations_;  // per direction, then direction
  std::optional<float> clip_;
  int64_t layout_;
  bool linear_before_reset_;
  bool input_forget_;
  std::unique_ptr<PackedRecurrentWeights> packed_;  // f32 with constant W and R only
};

// Packs constant f32 W and R when their shapes agree with each other; otherwise
// nullptr (infer() then reports the shapes).
std::unique_ptr<PackedRecurrentWeights> prepack(const KernelInit& init, Cell cell, DType dtype, size_t num_directions,
                                                bool split_gru) {
  const Tensor* w = init.constant_inputs.size() > kR ? init.constant_inputs[kW] : nullptr;
  const Tensor* r = init.constant_inputs.size() > kR ? init.constant_inputs[kR] : nullptr;
  if (dtype != DType::kF32 || !w || !r || !w->data() || !r->data() || w->rank() != 3 || r->rank() != 3) return nullptr;
  const int64_t dirs = static_cast<int64_t>(num_directions), hidden = r->dim(2), gh = gates_of(cell) * hidden;
  if (w->dim(0) != dirs || r->dim(0) != dirs || w->dim(1) != gh || r->dim(1) != gh) return nullptr;
  const sgemm::SgemmTable& table = sgemm::sgemm_table();
  auto packed = std::make_unique<PackedRecurrentWeights>();
  const int64_t input = w->dim(2);
  packed->w = sgemm::PackedWeight(table, w->data_as<float>(), input, true, input, dirs * gh);
  for (int64_t d = 0; d < dirs; ++d) {
    const float* r_dir = r->data_as<float>() + d * gh * hidden;
    packed->r_first.emplace_back(table, r_dir, hidden, true, hidden, split_gru ? 2 * hidden : gh);
    if (split_gru) packed->r_hidden.emplace_back(table, r_dir + 2 * hidden * hidden, hidden, true, hidden, hidden);
  }
  return packed;
}

Result<std::unique_ptr<OpKernel>> create_recurrent(const KernelInit& init, Cell cell) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 3));
  const DType dtype = init.input_dtypes[kX];
  if (!dtype_is_float(dtype)) return not_implemented("X has dtype {}; only float types are supported", dtype_name(dtype));
  const size_t last_input = cell == Cell::kLstm ? kP : kInitialH;
  for (size_t i = 1; i <= last_input; ++i) {
    const DType t = input_dtype(init, i);
    if (t == DType::kUndefined) continue;
    if (i == kSequenceLens) {
      if (!dtype_is_int(t)) return invalid_argument("sequence_lens has dtype {}; it must be int32", dtype_name(t));
    } else if (t != dtype) {
      return invalid_argument("input {} has dtype {} but X is {}", i, dtype_name(t), dtype_name(dtype));
    }
  }
  ir::AttrReader attrs(init.node);
  const std::string direction = attrs.get_string("direction", "forward");
  const int64_t hidden_size = attrs.get_int("hidden_size", -1);
  const bool has_clip = attrs.has("clip");
  const float clip = attrs.get_float("clip", 0.0f);
  const int64_t layout = attrs.get_int("layout", 0);
  const int64_t linear_before_reset = attrs.get_int("linear_before_reset", 0);
  const int64_t input_forget = attrs.get_int("input_forget", 0);
  // Opset 1's output_sequence only said whether Y is wanted; the outputs list says that too.
  attrs.get_int("output_sequence", 0);
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    return invalid_argument("direction '{}' must be forward, reverse or bidirectional", direction);
  }
  if (layout != 0 && layout != 1) return invalid_argument("layout must be 0 or 1, got {}", layout);
  if (has_clip && !(clip > 0.0f)) return invalid_argument("clip must be positive, got {}", clip);
  const size_t num_directions = direction == "bidirectional" ? 2 : 1;
  std::vector<std::string_view> defaults = cell == Cell::kRnn   ? std::vector<std::string_view>{"Tanh"}
                                           : cell == Cell::kGru ? std::vector<std::string_view>{"Sigmoid", "Tanh"}
                                                                : std::vector<std::string_view>{"Sigmoid", "Tanh", "Tanh"};
  EMBER_ASSIGN_OR_RETURN(auto activations, read_recurrent_activations(init.node, std::move(defaults), num_directions));
  auto packed = prepack(init, cell, dtype, num_directions, cell == Cell::kGru && linear_before_reset == 0);
  return std::unique_ptr<OpKernel>(std::make_unique<RecurrentKernel>(
      cell, dtype, hidden_size, num_directions, direction == "reverse", std::move(activations),
      has_clip ? std::optional<float>(clip) : std::nullopt, layout, linear_before_reset != 0, input_forget != 0,
      std::move(packed)));
}

}  // namespace

Result<std::unique_ptr<OpKernel>> create_rnn(const KernelInit& init) { return create_recurrent(init, Cell::kRnn); }
Result<std::unique_ptr<OpKernel>> create_gru(const KernelInit& init) { return create_recurrent(init, Cell::kGru); }
Result<std::unique_ptr<OpKernel>> create_lstm(const KernelInit& init) { return create_recurrent(init, Cell::kLstm); }

}  // namespace ember::kernels
