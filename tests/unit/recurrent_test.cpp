// RNN, GRU and LSTM (GEMM projection, per-step GEMM, fused gate pass) against a
// naive per-element reference written from the ONNX equations: odd hidden
// sizes, batch 1 and > 1, both layouts and every direction, sequence_lens
// shorter than the sequence and zero, peepholes, clip, linear_before_reset,
// other activations, NaN inputs.
#include <cmath>
#include <limits>
#include <random>

#include "op_test_util.h"

namespace ember::test {
namespace {

enum class Cell { kRnn, kGru, kLstm };

struct Config {
  Cell cell = Cell::kRnn;
  int64_t seq = 4, batch = 1, input = 3, hidden = 5;
  std::string direction = "forward";
  int64_t layout = 0;
  bool bias = true, initial = true, peephole = false, linear_before_reset = false, input_forget = false;
  std::vector<int32_t> lens;  // empty: no sequence_lens input
  float clip = 0.0f;          // 0: no clip attribute
  std::vector<std::string> activations;
  std::vector<float> alphas, betas;
  int64_t nan_at = -1;  // element of X set to `special`
  float special = std::numeric_limits<float>::quiet_NaN();
};

int64_t gates(Cell c) { return c == Cell::kRnn ? 1 : c == Cell::kGru ? 3 : 4; }

double act(const std::string& name, double x, double alpha, double beta) {
  if (name == "Sigmoid") return 1.0 / (1.0 + std::exp(-x));
  if (name == "Tanh") return std::tanh(x);
  if (name == "Relu") return x > 0 ? x : (std::isnan(x) ? x : 0.0);
  if (name == "LeakyRelu") return x >= 0 ? x : alpha * x;
  if (name == "HardSigmoid") return std::isnan(x) ? x : std::min(1.0, std::max(0.0, alpha * x + beta));
  if (name == "Affine") return alpha * x + beta;
  ADD_FAILURE() << "no reference for " << name;
  return 0;
}

struct Inputs {
  Tensor x, w, r, b, lens, h0, c0, p;
};

Inputs make_inputs(const Config& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  auto random = [&](Shape shape) {
    Tensor t = Tensor::allocate(DType::kF32, shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = dist(rng);
    return t;
  };
  const int64_t dirs = c.direction == "bidirectional" ? 2 : 1, gh = gates(c.cell) * c.hidden;
  Inputs in;
  in.x = random(c.layout == 0 ? Shape{c.seq, c.batch, c.input} : Shape{c.batch, c.seq, c.input});
  if (c.nan_at >= 0) in.x.data_as<float>()[c.nan_at] = c.special;
  in.w = random({dirs, gh, c.input});
  in.r = random({dirs, gh, c.hidden});
  in.b = random({dirs, 2 * gh});
  const Shape state = c.layout == 0 ? Shape{dirs, c.batch, c.hidden} : Shape{c.batch, dirs, c.hidden};
  in.h0 = random(state);
  in.c0 = random(state);
  in.p = random({dirs, 3 * c.hidden});
  if (!c.lens.empty()) in.lens = make_tensor<int32_t>({c.batch}, c.lens);
  return in;
}

struct Outputs {
  std::vector<double> y, y_h, y_c;
};

// The ONNX equations, one element at a time, in double.
Outputs reference(const Config& c, const Inputs& in) {
  const int64_t dirs = c.direction == "bidirectional" ? 2 : 1, H = c.hidden, G = gates(c.cell), gh = G * H;
  const int64_t per_dir = c.cell == Cell::kRnn ? 1 : c.cell == Cell::kGru ? 2 : 3;
  std::vector<std::string> names = c.activations;
  if (names.empty()) {
    names = c.cell == Cell::kRnn ? std::vector<std::string>{"Tanh"}
            : c.cell == Cell::kGru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                   : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  }
  if (static_cast<int64_t>(names.size()) == per_dir && dirs == 2) {
    const std::vector<std::string> one_direction = names;
    names.insert(names.end(), one_direction.begin(), one_direction.end());
  }
  const float* x = in.x.data_as<float>();
  const float* w = in.w.data_as<float>();
  const float* r = in.r.data_as<float>();
  const float* b = in.b.data_as<float>();
  const float* p = in.p.data_as<float>();
  auto X = [&](int64_t t, int64_t n, int64_t i) {
    return static_cast<double>(x[(c.layout == 0 ? (t * c.batch + n) : (n * c.seq + t)) * c.input + i]);
  };
  auto state_at = [&](int64_t d, int64_t n) { return c.layout == 0 ? (d * c.batch + n) * H : (n * dirs + d) * H; };
  auto y_at = [&](int64_t t, int64_t d, int64_t n) {
    return c.layout == 0 ? ((t * dirs + d) * c.batch + n) * H : ((n * c.seq + t) * dirs + d) * H;
  };
  auto clip = [&](double v) { return c.clip > 0 ? std::min<double>(std::max<double>(v, -c.clip), c.clip) : v; };
  Outputs out;
  out.y.assign(static_cast<size_t>(c.seq * dirs * c.batch * H), 0.0);
  out.y_h.assign(static_cast<size_t>(dirs * c.batch * H), 0.0);
  out.y_c = out.y_h;
  for (int64_t d = 0; d < dirs; ++d) {
    const bool reverse = c.direction == "reverse" || d == 1;
    auto f = [&](int k, double v) {
      // Alphas and betas are consumed by the functions taking them, in order.
      size_t ai = 0, bi = 0;
      double alpha = 0, beta = 0;
      for (size_t j = 0; j <= static_cast<size_t>(d * per_dir + k); ++j) {
        const std::string& nm = names[j];
        const bool ta = nm == "LeakyRelu" || nm == "HardSigmoid" || nm == "Affine";
        const bool tb = nm == "HardSigmoid" || nm == "Affine";
        alpha = nm == "LeakyRelu" ? 0.01 : nm == "HardSigmoid" ? 0.2 : 1.0;
        beta = nm == "HardSigmoid" ? 0.5 : 0.0;
        if (ta && ai < c.alphas.size()) alpha = c.alphas[ai++];
        if (tb && bi < c.betas.size()) beta = c.betas[bi++];
      }
      return act(names[static_cast<size_t>(d * per_dir + k)], v, alpha, beta);
    };
    for (int64_t n = 0; n < c.batch; ++n) {
      const int64_t len = c.lens.empty() ? c.seq : c.lens[static_cast<size_t>(n)];
      std::vector<double> h(static_cast<size_t>(H), 0.0), cs(static_cast<size_t>(H), 0.0);
      if (c.initial) {
        for (int64_t j = 0; j < H; ++j) {
          h[static_cast<size_t>(j)] = in.h0.data_as<float>()[state_at(d, n) + j];
          cs[static_cast<size_t>(j)] = in.c0.data_as<float>()[state_at(d, n) + j];
        }
      }
      for (int64_t s = 0; s < len; ++s) {
        const int64_t t = reverse ? len - 1 - s : s;
        // xw[g] = X W^T + Wb, hr[g] = H R^T + Rb for every gate row g.
        std::vector<double> xw(static_cast<size_t>(gh)), hr(static_cast<size_t>(gh));
        for (int64_t g = 0; g < gh; ++g) {
          double sx = c.bias ? b[d * 2 * gh + g] : 0.0, sh = c.bias ? b[d * 2 * gh + gh + g] : 0.0;
          for (int64_t i = 0; i < c.input; ++i) sx += X(t, n, i) * w[(d * gh + g) * c.input + i];
          for (int64_t i = 0; i < H; ++i) sh += h[static_cast<size_t>(i)] * r[(d * gh + g) * H + i];
          xw[static_cast<size_t>(g)] = sx;
          hr[static_cast<size_t>(g)] = sh;
        }
        std::vector<double> next(static_cast<size_t>(H));
        for (int64_t j = 0; j < H; ++j) {
          const auto J = static_cast<size_t>(j);
          if (c.cell == Cell::kRnn) {
            next[J] = f(0, clip(xw[J] + hr[J]));
          } else if (c.cell == Cell::kGru) {
            const double z = f(0, clip(xw[J] + hr[J]));
            const double rr = f(0, clip(xw[J + H] + hr[J + H]));
            double cand;
            if (c.linear_before_reset) {
              cand = f(1, clip(xw[J + 2 * H] + rr * hr[J + 2 * H]));
            } else {
              // (r * H) R_h^T: r multiplies H elementwise, so each term uses r of row i.
              double rh = c.bias ? b[d * 2 * gh + gh + 2 * H + j] : 0.0;
              for (int64_t i = 0; i < H; ++i) {
                const double ri = f(0, clip(xw[static_cast<size_t>(i + H)] + hr[static_cast<size_t>(i + H)]));
                rh += ri * h[static_cast<size_t>(i)] * r[(d * gh + 2 * H + j) * H + i];
              }
              cand = f(1, clip(xw[J + 2 * H] + rh));
            }
            next[J] = (1 - z) * cand + z * h[J];
          } else {
            double pi = xw[J] + hr[J], pf = xw[J + 2 * H] + hr[J + 2 * H];
            if (c.peephole) {
              pi += p[d * 3 * H + j] * cs[J];
              pf += p[d * 3 * H + 2 * H + j] * cs[J];
            }
            const double ig = f(0, clip(pi));
            const double fg = c.input_forget ? 1 - ig : f(0, clip(pf));
            const double cell = f(1, clip(xw[J + 3 * H] + hr[J + 3 * H]));
            const double cn = fg * cs[J] + ig * cell;
            double po = xw[J + H] + hr[J + H];
            if (c.peephole) po += p[d * 3 * H + H + j] * cn;
            next[J] = f(0, clip(po)) * f(2, cn);
            cs[J] = cn;
          }
        }
        h = next;
        for (int64_t j = 0; j < H; ++j) out.y[static_cast<size_t>(y_at(t, d, n) + j)] = h[static_cast<size_t>(j)];
      }
      for (int64_t j = 0; j < H; ++j) {
        out.y_h[static_cast<size_t>(state_at(d, n) + j)] = h[static_cast<size_t>(j)];
        out.y_c[static_cast<size_t>(state_at(d, n) + j)] = cs[static_cast<size_t>(j)];
      }
    }
  }
  return out;
}

void expect_close(const Tensor& got, const std::vector<double>& want, const char* what) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = got.data_as<float>()[i];
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(g)) << what << " at " << i << ": " << g;
    } else {
      EXPECT_NEAR(g, want[i], 1e-5 + 1e-5 * std::abs(want[i])) << what << " at " << i;
    }
  }
}

