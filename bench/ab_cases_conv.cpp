// f32 Conv and ConvTranspose cases at Whisper-tiny encoder and MobileNet-class
// shapes.
#include "case_builder.h"

namespace ember::bench {
namespace {

struct ConvSpec {
  std::string tag;                 // "whisper.conv1"
  std::string op;                  // "Conv" or "ConvTranspose"
  std::vector<int64_t> x, w;       // X [N, C, spatial...], W as the op declares it
  std::vector<int64_t> strides, pads;
  int64_t group = 1;
};

void add_conv_case(std::vector<BenchCase>& cases, const ConvSpec& s) {
  const std::string name = fmt::format("{}/f32/{}/{}", s.op, s.tag, shape_tag(s.x));
  const std::string what = fmt::format("{} of float32[{}] by constant float32[{}] plus bias, strides {}, pads {}, group {}",
                                       s.op, shape_tag(s.x), shape_tag(s.w), fmt::join(s.strides, ","),
                                       fmt::join(s.pads, ","), s.group);
  cases.push_back({name, what, [name, s] {
                     CaseBuilder c(name);
                     c.input("x", DType::kF32, s.x, -1.0f, 1.0f);
                     c.weight("w", DType::kF32, s.w);
                     const int64_t out_channels = s.op == "Conv" ? s.w[0] : s.w[1] * s.group;
                     c.weight("b", DType::kF32, {out_channels});
                     c.model().add_node(s.op, {"x", "w", "b"}, {"y"},
                                        {attr_ints("strides", s.strides), attr_ints("pads", s.pads),
                                         attr_int("group", s.group)});
                     c.output("y", DType::kF32);
                     // One output sums C/group * kernel taps (Conv) or about that many over strides (ConvTranspose).
                     int64_t k = s.op == "Conv" ? s.w[1] : s.w[0] / s.group;
                     for (size_t i = 2; i < s.w.size(); ++i) k *= s.w[i];
                     return c.finish(1, dot_tolerance(DType::kF32, k, 0.25));
                   }});
}

}  // namespace

// Whisper-tiny's encoder stem (80 mel bins over 3000 frames to 384 channels, then
// stride 2), MobileNet's 112x112 depthwise and pointwise pair, and the
// stride-2 4x4 ConvTranspose upsamplers of vision decoders (1-D for audio).
void add_conv_cases(std::vector<BenchCase>& cases) {
  add_conv_case(cases, {"whisper.conv1", "Conv", {1, 80, 3000}, {384, 80, 3}, {1}, {1, 1}});
  add_conv_case(cases, {"whisper.conv2", "Conv", {1, 384, 3000}, {384, 384, 3}, {2}, {1, 1}});
  add_conv_case(cases, {"mobilenet.dw", "Conv", {1, 32, 112, 112}, {32, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}, 32});
  add_conv_case(cases, {"mobilenet.pw", "Conv", {1, 32, 112, 112}, {64, 32, 1, 1}, {1, 1}, {0, 0, 0, 0}});
  add_conv_case(cases, {"upsample.2x", "ConvTranspose", {1, 64, 56, 56}, {64, 32, 4, 4}, {2, 2}, {1, 1, 1, 1}});
  add_conv_case(cases, {"upsample.1d", "ConvTranspose", {1, 384, 1500}, {384, 384, 3}, {2}, {1, 1}});
  add_conv_case(cases, {"whisper.conv1.t", "ConvTranspose", {1, 384, 3000}, {384, 80, 3}, {1}, {1, 1}});
}

}  // namespace ember::bench
