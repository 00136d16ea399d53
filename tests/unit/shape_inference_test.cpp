// Symbolic shape inference: dim expressions, per-op rules on graphs built in
// memory, and whole models from Debian's ONNX test data.
#include "ir/shape_inference.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <variant>
#include <vector>

#include "onnx/model_loader.h"
#include "op_test_util.h"

namespace ember::ir {
namespace {

namespace fs = std::filesystem;
using test::attr_int;
using test::attr_ints;
using test::attr_string;
using test::make_tensor;

// A dim in a test graph: a size or a symbol name.
using D = std::variant<int64_t, const char*>;

class Builder {
 public:
  explicit Builder(int opset = 17) { g.opsets[""] = opset; }

  Builder& input(const std::string& name, DType dtype, std::vector<D> dims) {
    Value& v = g.value(id(name));
    v.dtype = dtype;
    v.is_graph_input = true;
    v.has_shape = true;
    for (const D& d : dims) {
      bool known = std::holds_alternative<int64_t>(d);
      v.shape.push_back(known ? Dim{std::get<int64_t>(d), ""} : Dim{-1, std::get<const char*>(d)});
    }
    g.inputs.push_back(id(name));
    return *this;
  }
  Builder& ints(const std::string& name, std::vector<int64_t> values, bool scalar = false) {
    Shape shape = scalar ? Shape{} : Shape{static_cast<int64_t>(values.size())};
    g.value(id(name)).constant = make_tensor<int64_t>(shape, values);
    return *this;
  }
  Builder& weight(const std::string& name, Shape shape) {
    g.value(id(name)).constant = Tensor::allocate(DType::kF32, shape);
    return *this;
  }
  Builder& node(const std::string& op, std::vector<std::string> inputs, std::vector<std::string> outputs,
                std::vector<Attribute> attrs = {}) {
    Node n;
    n.name = op + std::to_string(g.nodes.size());
    n.op_type = op;
    n.opset = g.opsets[""];
    for (const auto& in : inputs) n.inputs.push_back(in.empty() ? kNoValue : id(in));
    for (const auto& out : outputs) n.outputs.push_back(id(out));
    n.num_explicit_inputs = n.inputs.size();
    n.attributes = std::move(attrs);
    g.nodes.push_back(std::move(n));
    return *this;
  }
  // Runs inference and returns `name`'s shape as text ("?" for unknown rank).
  std::string shape(const std::string& name) {
    run();
    const Value& v = g.value(g.find_value(name));
    if (!v.has_shape) return "?";
    std::string s = "[";
    for (size_t i = 0; i < v.shape.size(); ++i) {
      const Dim& d = v.shape[i];
      s += (i ? "," : "") + (d.known() ? std::to_string(d.value) : d.symbol.empty() ? "?" : d.symbol);
    }
    return s + "]";
  }
  DType dtype(const std::string& name) {
    run();
    return g.value(g.find_value(name)).dtype;
  }
  void run() {
    Status st = infer_shapes(g);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
  }
  ValueId id(const std::string& name) {
    ValueId v = g.find_value(name);
    return v == kNoValue ? g.add_value(name) : v;
  }
  Graph g;
};

DimExpr sym(const char* s) { return DimExpr::symbol(s); }
DimExpr c(int64_t v) { return DimExpr::constant(v); }

TEST(DimExprTest, FoldsConstantsAndPrintsCanonically) {
  EXPECT_EQ((c(2) + c(3)).to_string(), "5");
  EXPECT_EQ((sym("seq") * c(2)).to_string(), "seq*2");
  EXPECT_EQ((c(2) * sym("seq")).to_string(), "seq*2");
  EXPECT_EQ((sym("seq") + sym("past")).to_string(), "past+seq");
  EXPECT_EQ((sym("past") + sym("seq")), (sym("seq") + sym("past")));
  EXPECT_EQ((sym("seq") - sym("past")).to_string(), "seq-past");
  EXPECT_EQ((sym("seq") + c(1) - c(1)).to_string(), "seq");
  EXPECT_EQ(((sym("past") + sym("seq")) - sym("past")).to_string(), "seq");
  EXPECT_EQ((sym("seq") - c(3)).to_string(), "seq-3");
  EXPECT_EQ((sym("batch") * sym("seq") * c(896)).to_string(), "batch*seq*896");
  EXPECT_EQ((sym("seq") * c(0)).as_constant(), 0);
  EXPECT_FALSE((sym("seq") + DimExpr{}).known());
  EXPECT_EQ(DimExpr{}.to_string(), "?");
}

TEST(DimExprTest, DividesExactlyOrKeepsAnOpaqueFloor) {
  EXPECT_EQ(floor_div(c(7), c(2)).as_constant(), 3);
  EXPECT_EQ(floor_div(c(-7), c(2)).as_constant(), -4);
  EXPECT_EQ(ceil_div(c(7), c(2)).as_constant(), 4);
  EXPECT_EQ(floor_div(sym("seq") * c(4), c(2)).to_string(), "seq*2");
  EXPECT_EQ(floor_div(sym("seq") * c(2) + c(1), c(2)).to_string(), "seq");
  EXPECT_EQ(floor_div(sym("b") * sym("s") * c(896), sym("b") * sym("s") * c(64)).as_constant(), 14);
  EXPECT_EQ(floor_div(sym("seq"), sym("seq")).as_constant(), 1);
  EXPECT_EQ(floor_div(sym("seq"), c(2)).to_string(), "floor(seq/2)");
  EXPECT_EQ(floor_div(sym("seq") - c(1), c(2)).to_string(), "floor((seq-1)/2)");
  EXPECT_EQ((floor_div(sym("seq"), c(2)) * c(3)).to_string(), "floor(seq/2)*3");
  EXPECT_FALSE(floor_div(sym("seq"), c(0)).known());
}

TEST(DimExprTest, DeclaredSymbolsWithOperatorsStayAtomic) {
  DimExpr e = DimExpr::symbol("past_sequence_length + 1") * c(2);
  EXPECT_EQ(e.to_string(), "(past_sequence_length + 1)*2");
  EXPECT_EQ(e.to_dim().symbol, "(past_sequence_length + 1)*2");
  EXPECT_EQ(c(5).to_dim().value, 5);
}

TEST(ShapeInferenceTest, ShapeTensorChainFeedsReshape) {
  Builder b;
  b.input("input_ids", DType::kI64, {"batch", "seq"})
      .input("hidden", DType::kF32, {"batch", "seq", int64_t{896}})
      .ints("zero", {0}, true)
      .ints("one", {1}, true)
      .ints("axes0", {0})
      .ints("tail", {-1, 64})
      .node("Shape", {"input_ids"}, {"shape"})
      .node("Gather", {"shape", "zero"}, {"b"}, {attr_int("axis", 0)})
      .node("Gather", {"shape", "one"}, {"s"}, {attr_int("axis", 0)})
      .node("Unsqueeze", {"b", "axes0"}, {"b1"})
      .node("Unsqueeze", {"s", "axes0"}, {"s1"})
      .node("Concat", {"b1", "s1", "tail"}, {"new_shape"}, {attr_int("axis", 0)})
      .node("Reshape", {"hidden", "new_shape"}, {"heads"})
      .node("Transpose", {"heads"}, {"t"}, {attr_ints("perm", {0, 2, 1, 3})});
  EXPECT_EQ(b.shape("shape"), "[2]");
  EXPECT_EQ(b.shape("b"), "[]");
  EXPECT_EQ(b.shape("new_shape"), "[4]");
  EXPECT_EQ(b.shape("heads"), "[batch,seq,14,64]");
  EXPECT_EQ(b.shape("t"), "[batch,14,seq,64]");
  EXPECT_EQ(b.dtype("t"), DType::kF32);
  auto values = infer_symbolic_values(b.g);
  ASSERT_TRUE(values.is_ok());
  const auto& contents = (*values)[static_cast<size_t>(b.id("new_shape"))].contents;
  ASSERT_TRUE(contents.has_value());
  EXPECT_EQ((*contents)[0].to_string(), "batch");
  EXPECT_EQ((*contents)[1].to_string(), "seq");
}

TEST(ShapeInferenceTest, ReshapeZeroCopiesAndArithmeticOnShapeTensors) {
  Builder b;
  b.input("x", DType::kF32, {"batch", "seq", int64_t{8}, int64_t{64}})
      .ints("two", {2})
      .ints("keep", {0, 0, -1})
      .node("Shape", {"x"}, {"shape"}, {attr_int("start", 1), attr_int("end", 2)})
      .node("Mul", {"shape", "two"}, {"doubled"})
      .node("Reshape", {"x", "keep"}, {"merged"})
      .node("Flatten", {"x"}, {"flat"}, {attr_int("axis", 2)})
      .node("Size", {"x"}, {"size"})
      .node("ConstantOfShape", {"doubled"}, {"zeros"});
  EXPECT_EQ(b.shape("merged"), "[batch,seq,512]");
  EXPECT_EQ(b.shape("flat"), "[batch*seq,512]");
  EXPECT_EQ(b.shape("zeros"), "[seq*2]");
  EXPECT_EQ(b.dtype("zeros"), DType::kF32);
  EXPECT_EQ(b.shape("size"), "[]");
}

TEST(ShapeInferenceTest, BroadcastsSymbolically) {
  Builder b;
  b.input("mask", DType::kF32, {"batch", int64_t{1}, "seq"})
      .input("bias", DType::kF32, {int64_t{1}, "heads", "seq"})
      .input("cmp", DType::kF32, {"seq"})
      .node("Add", {"mask", "bias"}, {"sum"})
      .node("Less", {"sum", "cmp"}, {"lt"})
      .node("Where", {"lt", "mask", "bias"}, {"w"});
  EXPECT_EQ(b.shape("sum"), "[batch,heads,seq]");
  EXPECT_EQ(b.shape("lt"), "[batch,heads,seq]");
  EXPECT_EQ(b.dtype("lt"), DType::kBool);
  EXPECT_EQ(b.shape("w"), "[batch,heads,seq]");
}

TEST(ShapeInferenceTest, BroadcastMismatchIsAnErrorNamingTheNode) {
  Builder b;
  b.input("x", DType::kF32, {int64_t{3}, int64_t{4}}).input("y", DType::kF32, {int64_t{5}}).node("Add", {"x", "y"}, {"z"});
  Status st = infer_shapes(b.g);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("Add0"), std::string::npos) << st.message();
}

// A shape tensor's declared length is a rank: past kMaxRank it is an error
// naming the node, before any rank-sized allocation (a length of 10^12 once
// asked for 8 TB), and an attribute-given shape past it is refused too.
TEST(ShapeInferenceTest, RanksPastTheBoundAreErrorsNamingTheNode) {
  auto error_of = [](Builder& b) {
    Status st = infer_shapes(b.g);
    return st.is_ok() ? std::string("(inferred)") : st.message();
  };
  for (const char* op : {"Reshape", "Expand", "ConstantOfShape", "AffineGrid"}) {
    bool shape_first = std::string(op) == "ConstantOfShape";
    std::vector<std::string> inputs = shape_first ? std::vector<std::string>{"s"} : std::vector<std::string>{"x", "s"};
    Builder at_bound(20);
    at_bound.input("x", DType::kF32, {int64_t{1}, int64_t{2}, int64_t{3}})
        .input("s", DType::kI64, {static_cast<int64_t>(kMaxRank)})
        .node(op, inputs, {"y"});
    EXPECT_EQ(error_of(at_bound), "(inferred)") << op;
    for (int64_t length : {int64_t{kMaxRank + 1}, int64_t{1'000'000'000'000}}) {
      Builder b(20);
      b.input("x", DType::kF32, {int64_t{1}, int64_t{2}, int64_t{3}}).input("s", DType::kI64, {length}).node(op, inputs, {"y"});
      std::string error = error_of(b);
      EXPECT_NE(error.find(op + std::string("0")), std::string::npos) << error;
      const std::string input = shape_first ? "input 0" : "input 1";
      EXPECT_NE(error.find(input + " (a shape) has " + std::to_string(length) + " elements: a tensor has at most 64 dims"),
                std::string::npos)
          << error;
    }
  }
  Builder attr(4);
  attr.input("x", DType::kF32, {int64_t{1}}).node("Reshape", {"x"}, {"y"}, {attr_ints("shape", std::vector<int64_t>(kMaxRank + 1, 1))});
  std::string error = error_of(attr);
  EXPECT_NE(error.find("'Reshape0' (Reshape): output 'y' would have rank 65, past the 64 dims"), std::string::npos) << error;
}

TEST(ShapeInferenceTest, MatMulAndGemm) {
  Builder b;
  b.input("x", DType::kF32, {"b", "s", int64_t{896}})
      .weight("w", {896, 4864})
      .weight("v", {896})
      .input("a", DType::kF32, {int64_t{4}, "k"})
      .input("bt", DType::kF32, {int64_t{7}, int64_t{5}})
      .node("MatMul", {"x", "w"}, {"y"})
      .node("MatMul", {"x", "v"}, {"yv"})
      .node("MatMul", {"v", "w"}, {"vw"})
      .node("Gemm", {"a", "bt"}, {"g"}, {attr_int("transB", 1)});
  EXPECT_EQ(b.shape("y"), "[b,s,4864]");
  EXPECT_EQ(b.shape("yv"), "[b,s]");
  EXPECT_EQ(b.shape("vw"), "[4864]");
  EXPECT_EQ(b.shape("g"), "[4,7]");

  Builder bad;
  bad.input("x", DType::kF32, {int64_t{2}, int64_t{3}}).weight("w", {4, 5}).node("MatMul", {"x", "w"}, {"y"});
  EXPECT_FALSE(infer_shapes(bad.g).is_ok());
}

TEST(ShapeInferenceTest, ConcatOnSymbolicAxisAddsDims) {
  Builder b;
  b.input("past", DType::kF32, {"batch", int64_t{2}, "past", int64_t{64}})
      .input("cur", DType::kF32, {"batch", int64_t{2}, "seq", int64_t{64}})
      .node("Concat", {"past", "cur"}, {"kv"}, {attr_int("axis", -2)})
      .node("Concat", {"kv", "cur"}, {"kv2"}, {attr_int("axis", 2)})
      .node("Split", {"kv"}, {"k", "v"}, {attr_int("axis", 1)});
  EXPECT_EQ(b.shape("kv"), "[batch,2,past+seq,64]");
  EXPECT_EQ(b.shape("kv2"), "[batch,2,past+seq*2,64]");
  EXPECT_EQ(b.shape("k"), "[batch,1,past+seq,64]");
}

TEST(ShapeInferenceTest, SliceGatherExpandRangeOnShapeTensors) {
  Builder b;
  b.input("x", DType::kF32, {"batch", "seq", int64_t{16}})
      .ints("s0", {1})
      .ints("e0", {INT64_MAX})
      .ints("ax", {0})
      .ints("neg", {-2})
      .ints("start", {0}, true)
      .ints("step", {1}, true)
      .ints("idx1", {1}, true)
      .node("Shape", {"x"}, {"shape"})
      .node("Slice", {"shape", "s0", "e0", "ax"}, {"tail"})
      .node("Slice", {"x", "s0", "e0", "s0"}, {"x_tail"})
      .node("Slice", {"x", "neg", "e0", "s0"}, {"x_last2"})
      .node("Gather", {"shape", "idx1"}, {"seq"})
      .node("Range", {"start", "seq", "step"}, {"positions"})
      .node("Expand", {"x", "tail"}, {"expanded"})
      .node("Gather", {"x", "positions"}, {"rows"}, {attr_int("axis", 1)});
  EXPECT_EQ(b.shape("tail"), "[2]");
  // seq[1:] is max(seq-1, 0) and seq[-2:] is min(seq, 2): neither is provable for
  // a symbolic seq (a random graph with seq = 0 once contradicted "seq-1").
  EXPECT_EQ(b.shape("x_tail"), "[batch,?,16]");
  EXPECT_EQ(b.shape("x_last2"), "[batch,?,16]");
  EXPECT_EQ(b.shape("positions"), "[seq]");
  EXPECT_EQ(b.dtype("positions"), DType::kI64);
  EXPECT_EQ(b.shape("expanded"), "[batch,seq,16]");
  EXPECT_EQ(b.shape("rows"), "[batch,seq,16]");
}

TEST(ShapeInferenceTest, ExporterMinusOneTestThroughEqualAndWhere) {
  // The exporters' "expand to [batch, -1, seq]" idiom: Where(Equal(s, -1), ones, s).
  Attribute one_value;
  one_value.name = "value";
  one_value.type = AttrType::kTensor;
  one_value.t = make_tensor<int64_t>({1}, {1});
  Builder b;
  b.input("x", DType::kF32, {"batch", int64_t{1}, "seq"})
      .input("ids", DType::kI64, {"batch", "seq"})
      .ints("minus", {-1})
      .ints("heads", {8})
      .ints("axes0", {0})
      .ints("zero", {0}, true)
      .ints("one", {1}, true)
      .node("Shape", {"ids"}, {"shape"})
      .node("Gather", {"shape", "zero"}, {"b"})
      .node("Gather", {"shape", "one"}, {"s"})
      .node("Unsqueeze", {"b", "axes0"}, {"b1"})
      .node("Unsqueeze", {"s", "axes0"}, {"s1"})
      .node("Concat", {"b1", "minus", "s1"}, {"target"}, {attr_int("axis", 0)})
      .node("Equal", {"target", "minus"}, {"is_neg"})
      .node("ConstantOfShape", {"heads"}, {"ones"}, {})
      .node("Shape", {"target"}, {"len"})
      .node("ConstantOfShape", {"len"}, {"ones3"}, {one_value})
      .node("Cast", {"ones3"}, {"ones3i"}, {attr_int("to", 7)})
      .node("Where", {"is_neg", "ones3", "target"}, {"fixed"})
      .node("Expand", {"x", "fixed"}, {"y"});
  EXPECT_EQ(b.shape("is_neg"), "[3]");
  EXPECT_EQ(b.dtype("ones3i"), DType::kI64);
  EXPECT_EQ(b.shape("ones"), "[8]");
  EXPECT_EQ(b.shape("y"), "[batch,1,seq]");
}

TEST(ShapeInferenceTest, ReductionsSqueezeAndNormalization) {
  Builder b(18);
  b.input("x", DType::kF16, {"batch", "seq", int64_t{64}})
      .ints("last", {-1})
      .ints("axes01", {0, 1})
      .weight("scale", {64})
      .node("ReduceMean", {"x", "last"}, {"mean"})
      .node("ReduceSum", {"x", "last"}, {"sum"}, {attr_int("keepdims", 0)})
      .node("ReduceMax", {"x"}, {"all"}, {attr_int("keepdims", 0)})
      .node("ArgMax", {"x"}, {"am"}, {attr_int("axis", 2), attr_int("keepdims", 0)})
      .node("Unsqueeze", {"sum", "axes01"}, {"u"})
      .node("Squeeze", {"u", "axes01"}, {"sq"})
      .node("LayerNormalization", {"x", "scale"}, {"ln", "ln_mean", "ln_inv"})
      .node("Softmax", {"x"}, {"sm"});
  EXPECT_EQ(b.shape("mean"), "[batch,seq,1]");
  EXPECT_EQ(b.shape("sum"), "[batch,seq]");
  EXPECT_EQ(b.shape("all"), "[]");
  EXPECT_EQ(b.shape("am"), "[batch,seq]");
  EXPECT_EQ(b.dtype("am"), DType::kI64);
  EXPECT_EQ(b.shape("u"), "[1,1,batch,seq]");
  EXPECT_EQ(b.shape("sq"), "[batch,seq]");
  EXPECT_EQ(b.shape("ln"), "[batch,seq,64]");
  EXPECT_EQ(b.dtype("ln"), DType::kF16);
  EXPECT_EQ(b.shape("ln_mean"), "[batch,seq,1]");
  EXPECT_EQ(b.shape("sm"), "[batch,seq,64]");
}

// Outputs whose type is not input 0's: Dropout's mask (bool from opset 10, the
// data's type before), BatchNormalization's running statistics (typed like
// input_mean, which opset 15 lets differ from X), Det's batch shape.
TEST(ShapeInferenceTest, DropoutMaskBatchNormStatisticsAndDet) {
  Builder b(15);
  b.input("x", DType::kF32, {"n", int64_t{3}, int64_t{4}})
      .input("mean", DType::kF64, {int64_t{3}})
      .input("m", DType::kF32, {"batch", int64_t{5}, int64_t{5}})
      .weight("scale", {3})
      .node("Dropout", {"x"}, {"y", "mask"})
      .node("BatchNormalization", {"x", "scale", "scale", "mean", "mean"}, {"bn", "running_mean", "running_var"},
            {attr_int("training_mode", 1)})
      .node("Det", {"m"}, {"det"});
  EXPECT_EQ(b.shape("mask"), "[n,3,4]");
  EXPECT_EQ(b.dtype("mask"), DType::kBool);
  EXPECT_EQ(b.dtype("bn"), DType::kF32);
  EXPECT_EQ(b.shape("running_var"), "[3]");
  EXPECT_EQ(b.dtype("running_var"), DType::kF64);
  EXPECT_EQ(b.shape("det"), "[batch]");

  Builder old(7);
  old.input("x", DType::kF16, {int64_t{2}, "s"}).node("Dropout", {"x"}, {"y", "mask"});
  EXPECT_EQ(old.shape("mask"), "[2,s]");
  EXPECT_EQ(old.dtype("mask"), DType::kF16);
}

TEST(ShapeInferenceTest, ConvPoolPadTile) {
  Builder b;
  b.input("img", DType::kF32, {"n", int64_t{3}, int64_t{224}, int64_t{224}})
      .weight("w", {64, 3, 7, 7})
      .ints("pads", {0, 0, 1, 1, 0, 0, 1, 1})
      .ints("reps", {1, 2, 1, 1})
      .node("Conv", {"img", "w"}, {"c"}, {attr_ints("strides", {2, 2}), attr_ints("pads", {3, 3, 3, 3})})
      .node("MaxPool", {"c"}, {"p"},
            {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1})})
      .node("AveragePool", {"p"}, {"ap"}, {attr_ints("kernel_shape", {2, 2}), attr_int("ceil_mode", 1),
                                           attr_ints("strides", {2, 2})})
      .node("GlobalAveragePool", {"p"}, {"gap"})
      .node("Pad", {"p", "pads"}, {"padded"})
      .node("Tile", {"p", "reps"}, {"tiled"});
  EXPECT_EQ(b.shape("c"), "[n,64,112,112]");
  EXPECT_EQ(b.shape("p"), "[n,64,56,56]");
  EXPECT_EQ(b.shape("ap"), "[n,64,28,28]");
  EXPECT_EQ(b.shape("gap"), "[n,64,1,1]");
  EXPECT_EQ(b.shape("padded"), "[n,64,58,58]");
  EXPECT_EQ(b.shape("tiled"), "[n,128,56,56]");
}