void check(const Config& c, uint32_t seed = 1) {
  SCOPED_TRACE(testing::Message() << "hidden " << c.hidden << " batch " << c.batch << " " << c.direction
                                  << " layout " << c.layout);
  const Inputs in = make_inputs(c, seed);
  std::vector<const Tensor*> inputs = {&in.x, &in.w, &in.r, c.bias ? &in.b : nullptr,
                                       c.lens.empty() ? nullptr : &in.lens, c.initial ? &in.h0 : nullptr};
  if (c.cell == Cell::kLstm) {
    inputs.push_back(c.initial ? &in.c0 : nullptr);
    inputs.push_back(c.peephole ? &in.p : nullptr);
  }
  std::vector<ir::Attribute> attrs = {attr_int("hidden_size", c.hidden), attr_string("direction", c.direction)};
  if (c.layout) attrs.push_back(attr_int("layout", 1));
  if (c.linear_before_reset) attrs.push_back(attr_int("linear_before_reset", 1));
  if (c.input_forget) attrs.push_back(attr_int("input_forget", 1));
  if (c.clip > 0) attrs.push_back(attr_float("clip", c.clip));
  if (!c.activations.empty()) {
    ir::Attribute a;
    a.name = "activations";
    a.type = ir::AttrType::kStrings;
    a.strings = c.activations;
    attrs.push_back(a);
  }
  if (!c.alphas.empty()) attrs.push_back(attr_floats("activation_alpha", c.alphas));
  if (!c.betas.empty()) attrs.push_back(attr_floats("activation_beta", c.betas));
  const char* op = c.cell == Cell::kRnn ? "RNN" : c.cell == Cell::kGru ? "GRU" : "LSTM";
  const size_t num_outputs = c.cell == Cell::kLstm ? 3 : 2;
  auto out = run_op(op, inputs, attrs, num_outputs, 14);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  const Outputs want = reference(c, in);
  expect_close(out.value()[0], want.y, "Y");
  expect_close(out.value()[1], want.y_h, "Y_h");
  if (c.cell == Cell::kLstm) expect_close(out.value()[2], want.y_c, "Y_c");
}

