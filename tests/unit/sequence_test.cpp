// Sequences and optionals as run-time values, and the subgraph loops (Loop, Scan).
#include <gtest/gtest.h>

#include "base/value_list.h"
#include "graph_builder.h"
#include "op_test_util.h"
#include "runtime/session.h"

namespace ember {
namespace {

using runtime::NamedInput;
using test::GraphBuilder;
using test::make_tensor;
using test::values_of;

ir::Attribute attr_graph(std::string name, std::shared_ptr<ir::Graph> g) {
  ir::Attribute a;
  a.name = std::move(name);
  a.type = ir::AttrType::kGraph;
  a.g = std::move(g);
  return a;
}

// Marks `name` of `g` as read from the enclosing graph.
void outer_ref(ir::Graph& g, const std::string& name) {
  ir::ValueId id = g.find_value(name);
  ASSERT_NE(id, ir::kNoValue);
  g.value(id).is_outer_scope = true;
  g.outer_refs.push_back(id);
}

// A declared input of kind `dtype` (kSequence / kOptional): no shape.
void container_input(GraphBuilder& b, const std::string& name, DType dtype) {
  b.input(name, dtype, {});
  ir::Graph& g = *b.raw();
  g.value(g.inputs.back()).has_shape = false;
}

std::unique_ptr<runtime::Session> session_of(std::shared_ptr<ir::Graph> g) {
  auto s = runtime::Session::create(std::move(g));
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  return s.is_ok() ? std::move(s).value() : nullptr;
}

const ValueList& list_of(const Tensor& t) {
  const ValueList* list = container_list(t);
  EXPECT_NE(list, nullptr) << t.describe();
  static const ValueList kEmpty;
  return list ? *list : kEmpty;
}

TEST(Sequence, FlowsThroughAGraph) {
  GraphBuilder b;
  b.input("x", DType::kF32, {2}).input("y", DType::kF32, {3});
  b.constant("front", make_tensor<int64_t>({}, {0})).constant("last", make_tensor<int64_t>({}, {-1}));
  b.node("SequenceConstruct", {"x", "y"}, {"s"});
  b.node("SequenceInsert", {"s", "y", "front"}, {"s2"});
  b.node("SequenceLength", {"s2"}, {"n"});
  b.node("SequenceAt", {"s2", "last"}, {"at"});
  b.node("ConcatFromSequence", {"s2"}, {"cat"}, {test::attr_int("axis", 0)});
  b.node("Relu", {"at"}, {"relu"});  // a tensor kernel downstream of a sequence
  auto session = session_of(b.output("n").output("relu").output("cat").output("s2").build());
  ASSERT_TRUE(session);
  Tensor x = make_tensor<float>({2}, {1, -2});
  Tensor y = make_tensor<float>({3}, {3, 4, -5});
  NamedInput in[] = {{"x", &x}, {"y", &y}};
  auto out = session->run(in);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(values_of<int64_t>((*out)[0]), (std::vector<int64_t>{3}));
  EXPECT_EQ(values_of<float>((*out)[1]), (std::vector<float>{3, 4, 0}));
  EXPECT_EQ(values_of<float>((*out)[2]), (std::vector<float>{3, 4, -5, 1, -2, 3, 4, -5}));
  ASSERT_EQ((*out)[3].dtype(), DType::kSequence);
  const ValueList& s2 = list_of((*out)[3]);
  ASSERT_EQ(s2.items.size(), 3u);
  EXPECT_EQ(s2.elem_dtype, DType::kF32);
  EXPECT_EQ(values_of<float>(s2.items[1]), (std::vector<float>{1, -2}));
  // The list owns copies: the caller's inputs may change afterwards.
  x.data_as<float>()[0] = 100;
  EXPECT_EQ(values_of<float>(s2.items[1]), (std::vector<float>{1, -2}));
  // A second run reuses the plan and gives the same values.
  auto again = session->run(in);
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_EQ(values_of<float>((*again)[2]), (std::vector<float>{3, 4, -5, 100, -2, 3, 4, -5}));
}

TEST(Sequence, SplitEraseAndIdentityOfACallersSequence) {
  GraphBuilder b;
  container_input(b, "seq", DType::kSequence);
  b.node("Identity", {"seq"}, {"same"});
  b.node("SequenceErase", {"seq"}, {"shorter"});
  b.node("ConcatFromSequence", {"shorter"}, {"stacked"}, {test::attr_int("axis", -1), test::attr_int("new_axis", 1)});
  b.node("SplitToSequence", {"stacked"}, {"rows"}, {test::attr_int("axis", 0), test::attr_int("keepdims", 0)});
  auto session = session_of(b.output("same").output("stacked").output("rows").build());
  ASSERT_TRUE(session);
  ValueList list{DType::kI32, {make_tensor<int32_t>({2}, {1, 2}), make_tensor<int32_t>({2}, {3, 4}),
                               make_tensor<int32_t>({2}, {5, 6})}};
  Tensor seq = make_container(DType::kSequence, std::move(list));
  NamedInput in[] = {{"seq", &seq}};
  auto out = session->run(in);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(list_of((*out)[0]).items.size(), 3u);
  EXPECT_EQ((*out)[1].describe(), "int32[2,2]");
  EXPECT_EQ(values_of<int32_t>((*out)[1]), (std::vector<int32_t>{1, 3, 2, 4}));
  const ValueList& rows = list_of((*out)[2]);
  ASSERT_EQ(rows.items.size(), 2u);
  EXPECT_EQ(rows.items[1].describe(), "int32[2]");
  EXPECT_EQ(values_of<int32_t>(rows.items[1]), (std::vector<int32_t>{2, 4}));
}

TEST(Sequence, OptionalsHoldNothingOrOneValue) {
  GraphBuilder b;
  b.input("x", DType::kF32, {2});
  container_input(b, "maybe", DType::kOptional);
  b.node("Optional", {"x"}, {"some"});
  b.node("OptionalHasElement", {"some"}, {"has_some"});
  b.node("OptionalHasElement", {"maybe"}, {"has_maybe"});
  b.node("OptionalGetElement", {"some"}, {"got"});
  auto session = session_of(b.output("has_some").output("has_maybe").output("got").output("some").build());
  ASSERT_TRUE(session);
  Tensor x = make_tensor<float>({2}, {7, 8});
  Tensor none = make_container(DType::kOptional, ValueList{DType::kF32, {}});
  NamedInput in[] = {{"x", &x}, {"maybe", &none}};
  auto out = session->run(in);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_TRUE(*(*out)[0].data_as<bool>());
  EXPECT_FALSE(*(*out)[1].data_as<bool>());
  EXPECT_EQ(values_of<float>((*out)[2]), (std::vector<float>{7, 8}));
  EXPECT_EQ(list_of((*out)[3]).items.size(), 1u);
}

TEST(Sequence, RunBoundHandsOverTheHandle) {
  GraphBuilder b;
  b.input("x", DType::kF32, {2});
  b.node("SequenceConstruct", {"x", "x"}, {"s"});
  auto session = session_of(b.output("s").build());
  ASSERT_TRUE(session);
  Tensor x = make_tensor<float>({2}, {1, 2});
  Tensor bound(DType::kSequence, Shape{}, nullptr);
  const Tensor* inputs[] = {&x};
  Tensor* outputs[] = {&bound};
  Status st = session->run_bound(inputs, outputs);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_EQ(list_of(bound).items.size(), 2u);
  EXPECT_EQ(values_of<float>(list_of(bound).items[1]), (std::vector<float>{1, 2}));
}

TEST(Sequence, WrongKindsAreErrorsNamingTheInput) {
  {
    GraphBuilder b;
    b.input("x", DType::kF32, {2});
    b.constant("i", make_tensor<int64_t>({}, {0}));
    b.node("SequenceAt", {"x", "i"}, {"y"});
    auto s = runtime::Session::create(b.output("y").build());
    ASSERT_FALSE(s.is_ok());
    EXPECT_NE(s.status().to_string().find("must be a sequence"), std::string::npos) << s.status().to_string();
  }
  GraphBuilder b;
  container_input(b, "seq", DType::kSequence);
  b.input("i", DType::kI64, {});
  b.node("SequenceAt", {"seq", "i"}, {"y"});
  auto session = session_of(b.output("y").build());
  ASSERT_TRUE(session);
  Tensor seq = make_container(DType::kSequence, ValueList{DType::kF32, {make_tensor<float>({1}, {1})}});
  Tensor past_end = make_tensor<int64_t>({}, {1});
  NamedInput bad_position[] = {{"seq", &seq}, {"i", &past_end}};
  auto out = session->run(bad_position);
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().to_string().find("position 1 is outside [-1, 0]"), std::string::npos) << out.status().to_string();
  Tensor not_a_sequence = make_tensor<float>({1}, {1});
  Tensor zero = make_tensor<int64_t>({}, {0});
  NamedInput tensor_for_sequence[] = {{"seq", &not_a_sequence}, {"i", &zero}};
  out = session->run(tensor_for_sequence);
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().to_string().find("'seq'"), std::string::npos) << out.status().to_string();
}