TEST(ShapeInferenceTest, ConvolutionFamily) {
  Builder b;
  b.input("img", DType::kF32, {"n", int64_t{8}, int64_t{5}, int64_t{7}})
      .input("idx", DType::kI64, {"n", int64_t{8}, int64_t{5}, int64_t{7}})
      .input("offset", DType::kF32, {"n", int64_t{18}, int64_t{3}, int64_t{5}})
      .weight("wt", {8, 2, 3, 3})
      .weight("wd", {4, 8, 3, 3})
      .ints("unpooled", {2, 8, 11, 15})
      .node("ConvTranspose", {"img", "wt"}, {"up"},
            {attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1}), attr_ints("output_padding", {1, 0})})
      .node("ConvTranspose", {"img", "wt"}, {"same"}, {attr_string("auto_pad", "SAME_UPPER"), attr_ints("strides", {2, 3})})
      .node("MaxUnpool", {"img", "idx"}, {"unpool"}, {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})})
      .node("MaxUnpool", {"img", "idx", "unpooled"}, {"unpool_to"}, {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})})
      .node("DeformConv", {"img", "wd", "offset"}, {"deform"});
  EXPECT_EQ(b.shape("up"), "[n,2,10,13]");
  EXPECT_EQ(b.shape("same"), "[n,2,10,21]");
  EXPECT_EQ(b.shape("unpool"), "[n,8,10,14]");
  EXPECT_EQ(b.shape("unpool_to"), "[2,8,11,15]");
  EXPECT_EQ(b.shape("deform"), "[n,4,3,5]");
}