class RecurrentTest : public testing::TestWithParam<Cell> {};

TEST_P(RecurrentTest, ShapesDirectionsAndLayouts) {
  for (int64_t hidden : {1, 5, 17, 33}) {
    for (int64_t batch : {1, 3}) {
      for (const char* direction : {"forward", "reverse", "bidirectional"}) {
        for (int64_t layout : {0, 1}) {
          Config c;
          c.cell = GetParam();
          c.hidden = hidden, c.batch = batch, c.input = hidden == 1 ? 1 : 7, c.seq = 3 + hidden % 4;
          c.direction = direction, c.layout = layout;
          check(c, static_cast<uint32_t>(hidden * 31 + batch));
        }
      }
    }
  }
}

TEST_P(RecurrentTest, SequenceLensShorterAndZero) {
  for (const char* direction : {"forward", "reverse", "bidirectional"}) {
    Config c;
    c.cell = GetParam();
    c.seq = 5, c.batch = 4, c.hidden = 7, c.direction = direction;
    c.lens = {5, 2, 0, 3};
    check(c);
    c.layout = 1;
    check(c);
  }
}

TEST_P(RecurrentTest, NoBiasNoInitialState) {
  Config c;
  c.cell = GetParam();
  c.bias = false, c.initial = false, c.batch = 2, c.hidden = 9;
  check(c);
}

