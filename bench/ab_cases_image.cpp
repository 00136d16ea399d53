// Image resampling cases: Resize and GridSample at a vision-tower feature map
// (256 channels of 64x64, upsampled 2x as FPN/U-Net decoders and SAM's mask
// decoder do; grid sampling at the input resolution as deformable attention does).
#include "case_builder.h"

namespace ember::bench {
namespace {

constexpr int64_t kChannels = 256;
constexpr int64_t kSide = 64;

void add_resize_case(std::vector<BenchCase>& cases, const char* mode, const char* coord) {
  std::string name = fmt::format("Resize/f32/{}-{}/1x{}x{}x{}->{}x{}", mode, coord, kChannels, kSide, kSide,
                                 2 * kSide, 2 * kSide);
  cases.push_back({name,
                   fmt::format("Resize-19 of float32[1,{},{},{}] to {}x{} by constant sizes, mode {}, {}", kChannels,
                               kSide, kSide, 2 * kSide, 2 * kSide, mode, coord),
                   [name, mode, coord] {
                     CaseBuilder c(name);
                     c.model().set_opset("", 19);
                     c.input("x", DType::kF32, {1, kChannels, kSide, kSide});
                     Tensor sizes = Tensor::allocate(DType::kI64, {4});
                     int64_t* s = sizes.data_as<int64_t>();
                     s[0] = 1;
                     s[1] = kChannels;
                     s[2] = 2 * kSide;
                     s[3] = 2 * kSide;
                     c.model().add_initializer("sizes", sizes);
                     c.model().add_node("Resize", {"x", "", "", "sizes"}, {"y"},
                                        {ortref::attr_string("mode", mode),
                                         ortref::attr_string("coordinate_transformation_mode", coord)});
                     c.output("y", DType::kF32);
                     return c.finish();
                   }});
}

void add_grid_sample_case(std::vector<BenchCase>& cases) {
  std::string name = fmt::format("GridSample/f32/linear/1x{}x{}x{}", kChannels, kSide, kSide);
  cases.push_back({name,
                   fmt::format("GridSample-20 of float32[1,{},{},{}] at a random [1,{},{},2] grid in [-1.1, 1.1], "
                               "linear, zeros padding",
                               kChannels, kSide, kSide, kSide, kSide),
                   [name] {
                     CaseBuilder c(name);
                     c.model().set_opset("", 20);
                     c.input("x", DType::kF32, {1, kChannels, kSide, kSide});
                     c.input("grid", DType::kF32, {1, kSide, kSide, 2}, -1.1f, 1.1f);
                     c.model().add_node("GridSample", {"x", "grid"}, {"y"}, {ortref::attr_string("mode", "linear")});
                     c.output("y", DType::kF32);
                     return c.finish();
                   }});
}

}  // namespace

void add_image_cases(std::vector<BenchCase>& cases) {
  add_resize_case(cases, "linear", "half_pixel");
  add_resize_case(cases, "nearest", "asymmetric");
  add_grid_sample_case(cases);
}

}  // namespace ember::bench