TEST(ShapeInferenceTest, ImageResamplingOps) {
  Builder b(20);
  b.input("img", DType::kF32, {"n", int64_t{3}, int64_t{32}, int64_t{48}})
      .input("theta", DType::kF32, {int64_t{2}, int64_t{2}, int64_t{3}})
      .input("cols", DType::kF32, {"n", int64_t{12}, int64_t{20}})
      .ints("sizes", {64, 96})
      .ints("aspect_sizes", {64, 60})
      .ints("all_sizes", {2, 3, 16, 24})
      .ints("affine_size", {2, 3, 5, 7})
      .ints("crop", {30, 50})
      .ints("image_shape", {5, 6})
      .ints("block_shape", {2, 2})
      .node("Resize", {"img", "", "", "sizes"}, {"by_axes"}, {attr_ints("axes", {2, 3})})
      .node("Resize", {"img", "", "", "all_sizes"}, {"by_sizes"})
      .node("Resize", {"img", "", "", "aspect_sizes"}, {"kept"},
            {attr_ints("axes", {2, 3}), attr_string("keep_aspect_ratio_policy", "not_larger")})
      .node("AffineGrid", {"theta", "affine_size"}, {"grid"})
      .node("CenterCropPad", {"img", "crop"}, {"cropped"}, {attr_ints("axes", {-2, -1})})
      .node("Col2Im", {"cols", "image_shape", "block_shape"}, {"im"});
  EXPECT_EQ(b.shape("by_axes"), "[n,3,64,96]");
  EXPECT_EQ(b.shape("by_sizes"), "[2,3,16,24]");
  EXPECT_EQ(b.shape("kept"), "[n,3,40,60]");
  EXPECT_EQ(b.shape("grid"), "[2,5,7,2]");
  EXPECT_EQ(b.shape("cropped"), "[n,3,30,50]");
  EXPECT_EQ(b.shape("im"), "[n,3,5,6]");
}