TEST_P(RecurrentTest, ClipAndNaN) {
  Config c;
  c.cell = GetParam();
  c.clip = 0.3f, c.batch = 3, c.hidden = 6;
  check(c);
  c.clip = 0.0f;
  c.nan_at = 4;  // batch row 1 at t = 0 (layout 0, input 3): NaN spreads through that row only
  check(c);
}

// +-Inf in X with one input feature: every gate of that row and step gets an
// infinite pre-activation (no inf - inf), so sigmoid and tanh saturate to their
// limits there and the state stays finite. Hidden 37 spans whole vectors and a tail.
TEST_P(RecurrentTest, InfiniteInputsSaturate) {
  for (float inf : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()}) {
    Config c;
    c.cell = GetParam();
    c.input = 1, c.batch = 2, c.hidden = 37, c.direction = "bidirectional";
    c.nan_at = 3, c.special = inf;  // t = 1, batch row 1
    check(c);
  }
}

TEST_P(RecurrentTest, ZeroLengthSequence) {
  Config c;
  c.cell = GetParam();
  c.seq = 0, c.batch = 2, c.hidden = 3;
  check(c);
}

INSTANTIATE_TEST_SUITE_P(Cells, RecurrentTest, testing::Values(Cell::kRnn, Cell::kGru, Cell::kLstm),
                         [](const testing::TestParamInfo<Cell>& info) {
                           return info.param == Cell::kRnn ? std::string("RNN")
                                  : info.param == Cell::kGru ? std::string("GRU")
                                                             : std::string("LSTM");
                         });

TEST(RecurrentTest, GruLinearBeforeReset) {
  for (int64_t batch : {1, 4}) {
    Config c;
    c.cell = Cell::kGru;
    c.linear_before_reset = true, c.batch = batch, c.hidden = 11, c.direction = "bidirectional";
    check(c);
  }
}