// Loop body: y_out = y_in + step (step read from the enclosing graph), stop
// once iter reaches `stop_at`; scan output: y_out.
std::shared_ptr<ir::Graph> counting_body() {
  GraphBuilder body;
  body.input("iter", DType::kI64, {}).input("cond_in", DType::kBool, {}).input("y_in", DType::kF32, {1});
  body.constant("stop_at", make_tensor<int64_t>({}, {4}));
  body.node("Add", {"y_in", "step"}, {"y_out"});
  body.node("Less", {"iter", "stop_at"}, {"cond_out"});
  body.node("Identity", {"y_out"}, {"scan"});
  body.output("cond_out").output("y_out").output("scan");
  outer_ref(*body.raw(), "step");
  return body.build();
}

TEST(Loop, CarriesStateAndStacksScanOutputs) {
  GraphBuilder b(16);
  b.input("m", DType::kI64, {}).input("y", DType::kF32, {1}).input("step", DType::kF32, {1});
  b.constant("go", make_tensor<bool>({}, {true}));
  b.node("Loop", {"m", "go", "y", "step"}, {"y_final", "ys"}, {attr_graph("body", counting_body())});
  b.raw()->nodes.back().num_explicit_inputs = 3;  // "step" is the body's outer reference
  auto session = session_of(b.output("y_final").output("ys").build());
  ASSERT_TRUE(session);
  Tensor y = make_tensor<float>({1}, {1});
  Tensor step = make_tensor<float>({1}, {0.5f});
  // The trip count stops it first (3 iterations), then the condition (after iter 4).
  for (auto [trips, expected] : {std::pair<int64_t, int64_t>{3, 3}, {10, 5}, {0, 0}}) {
    Tensor m = make_tensor<int64_t>({}, {trips});
    NamedInput in[] = {{"m", &m}, {"y", &y}, {"step", &step}};
    auto out = session->run(in);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    EXPECT_EQ(values_of<float>((*out)[0]), (std::vector<float>{1 + 0.5f * static_cast<float>(expected)})) << trips;
    EXPECT_EQ((*out)[1].describe(), "float32[" + std::to_string(expected) + ",1]");
    for (int64_t i = 0; i < expected; ++i) EXPECT_EQ((*out)[1].data_as<float>()[i], 1 + 0.5f * static_cast<float>(i + 1));
  }
}