TEST(ShapeInferenceTest, ImageDecoderKnowsOnlyTheChannels) {
  Builder b(20);
  b.input("bytes", DType::kU8, {"n"})
      .node("ImageDecoder", {"bytes"}, {"bgr"}, {attr_string("pixel_format", "BGR")})
      .node("ImageDecoder", {"bytes"}, {"gray"}, {attr_string("pixel_format", "Grayscale")});
  EXPECT_EQ(b.shape("bgr"), "[?,?,3]");
  EXPECT_EQ(b.shape("gray"), "[?,?,1]");
  EXPECT_EQ(b.dtype("gray"), DType::kU8);
}

TEST(ShapeInferenceTest, RecurrentAndSignalOps) {
  Builder b(20);
  b.input("x", DType::kF32, {"s", "n", int64_t{3}})
      .weight("w", {2, 15, 3})
      .weight("r", {2, 15, 5})
      .node("GRU", {"x", "w", "r"}, {"y", "y_h"}, {attr_int("hidden_size", 5), attr_string("direction", "bidirectional")})
      .input("xb", DType::kF32, {"n", "s", int64_t{3}})
      .weight("lw", {1, 8, 3})
      .weight("lr", {1, 8, 2})
      .node("LSTM", {"xb", "lw", "lr"}, {"ly", "lh", "lc"}, {attr_int("layout", 1)})
      .input("sig", DType::kF32, {"n", int64_t{10}, int64_t{10}, int64_t{1}})
      .ints("axis", {1}, true)
      .ints("len", {16}, true)
      .node("DFT", {"sig", "", "axis"}, {"spectrum"}, {attr_int("onesided", 1)})
      .node("DFT", {"spectrum", "len", "axis"}, {"real"}, {attr_int("onesided", 1), attr_int("inverse", 1)})
      .input("audio", DType::kF32, {"n", int64_t{128}, int64_t{1}})
      .ints("step", {8}, true)
      .node("STFT", {"audio", "step", "", "len"}, {"frames"})
      .node("HannWindow", {"len"}, {"window"}, {attr_int("output_datatype", 11)})
      .ints("mel_bins", {8}, true)
      .node("MelWeightMatrix", {"mel_bins", "len", "", "", ""}, {"mel"});
  EXPECT_EQ(b.shape("y"), "[s,2,n,5]");
  EXPECT_EQ(b.shape("y_h"), "[2,n,5]");
  EXPECT_EQ(b.shape("ly"), "[n,s,1,2]");
  EXPECT_EQ(b.shape("lc"), "[n,1,2]");
  EXPECT_EQ(b.shape("spectrum"), "[n,6,10,2]");
  EXPECT_EQ(b.shape("real"), "[n,16,10,1]");
  EXPECT_EQ(b.shape("frames"), "[n,15,9,2]");
  EXPECT_EQ(b.shape("window"), "[16]");
  EXPECT_EQ(b.dtype("window"), DType::kF64);
  EXPECT_EQ(b.shape("mel"), "[9,8]");
}