TEST(RecurrentTest, LstmPeepholesAndInputForget) {
  Config c;
  c.cell = Cell::kLstm;
  c.peephole = true, c.batch = 3, c.hidden = 13, c.direction = "bidirectional";
  check(c);
  c.input_forget = true;
  check(c);
}

TEST(RecurrentTest, ActivationsWithAlphaBeta) {
  Config c;
  c.cell = Cell::kLstm;
  c.batch = 2, c.hidden = 5, c.direction = "bidirectional";
  c.activations = {"HardSigmoid", "LeakyRelu", "Tanh", "Sigmoid", "Affine", "Relu"};
  c.alphas = {0.3f, 0.05f, 0.7f};
  c.betas = {0.4f, 0.1f};
  check(c);
  c.cell = Cell::kRnn;
  c.activations = {"Relu"};
  c.alphas.clear(), c.betas.clear();
  check(c);
}

// W and R as constants: the kernel packs them at creation and must give the
// very same outputs as when it packs them per run.
TEST(RecurrentTest, PrepackedConstantWeightsMatchRunTimeWeights) {
  for (Cell cell : {Cell::kRnn, Cell::kGru, Cell::kLstm}) {
    for (bool linear_before_reset : {false, true}) {
      Config c;
      c.cell = cell, c.batch = 3, c.hidden = 9, c.direction = "bidirectional", c.lens = {4, 1, 3};
      c.linear_before_reset = cell == Cell::kGru && linear_before_reset;
      const Inputs in = make_inputs(c, 11);
      const char* op = cell == Cell::kRnn ? "RNN" : cell == Cell::kGru ? "GRU" : "LSTM";
      std::vector<const Tensor*> inputs = {&in.x, &in.w, &in.r, &in.b, &in.lens, &in.h0};
      if (cell == Cell::kLstm) inputs.insert(inputs.end(), {&in.c0, &in.p});
      std::vector<ir::Attribute> attrs = {attr_int("hidden_size", c.hidden), attr_string("direction", c.direction),
                                          attr_int("linear_before_reset", c.linear_before_reset ? 1 : 0)};
      const size_t num_outputs = cell == Cell::kLstm ? 3 : 2;
      auto plain = run_op(op, inputs, attrs, num_outputs, 14);
      ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();

      ir::Node node;
      node.name = "prepacked";
      node.op_type = op;
      node.opset = 14;
      node.attributes = attrs;
      node.num_explicit_inputs = inputs.size();
      std::vector<DType> dtypes;
      for (const Tensor* t : inputs) dtypes.push_back(t->dtype());
      std::vector<const Tensor*> constants(inputs.size(), nullptr);
      constants[1] = &in.w;
      constants[2] = &in.r;
      kernels::KernelInit init{node, dtypes, constants, nullptr};
      auto kernel = kernels::create_kernel(init);
      ASSERT_TRUE(kernel.is_ok()) << kernel.status().to_string();
      EXPECT_GT(kernel.value()->packed_bytes(), 0);
      EXPECT_TRUE(kernel.value()->prepacked_input(1));
      EXPECT_TRUE(kernel.value()->prepacked_input(2));
      // The runtime may drop the packed inputs' bytes: the kernel must not read them.
      Tensor w_shape_only(DType::kF32, in.w.shape(), nullptr), r_shape_only(DType::kF32, in.r.shape(), nullptr);
      std::vector<const Tensor*> run_inputs = inputs;
      run_inputs[1] = &w_shape_only;
      run_inputs[2] = &r_shape_only;
      std::vector<Tensor> outputs(num_outputs);
      std::vector<Tensor*> out_ptrs;
      for (Tensor& t : outputs) out_ptrs.push_back(&t);
      kernels::KernelContext ctx(run_inputs, out_ptrs);
      ASSERT_TRUE(kernel.value()->infer(ctx).is_ok());
      for (Tensor& t : outputs) t = Tensor::allocate(t.dtype(), t.shape());
      ASSERT_TRUE(kernel.value()->run(ctx).is_ok());
      for (size_t k = 0; k < num_outputs; ++k) {
        EXPECT_EQ(values_of<float>(outputs[k]), values_of<float>(plain.value()[k])) << op << " output " << k;
      }
    }
  }
}