TEST(Loop, CarriesASequenceThroughAnOptionalBodyInput) {
  GraphBuilder body(16);
  body.input("iter", DType::kI64, {}).input("cond_in", DType::kBool, {});
  container_input(body, "acc_in", DType::kOptional);
  body.node("OptionalHasElement", {"acc_in"}, {"has"});
  body.node("Identity", {"cond_in"}, {"cond_out"});
  body.node("Unsqueeze", {"iter", "axes"}, {"row"});
  body.constant("axes", make_tensor<int64_t>({1}, {0}));
  body.node("OptionalGetElement", {"acc_in"}, {"acc"});
  body.node("SequenceInsert", {"acc", "row"}, {"acc_out"});
  body.output("cond_out").output("acc_out");
  GraphBuilder b(16);
  b.input("m", DType::kI64, {});
  container_input(b, "start", DType::kOptional);
  b.node("Loop", {"m", "", "start"}, {"acc"}, {attr_graph("body", body.build())});
  auto session = session_of(b.output("acc").build());
  ASSERT_TRUE(session);
  Tensor m = make_tensor<int64_t>({}, {3});
  Tensor start = make_container(DType::kOptional, ValueList{DType::kSequence,
                                                            {make_container(DType::kSequence, ValueList{DType::kI64, {}})}});
  NamedInput in[] = {{"m", &m}, {"start", &start}};
  auto out = session->run(in);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  ASSERT_EQ((*out)[0].dtype(), DType::kSequence);
  const ValueList& acc = list_of((*out)[0]);
  ASSERT_EQ(acc.items.size(), 3u);
  EXPECT_EQ(values_of<int64_t>(acc.items[2]), (std::vector<int64_t>{2}));
}

TEST(Scan, ScansAnAxisInReverseAndStacksOnAnother) {
  GraphBuilder body(16);
  body.input("sum_in", DType::kF32, {2}).input("x", DType::kF32, {2});
  body.node("Add", {"sum_in", "x"}, {"sum_out"});
  body.node("Identity", {"sum_out"}, {"running"});
  body.output("sum_out").output("running");
  GraphBuilder b(16);
  b.input("init", DType::kF32, {2}).input("xs", DType::kF32, {2, -1});
  b.node("Scan", {"init", "xs"}, {"total", "partial"},
         {attr_graph("body", body.build()), test::attr_int("num_scan_inputs", 1), test::attr_ints("scan_input_axes", {1}),
          test::attr_ints("scan_input_directions", {1}), test::attr_ints("scan_output_axes", {1})});
  auto session = session_of(b.output("total").output("partial").build());
  ASSERT_TRUE(session);
  Tensor init = make_tensor<float>({2}, {0, 100});
  Tensor xs = make_tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  NamedInput in[] = {{"init", &init}, {"xs", &xs}};
  auto out = session->run(in);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(values_of<float>((*out)[0]), (std::vector<float>{6, 115}));
  // Columns taken last to first: running sums [3,106], [5,111], [6,115], stacked as columns.
  EXPECT_EQ((*out)[1].describe(), "float32[2,3]");
  EXPECT_EQ(values_of<float>((*out)[1]), (std::vector<float>{3, 5, 6, 106, 111, 115}));
  // No columns: the states pass through, the scan output has the body's [2] per (no) column.
  Tensor none = Tensor::allocate(DType::kF32, {2, 0});
  NamedInput empty[] = {{"init", &init}, {"xs", &none}};
  out = session->run(empty);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(values_of<float>((*out)[0]), (std::vector<float>{0, 100}));
  EXPECT_EQ((*out)[1].describe(), "float32[2,0]");
}

}  // namespace
}  // namespace ember