TEST(ShapeInferenceTest, IfKeepsWhatBothBranchesAgreeOn) {
  auto branch = [](int64_t second) {
    auto g = std::make_shared<Graph>();
    ValueId x = g->add_value("x");
    g->value(x).is_outer_scope = true;
    g->outer_refs.push_back(x);
    ValueId y = g->add_value("y");
    ValueId shape = g->add_value("shape");
    g->value(shape).constant = make_tensor<int64_t>({3}, {0, second, -1});
    Node n;
    n.name = "inner";
    n.op_type = "Reshape";
    n.opset = 17;
    n.inputs = {x, shape};
    n.outputs = {y};
    n.num_explicit_inputs = 2;
    g->nodes.push_back(n);
    g->outputs.push_back(y);
    return g;
  };
  Attribute then_attr, else_attr;
  then_attr.name = "then_branch";
  then_attr.type = AttrType::kGraph;
  then_attr.g = branch(4);
  else_attr = then_attr;
  else_attr.name = "else_branch";
  else_attr.g = branch(8);
  Builder b;
  b.input("x", DType::kF32, {"batch", int64_t{32}}).input("cond", DType::kBool, {}).node("If", {"cond", "x"}, {"out"},
                                                                                          {then_attr, else_attr});
  EXPECT_EQ(b.shape("out"), "[batch,?,?]");
  EXPECT_EQ(b.dtype("out"), DType::kF32);
  EXPECT_EQ(then_attr.g->value(then_attr.g->find_value("y")).shape[2].value, 8);
}