// float16 / bfloat16 run the f32 path on the widened inputs and round each output once.
TEST(RecurrentTest, HalfPrecisionRoundsTheF32ResultOnce) {
  for (DType half : {DType::kF16, DType::kBF16}) {
    Config c;
    c.cell = Cell::kGru, c.batch = 2, c.hidden = 7, c.direction = "bidirectional", c.lens = {4, 2};
    Inputs in = make_inputs(c, 5);
    auto narrow = [&](Tensor& t) {
      Tensor h = Tensor::allocate(half, t.shape());
      for (int64_t i = 0; i < t.numel(); ++i) {
        float v = t.data_as<float>()[i];
        if (half == DType::kF16) {
          h.data_as<Float16>()[i] = Float16(v);
          t.data_as<float>()[i] = h.data_as<Float16>()[i];
        } else {
          h.data_as<BFloat16>()[i] = BFloat16(v);
          t.data_as<float>()[i] = h.data_as<BFloat16>()[i];
        }
      }
      return h;
    };
    Tensor x = narrow(in.x), w = narrow(in.w), r = narrow(in.r), b = narrow(in.b), h0 = narrow(in.h0);
    std::vector<ir::Attribute> attrs = {attr_int("hidden_size", c.hidden), attr_string("direction", c.direction)};
    auto wide = run_op("GRU", {&in.x, &in.w, &in.r, &in.b, &in.lens, &in.h0}, attrs, 2, 14);
    auto out = run_op("GRU", {&x, &w, &r, &b, &in.lens, &h0}, attrs, 2, 14);
    ASSERT_TRUE(wide.is_ok() && out.is_ok()) << out.status().to_string();
    for (size_t k = 0; k < 2; ++k) {
      const Tensor& y = out.value()[k];
      ASSERT_EQ(y.dtype(), half);
      for (int64_t i = 0; i < y.numel(); ++i) {
        const float want = wide.value()[k].data_as<float>()[i];
        const uint16_t bits = half == DType::kF16 ? Float16(want).bits : BFloat16(want).bits;
        EXPECT_EQ(y.data_as<uint16_t>()[i], bits) << dtype_name(half) << " output " << k << " at " << i;
      }
    }
  }
}

TEST(RecurrentTest, RejectsBadShapesAndAttributes) {
  Config c;
  const Inputs in = make_inputs(c, 3);
  Tensor bad_r = Tensor::allocate(DType::kF32, {1, 5, 4});
  auto out = run_op("RNN", {&in.x, &in.w, &bad_r}, {attr_int("hidden_size", 5)}, 2, 14);
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().to_string().find("R has shape [1,5,4]"), std::string::npos) << out.status().to_string();
  out = run_op("RNN", {&in.x, &in.w, &in.r}, {attr_int("hidden_size", 5), attr_string("direction", "sideways")}, 2, 14);
  ASSERT_FALSE(out.is_ok());
  ir::Attribute a;
  a.name = "activations";
  a.type = ir::AttrType::kStrings;
  a.strings = {"Gelu"};
  out = run_op("RNN", {&in.x, &in.w, &in.r}, {attr_int("hidden_size", 5), a}, 2, 14);
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().to_string().find("Gelu"), std::string::npos);
  Tensor lens = make_tensor<int32_t>({1}, {9});
  out = run_op("RNN", {&in.x, &in.w, &in.r, nullptr, &lens}, {attr_int("hidden_size", 5)}, 2, 14);
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().to_string().find("sequence_lens[0] = 9"), std::string::npos) << out.status().to_string();
}

}  // namespace
}  // namespace ember::test
