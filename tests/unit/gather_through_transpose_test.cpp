// The optimizer's Gather(Transpose(constant)) rewrite: for every permutation
// of a rank-3 constant, every Gather axis and indices of rank 0 to 2
// (negative ones included), the rewritten graph gives the elements an
// index-by-index transpose-then-gather gives; and in a session, a constant
// too large to fold is gathered in place, never transposed whole. Constant
// folding's budget: a weight read by one node only is folded whatever its size.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "graph_builder.h"
#include "op_test_util.h"
#include "runtime/optimizer.h"

namespace ember {
namespace {

using test::attr_int;
using test::attr_ints;
using test::GraphBuilder;
using test::make_session;

Tensor iota_tensor(Shape shape) {
  Tensor t = Tensor::allocate(DType::kF32, shape);
  std::iota(t.data_as<float>(), t.data_as<float>() + t.numel(), 0.0f);
  return t;
}

std::vector<int64_t> strides_of(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

// out[i..., j..., k...] = C[perm^-1 applied to (i..., idx[j...], k...)] element by element.
std::vector<float> transpose_then_gather(const Tensor& c, const std::vector<int64_t>& perm, int64_t axis,
                                         const Tensor& indices) {
  const Shape& cs = c.shape();
  std::vector<int64_t> ts;
  for (int64_t p : perm) ts.push_back(cs[static_cast<size_t>(p)]);
  if (axis < 0) axis += static_cast<int64_t>(ts.size());
  Shape out_shape;
  for (int64_t d = 0; d < axis; ++d) out_shape.push_back(ts[static_cast<size_t>(d)]);
  for (int64_t d : indices.shape()) out_shape.push_back(d);
  for (size_t d = static_cast<size_t>(axis) + 1; d < ts.size(); ++d) out_shape.push_back(ts[d]);
  const std::vector<int64_t> out_strides = strides_of(out_shape), c_strides = strides_of(cs);
  int64_t total = 1;
  for (int64_t d : out_shape) total *= d;
  std::vector<float> out(static_cast<size_t>(total));
  const auto q = static_cast<int64_t>(indices.shape().size());
  for (int64_t flat = 0; flat < total; ++flat) {
    std::vector<int64_t> o(out_shape.size());
    for (size_t d = 0; d < o.size(); ++d) o[d] = flat / out_strides[d] % out_shape[d];
    int64_t index_flat = 0;
    const std::vector<int64_t> is = strides_of(indices.shape());
    for (int64_t k = 0; k < q; ++k) index_flat += o[static_cast<size_t>(axis + k)] * is[static_cast<size_t>(k)];
    int64_t picked = indices.data_as<int64_t>()[index_flat];
    if (picked < 0) picked += ts[static_cast<size_t>(axis)];
    std::vector<int64_t> t_index;  // the element's index in the transposed tensor
    for (int64_t d = 0; d < axis; ++d) t_index.push_back(o[static_cast<size_t>(d)]);
    t_index.push_back(picked);
    for (size_t d = static_cast<size_t>(axis + q); d < o.size(); ++d) t_index.push_back(o[d]);
    int64_t c_flat = 0;
    for (size_t d = 0; d < perm.size(); ++d) c_flat += t_index[d] * c_strides[static_cast<size_t>(perm[d])];
    out[static_cast<size_t>(flat)] = c.data_as<float>()[c_flat];
  }
  return out;
}

std::shared_ptr<ir::Graph> transpose_gather_graph(const Tensor& c, const std::vector<int64_t>& perm, int64_t axis,
                                                  const Shape& indices_shape) {
  GraphBuilder b(17);
  b.constant("c", c).input("idx", DType::kI64, std::vector<int64_t>(indices_shape.begin(), indices_shape.end()));
  b.node("Transpose", {"c"}, {"t"}, {attr_ints("perm", perm)});
  b.node("Gather", {"t", "idx"}, {"y"}, {attr_int("axis", axis)});
  return b.output("y").build();
}

TEST(GatherThroughTranspose, EveryPermutationAxisAndIndicesRank) {
  const Tensor c = iota_tensor({3, 4, 5});
  std::vector<int64_t> perm = {0, 1, 2};
  int cases = 0;
  do {
    for (int64_t axis : {0, 1, 2, -1}) {
      for (const Shape& indices_shape : {Shape{}, Shape{2}, Shape{2, 3}}) {
        Tensor indices = Tensor::allocate(DType::kI64, indices_shape);
        const int64_t n = c.shape()[static_cast<size_t>(perm[static_cast<size_t>(axis < 0 ? 2 : axis)])];
        for (int64_t i = 0; i < indices.numel(); ++i) indices.data_as<int64_t>()[i] = (i % 2 ? -1 : 1) * ((i * 7 + 1) % n);
        auto g = transpose_gather_graph(c, perm, axis, indices_shape);
        ASSERT_TRUE(g->rebuild_links().is_ok());
        ASSERT_EQ(runtime::gather_through_transpose(*g), 1u);
        const ir::Node& gather = g->nodes[1];
        ASSERT_EQ(gather.op_type, "Gather");
        EXPECT_EQ(g->value(gather.inputs[0]).name, "c") << "the Gather reads the constant itself";
        auto session = make_session(g, /*optimize=*/false);
        ASSERT_TRUE(session);
        std::vector<Tensor> out;
        const std::vector<const Tensor*> inputs = {&indices};
        ASSERT_TRUE(session->run(inputs, out).is_ok());
        const std::vector<float> want = transpose_then_gather(c, perm, axis, indices);
        ASSERT_EQ(static_cast<size_t>(out[0].numel()), want.size());
        for (size_t i = 0; i < want.size(); ++i) {
          ASSERT_EQ(out[0].data_as<float>()[i], want[i])
              << "perm " << perm[0] << perm[1] << perm[2] << " axis " << axis << " indices rank "
              << indices_shape.size() << " element " << i;
        }
        ++cases;
      }
    }
  } while (std::next_permutation(perm.begin(), perm.end()));
  EXPECT_EQ(cases, 6 * 4 * 3);
}

// The model builder's tied embedding: the LM head's weight, transposed for
// the embedding Gather. Folding that Transpose would add a 19 MB copy (above
// the budget), so after optimization nothing transposes the whole constant.
TEST(GatherThroughTranspose, SessionGathersLargeConstantInPlace) {
  const Tensor c = iota_tensor({8, 600000});
  GraphBuilder b(17);
  b.constant("c", c).input("idx", DType::kI64, {1, 3}).input("h", DType::kF32, {1, 8});
  b.node("Transpose", {"c"}, {"t"}, {attr_ints("perm", {1, 0})});
  b.node("Gather", {"t", "idx"}, {"y"}, {attr_int("axis", 0)});
  b.node("MatMul", {"h", "c"}, {"logits"});
  auto session = make_session(b.output("y").output("logits").build(), /*optimize=*/true);
  ASSERT_TRUE(session);
  for (const ir::Node& node : session->graph().nodes) {
    if (node.op_type != "Transpose") continue;
    EXPECT_NE(session->graph().value(node.inputs[0]).name, "c") << "the whole constant is transposed";
  }
  Tensor ids = Tensor::allocate(DType::kI64, {1, 3});
  ids.data_as<int64_t>()[0] = 0;
  ids.data_as<int64_t>()[1] = 599999;
  ids.data_as<int64_t>()[2] = -2;
  Tensor h = Tensor::allocate(DType::kF32, {1, 8});
  std::vector<Tensor> out;
  const std::vector<const Tensor*> inputs = {&ids, &h};
  ASSERT_TRUE(session->run(inputs, out).is_ok());
  ASSERT_EQ(out[0].shape(), (Shape{1, 3, 8}));
  const std::vector<float> want = transpose_then_gather(c, {1, 0}, 0, ids);
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(out[0].data_as<float>()[i], want[i]) << i;
}

// A Transpose that alone reads a weight is folded whatever its size: its
// result replaces the weight, so no memory is added.
TEST(ConstantFolding, WeightReadOnceIsFoldedWhateverItsSize) {
  const Tensor c = iota_tensor({8, 600000});
  GraphBuilder b(17);
  b.constant("c", c).input("x", DType::kF32, {600000, 1});
  b.node("Transpose", {"c"}, {"t"}, {attr_ints("perm", {1, 0})});
  b.node("Add", {"t", "x"}, {"y"});
  auto session = make_session(b.output("y").build(), /*optimize=*/true);
  ASSERT_TRUE(session);
  for (const ir::Node& node : session->graph().nodes) EXPECT_NE(node.op_type, "Transpose");
  Tensor x = Tensor::allocate(DType::kF32, {600000, 1});
  std::vector<Tensor> out;
  const std::vector<const Tensor*> inputs = {&x};
  ASSERT_TRUE(session->run(inputs, out).is_ok());
  ASSERT_EQ(out[0].shape(), (Shape{600000, 8}));
  EXPECT_EQ(out[0].data_as<float>()[1], 600000.0f);  // t[0][1] = c[1][0]
  EXPECT_EQ(out[0].data_as<float>()[8 * 599999 + 7], 7.0f * 600000 + 599999);
}

}  // namespace
}  // namespace ember