TEST(ShapeInferenceTest, SequenceOpsAndALoopWhoseCarriedValueChangesKind) {
  Builder b;
  b.input("x", DType::kF32, {int64_t{2}, int64_t{3}}).ints("i", {0}, true);
  b.node("SplitToSequence", {"x"}, {"s"}).node("SequenceLength", {"s"}, {"n"}).node("SequenceAt", {"s", "i"}, {"at"});
  b.node("Optional", {"s"}, {"opt"}).node("OptionalHasElement", {"opt"}, {"has"});
  b.node("OptionalGetElement", {"x"}, {"same"});
  EXPECT_EQ(b.dtype("s"), DType::kSequence);
  EXPECT_EQ(b.shape("n"), "[]");
  EXPECT_EQ(b.dtype("n"), DType::kI64);
  EXPECT_EQ(b.dtype("at"), DType::kUndefined);  // the element's type is the sequence's, known at run time
  EXPECT_EQ(b.dtype("opt"), DType::kOptional);
  EXPECT_EQ(b.dtype("has"), DType::kBool);
  EXPECT_EQ(b.shape("same"), "[2,3]");

  // Loop: an optional goes in, the body returns a sequence: the output is a sequence.
  auto body = std::make_shared<Graph>();
  body->opsets[""] = 17;
  for (const char* name : {"iter", "cond_in", "acc_in"}) body->inputs.push_back(body->add_value(name));
  body->value(body->inputs[0]).dtype = DType::kI64;
  body->value(body->inputs[1]).dtype = DType::kBool;
  body->value(body->inputs[2]).dtype = DType::kOptional;
  ValueId empty = body->add_value("empty");
  Node make;
  make.name = "make";
  make.op_type = "SequenceEmpty";
  make.opset = 17;
  make.outputs = {empty};
  body->nodes.push_back(make);
  body->outputs = {body->inputs[1], empty};
  Attribute body_attr;
  body_attr.name = "body";
  body_attr.type = AttrType::kGraph;
  body_attr.g = body;
  Builder l;
  l.input("m", DType::kI64, {}).input("start", DType::kOptional, {});
  l.node("Loop", {"m", "", "start"}, {"acc"}, {body_attr});
  EXPECT_EQ(l.dtype("acc"), DType::kSequence);
}

