// Recurrent cases: LSTM and GRU layers at the shapes of speech and sequence
// models (100 frames of 80 log-mel features or of a 256-wide encoder output,
// hidden 256; a batch of 8; a small hidden-64 layer), forward and bidirectional,
// with the weights, biases and outputs a PyTorch export has.
#include <cmath>

#include "case_builder.h"

namespace ember::bench {
namespace {

struct RecurrentShape {
  int64_t seq, batch, input, hidden;
  bool bidirectional;
};

constexpr RecurrentShape kShapes[] = {
    {100, 1, 80, 256, false},  {100, 1, 80, 256, true},  {100, 1, 256, 256, true},
    {100, 8, 256, 256, true},  {100, 1, 64, 64, false},  {100, 8, 64, 64, true},
};

// LSTM has 4 gates, GRU 3 (linear_before_reset = 1, as torch.onnx exports it).
void add_recurrent_case(std::vector<BenchCase>& cases, const char* op, const RecurrentShape& s) {
  const int64_t gates = std::string(op) == "LSTM" ? 4 : 3;
  const int64_t dirs = s.bidirectional ? 2 : 1;
  const char* direction = s.bidirectional ? "bidirectional" : "forward";
  std::string name = fmt::format("{}/f32/{}/s{}xb{}xi{}xh{}", op, s.bidirectional ? "bidi" : "fwd", s.seq, s.batch,
                                 s.input, s.hidden);
  cases.push_back(
      {name,
       fmt::format("{}-14 {} of float32[{},{},{}], hidden {}, W R B constant (uniform +-1/sqrt(hidden), "
                   "PyTorch's init), outputs Y and Y_h{}",
                   op, direction, s.seq, s.batch, s.input, s.hidden, gates == 4 ? " and Y_c" : ""),
       [name, op, s, gates, dirs, direction] {
         CaseBuilder c(name);
         c.model().set_opset("", 14);
         const float scale = 1.0f / std::sqrt(static_cast<float>(s.hidden));
         c.input("x", DType::kF32, {s.seq, s.batch, s.input}, -1.0f, 1.0f);
         c.weight("w", DType::kF32, {dirs, gates * s.hidden, s.input}, -scale, scale);
         c.weight("r", DType::kF32, {dirs, gates * s.hidden, s.hidden}, -scale, scale);
         c.weight("b", DType::kF32, {dirs, 2 * gates * s.hidden}, -scale, scale);
         std::vector<std::string> outputs = {"y", "y_h"};
         if (gates == 4) outputs.push_back("y_c");
         std::vector<ir::Attribute> attrs = {attr_int("hidden_size", s.hidden),
                                                    ortref::attr_string("direction", direction)};
         if (gates == 3) attrs.push_back(attr_int("linear_before_reset", 1));
         c.model().add_node(op, {"x", "w", "r", "b"}, outputs, attrs);
         for (const std::string& o : outputs) c.output(o, DType::kF32);
         return c.finish();
       }});
}

}  // namespace

void add_recurrent_cases(std::vector<BenchCase>& cases) {
  for (const char* op : {"LSTM", "GRU"}) {
    for (const RecurrentShape& s : kShapes) add_recurrent_case(cases, op, s);
  }
}

}  // namespace ember::bench