TEST(ShapeInferenceTest, DeclaredShapesWinAndConflictsAreErrors) {
  Builder b;
  b.input("x", DType::kF32, {"batch", int64_t{4}}).node("Relu", {"x"}, {"y"}).node("Relu", {"y"}, {"z"});
  Value& y = b.g.value(b.id("y"));
  y.has_shape = true;
  y.shape = {Dim{-1, "my_batch"}, Dim{-1, ""}};
  EXPECT_EQ(b.shape("y"), "[my_batch,4]");
  EXPECT_EQ(b.shape("z"), "[batch,4]");

  Value& z = b.g.value(b.id("z"));
  z.shape = {Dim{-1, "batch"}, Dim{5, ""}};
  Status st = infer_shapes(b.g);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("'z'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("Relu1"), std::string::npos) << st.message();
}

TEST(ShapeInferenceTest, UnknownOpsLeaveOutputsUnknown) {
  Builder b;
  b.input("x", DType::kF32, {"batch", int64_t{4}}).node("NoSuchOp", {"x"}, {"y"}).node("Relu", {"y"}, {"z"});
  EXPECT_EQ(b.shape("y"), "?");
  EXPECT_EQ(b.shape("z"), "?");
  EXPECT_EQ(b.dtype("z"), DType::kUndefined);
}

TEST(ShapeInferenceTest, StringAndMlOps) {
  Attribute stopwords;
  stopwords.name = "stopwords";
  stopwords.type = AttrType::kStrings;
  stopwords.strings = {"monday"};
  Builder b(20);
  b.input("s", DType::kString, {"n", int64_t{3}})
      .input("row", DType::kString, {int64_t{1}, int64_t{5}})
      .input("ids", DType::kI64, {"b", int64_t{6}})
      .input("x", DType::kF32, {"b", int64_t{4}, int64_t{7}})
      .input("at", DType::kI64, {int64_t{1}, int64_t{2}})
      .node("StringSplit", {"s"}, {"parts", "counts"})
      .node("StringNormalizer", {"row"}, {"kept"}, {stopwords})
      .node("StringNormalizer", {"row"}, {"same"})
      .node("TfIdfVectorizer", {"ids"}, {"tf"}, {attr_string("mode", "TF"), attr_ints("ngram_indexes", {0, 4, 2})})
      .node("ArrayFeatureExtractor", {"x", "at"}, {"picked"});
  b.g.nodes.back().domain = "ai.onnx.ml";
  EXPECT_EQ(b.shape("parts"), "[n,3,?]");
  EXPECT_EQ(b.dtype("parts"), DType::kString);
  EXPECT_EQ(b.shape("counts"), "[n,3]");
  EXPECT_EQ(b.dtype("counts"), DType::kI64);
  EXPECT_EQ(b.shape("kept"), "[1,?]");
  EXPECT_EQ(b.shape("same"), "[1,5]");
  EXPECT_EQ(b.shape("tf"), "[b,5]");
  EXPECT_EQ(b.dtype("tf"), DType::kF32);
  EXPECT_EQ(b.shape("picked"), "[b,4,2]");
}

TEST(ShapeInferenceTest, AttentionBlockOps) {
  Builder b(28);
  b.input("q", DType::kF32, {"b", "s", int64_t{64}})
      .input("k", DType::kF32, {"b", "s", int64_t{32}})
      .input("v", DType::kF32, {"b", "s", int64_t{48}})
      .input("past_k", DType::kF32, {"b", int64_t{2}, "p", int64_t{16}})
      .input("past_v", DType::kF32, {"b", int64_t{2}, "p", int64_t{24}})
      .node("Attention", {"q", "k", "v", "", "past_k", "past_v"}, {"y", "pk", "pv", "qk"},
            {attr_int("q_num_heads", 4), attr_int("kv_num_heads", 2)})
      .input("x", DType::kF16, {"b", int64_t{8}, "l"})
      .input("w", DType::kF16, {int64_t{8}, int64_t{1}, int64_t{4}})
      .node("CausalConvWithState", {"x", "w"}, {"conv", "state"})
      .input("lq", DType::kF32, {"b", "t", int64_t{64}})
      .input("lv", DType::kF32, {"b", "t", int64_t{40}})
      .input("ls", DType::kF16, {"b", int64_t{2}, int64_t{16}, int64_t{20}})
      .node("LinearAttention", {"lq", "k", "lv", "ls"}, {"lo", "lstate"},
            {attr_int("q_num_heads", 4), attr_int("kv_num_heads", 2)});
  EXPECT_EQ(b.shape("y"), "[b,s,96]");
  EXPECT_EQ(b.shape("pk"), "[b,2,p+s,16]");
  EXPECT_EQ(b.shape("pv"), "[b,2,p+s,24]");
  EXPECT_EQ(b.shape("qk"), "[b,4,s,p+s]");
  EXPECT_EQ(b.shape("conv"), "[b,8,l]");
  EXPECT_EQ(b.shape("state"), "[b,8,3]");
  EXPECT_EQ(b.shape("lo"), "[b,t,80]");
  EXPECT_EQ(b.shape("lstate"), "[b,2,16,20]");
  EXPECT_EQ(b.dtype("lstate"), DType::kF16);
}

// Declared output shapes must come out of inference again when they are removed.
void expect_outputs_reinferred(const fs::path& model) {
  auto loaded = onnx::load_model(model.string());
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  Graph& g = *loaded->graph;
  std::vector<std::vector<Dim>> declared;
  for (ValueId id : g.outputs) {
    declared.push_back(g.value(id).shape);
    ASSERT_TRUE(g.value(id).has_shape) << model;
  }
  for (Value& v : g.values) {
    if (!v.is_graph_input && !v.constant) {
      v.has_shape = false;
      v.shape.clear();
    }
  }
  Status st = infer_shapes(g);
  ASSERT_TRUE(st.is_ok()) << model << ": " << st.to_string();
  for (const Value& v : g.values) EXPECT_TRUE(v.has_shape) << model << ": value '" << v.name << "' has no rank";
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const Value& v = g.value(g.outputs[i]);
    ASSERT_EQ(v.shape.size(), declared[i].size()) << model << ": " << v.name;
    for (size_t k = 0; k < v.shape.size(); ++k) {
      EXPECT_EQ(v.shape[k].value, declared[i][k].value) << model << ": " << v.name << " dim " << k;
    }
  }
}

TEST(ShapeInferenceModelTest, PytorchConvertedModelsReinferTheirOutputs) {
  const fs::path root = "/usr/share/libonnx-testdata/data/pytorch-converted";
  ASSERT_TRUE(fs::exists(root)) << "libonnx-testdata is required (scripts/setup.sh installs it)";
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(root)) {
    expect_outputs_reinferred(entry.path() / "model.onnx");
    ++checked;
  }
  EXPECT_GT(checked, 50);
}

// Every backend node test loads and infers without a false conflict against the
// shapes the test models declare.
TEST(ShapeInferenceModelTest, NodeTestsInferWithoutConflicts) {
  const fs::path root = "/usr/share/libonnx-testdata/data/node";
  ASSERT_TRUE(fs::exists(root)) << "libonnx-testdata is required (scripts/setup.sh installs it)";
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(root)) {
    auto loaded = onnx::load_model((entry.path() / "model.onnx").string());
    if (!loaded.is_ok()) continue;
    Status st = infer_shapes(*loaded->graph);
    EXPECT_TRUE(st.is_ok()) << entry.path().filename() << ": " << st.to_string();
    ++checked;
  }
  EXPECT_GT(checked, 800);
}

TEST(ShapeInferenceTest, ContribAttentionOps) {
  Builder b(17);
  b.input("q", DType::kF32, {"b", "s", int64_t{64}})
      .input("k", DType::kF32, {"b", "s", int64_t{32}})
      .input("v", DType::kF32, {"b", "s", int64_t{32}})
      .input("past_k", DType::kF32, {"b", int64_t{2}, int64_t{128}, int64_t{16}})
      .input("past_v", DType::kF32, {"b", int64_t{2}, int64_t{128}, int64_t{16}})
      .input("seqlens", DType::kI32, {"b"})
      .ints("total", {100}, true)
      .node("GroupQueryAttention", {"q", "k", "v", "past_k", "past_v", "seqlens", "total"}, {"gy", "gpk", "gpv"},
            {attr_int("num_heads", 4), attr_int("kv_num_heads", 2)});
  b.g.nodes.back().domain = "com.microsoft";
  // Packed QKV [b, s, (4 + 2 * 2) * 16], no past: present as long as total.
  b.input("qkv", DType::kF16, {"b", "s", int64_t{128}})
      .node("GroupQueryAttention", {"qkv", "", "", "", "", "seqlens", "total"}, {"py", "ppk", "ppv"},
            {attr_int("num_heads", 4), attr_int("kv_num_heads", 2)});
  b.g.nodes.back().domain = "com.microsoft";
  // MultiHeadAttention, BSD key/value with a past, and BNSH key/value.
  b.input("mk", DType::kF32, {"b", "l", int64_t{64}})
      .input("mv", DType::kF32, {"b", "l", int64_t{96}})
      .input("mpk", DType::kF32, {"b", int64_t{4}, "p", int64_t{16}})
      .input("mpv", DType::kF32, {"b", int64_t{4}, "p", int64_t{24}})
      .node("MultiHeadAttention", {"q", "mk", "mv", "", "", "", "mpk", "mpv"}, {"my", "mpk_out", "mpv_out"},
            {attr_int("num_heads", 4)});
  b.g.nodes.back().domain = "com.microsoft";
  b.input("k4", DType::kF32, {"b", int64_t{4}, "l", int64_t{16}})
      .node("MultiHeadAttention", {"q", "k4", "k4"}, {"m4y", "m4pk", "m4pv"}, {attr_int("num_heads", 4)});
  b.g.nodes.back().domain = "com.microsoft";
  // com.microsoft Attention: equal thirds of the weights, and qkv_hidden_sizes.
  b.input("x", DType::kF32, {"b", "s", int64_t{32}})
      .weight("w", {32, 96})
      .input("past", DType::kF32, {int64_t{2}, "b", int64_t{4}, "p", int64_t{8}})
      .node("Attention", {"x", "w", "", "", "past"}, {"ay", "apresent"}, {attr_int("num_heads", 4)});
  b.g.nodes.back().domain = "com.microsoft";
  b.weight("w2", {32, 128}).node("Attention", {"x", "w2"}, {"a2y", "a2present"},
                                 {attr_int("num_heads", 4), attr_ints("qkv_hidden_sizes", {32, 32, 64})});
  b.g.nodes.back().domain = "com.microsoft";
  EXPECT_EQ(b.shape("gy"), "[b,s,64]");
  EXPECT_EQ(b.shape("gpk"), "[b,2,128,16]");  // max(past 128, total 100)
  EXPECT_EQ(b.shape("gpv"), "[b,2,128,16]");
  EXPECT_EQ(b.shape("py"), "[b,s,64]");
  EXPECT_EQ(b.shape("ppk"), "[b,2,100,16]");
  EXPECT_EQ(b.dtype("ppv"), DType::kF16);
  EXPECT_EQ(b.shape("my"), "[b,s,96]");
  EXPECT_EQ(b.shape("mpk_out"), "[b,4,l+p,16]");
  EXPECT_EQ(b.shape("mpv_out"), "[b,4,l+p,24]");
  EXPECT_EQ(b.shape("m4y"), "[b,s,64]");
  EXPECT_EQ(b.shape("m4pk"), "[b,4,l,16]");
  EXPECT_EQ(b.shape("ay"), "[b,s,32]");
  EXPECT_EQ(b.shape("apresent"), "[2,b,4,p+s,8]");
  EXPECT_EQ(b.shape("a2y"), "[b,s,64]");
  EXPECT_EQ(b.shape("a2present"), "[2,b,4,s,8]");
}

TEST(ShapeInferenceTest, LossUniqueAndRandomOps) {
  Builder b(18);
  b.input("scores", DType::kF32, {"n", int64_t{5}, "d"})
      .input("labels", DType::kI64, {"n", "d"})
      .node("SoftmaxCrossEntropyLoss", {"scores", "labels"}, {"loss", "log_prob"})
      .node("NegativeLogLikelihoodLoss", {"scores", "labels"}, {"nll"}, {attr_string("reduction", "none")})
      .input("x", DType::kF32, {"n", int64_t{3}})
      .node("Unique", {"x"}, {"u", "ui", "uinv", "uc"})
      .node("Unique", {"x"}, {"ua", "uai", "uainv", "uac"}, {attr_int("axis", -1)})
      .node("RandomNormal", {}, {"rn"}, {attr_ints("shape", {2, 3}), attr_int("dtype", 11)});
  EXPECT_EQ(b.shape("loss"), "[]");
  EXPECT_EQ(b.shape("log_prob"), "[n,5,d]");
  EXPECT_EQ(b.shape("nll"), "[n,d]");
  EXPECT_EQ(b.shape("u"), "[?]");
  EXPECT_EQ(b.shape("uinv"), "[n*3]");
  EXPECT_EQ(b.dtype("uinv"), DType::kI64);
  EXPECT_EQ(b.shape("ua"), "[n,?]");
  EXPECT_EQ(b.shape("uainv"), "[3]");
  EXPECT_EQ(b.shape("rn"), "[2,3]");
  EXPECT_EQ(b.dtype("rn"), DType::kF64);
}

}  // namespace
}  // namespace ember::ir
