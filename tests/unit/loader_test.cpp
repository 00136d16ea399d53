// The ONNX loader: models are built in memory with a small protobuf writer of the
// test's own (independent of the loader's), plus Debian's backend test models.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <csignal>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "base/mapped_file.h"
#include "onnx/model_loader.h"
#include "runtime/session.h"

namespace ember::onnx {
namespace {

namespace fs = std::filesystem;

const fs::path kNodeTests = "/usr/share/libonnx-testdata/data/node";

// A protobuf message being written: fields are appended in call order.
class Msg {
 public:
  Msg& varint(uint32_t field, uint64_t v) {
    tag(field, 0);
    put(v);
    return *this;
  }
  Msg& bytes(uint32_t field, std::string_view s) {
    tag(field, 2);
    put(s.size());
    out += s;
    return *this;
  }
  Msg& msg(uint32_t field, const Msg& m) { return bytes(field, m.out); }
  Msg& fixed32(uint32_t field, float f) {
    tag(field, 5);
    char b[4];
    std::memcpy(b, &f, 4);
    out.append(b, 4);
    return *this;
  }
  std::string out;

 private:
  void tag(uint32_t field, uint32_t wire) { put((uint64_t{field} << 3) | wire); }
  void put(uint64_t v) {
    for (; v >= 0x80; v >>= 7) out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    out.push_back(static_cast<char>(v));
  }
};

template <typename T>
std::string raw_bytes(std::vector<T> v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

Msg tensor(const std::string& name, int dtype, std::vector<int64_t> dims) {
  Msg t;
  for (int64_t d : dims) t.varint(1, static_cast<uint64_t>(d));
  t.varint(2, static_cast<uint64_t>(dtype)).bytes(8, name);
  return t;
}
Msg raw_tensor(const std::string& name, int dtype, std::vector<int64_t> dims, const std::string& raw) {
  return tensor(name, dtype, std::move(dims)).bytes(9, raw);
}
Msg external_tensor(const std::string& name, std::vector<int64_t> dims, const std::string& location, int offset, int length) {
  auto entry = [](std::string_view k, std::string_view v) { return Msg().bytes(1, k).bytes(2, v); };
  Msg t = tensor(name, 1, std::move(dims));
  t.msg(13, entry("location", location)).msg(13, entry("offset", std::to_string(offset)));
  if (length >= 0) t.msg(13, entry("length", std::to_string(length)));
  return t.varint(14, 1);
}
Msg value_info(const std::string& name, int elem_type, std::vector<int64_t> dims) {
  Msg shape;
  for (int64_t d : dims) shape.msg(1, Msg().varint(1, static_cast<uint64_t>(d)));
  Msg tensor_type = Msg().varint(1, static_cast<uint64_t>(elem_type)).msg(2, shape);
  return Msg().bytes(1, name).msg(2, Msg().msg(1, tensor_type));
}
Msg node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out, std::vector<Msg> attrs = {},
         const std::string& domain = "") {
  Msg n;
  for (const auto& s : in) n.bytes(1, s);
  for (const auto& s : out) n.bytes(2, s);
  n.bytes(3, op + "_" + (out.empty() ? "" : out[0])).bytes(4, op);
  for (const Msg& a : attrs) n.msg(5, a);
  if (!domain.empty()) n.bytes(7, domain);
  return n;
}
Msg attr_int(const std::string& name, int64_t v) { return Msg().bytes(1, name).varint(20, 2).varint(3, static_cast<uint64_t>(v)); }
Msg attr_float(const std::string& name, float v) { return Msg().bytes(1, name).varint(20, 1).fixed32(2, v); }
Msg attr_graph(const std::string& name, const Msg& g) { return Msg().bytes(1, name).varint(20, 5).msg(6, g); }
Msg attr_ref(const std::string& name, const std::string& ref, int type) {
  return Msg().bytes(1, name).varint(20, static_cast<uint64_t>(type)).bytes(21, ref);
}
Msg opset(const std::string& domain, int version) { return Msg().bytes(1, domain).varint(2, static_cast<uint64_t>(version)); }
// Graph field order: nodes, name, initializers, inputs, outputs.
Msg graph(std::vector<Msg> nodes, std::vector<Msg> inputs, std::vector<Msg> outputs, std::vector<Msg> inits = {}) {
  Msg g;
  for (const Msg& n : nodes) g.msg(1, n);
  g.bytes(2, "g");
  for (const Msg& t : inits) g.msg(5, t);
  for (const Msg& i : inputs) g.msg(11, i);
  for (const Msg& o : outputs) g.msg(12, o);
  return g;
}
// The graph goes last, so that every prefix of a model misses something essential.
std::string model(const Msg& g, std::vector<Msg> functions = {}, int ir_version = 8, int opset_version = 17) {
  Msg m;
  m.varint(1, static_cast<uint64_t>(ir_version)).bytes(2, "loader_test").msg(8, opset("", opset_version));
  for (const Msg& f : functions) m.msg(25, f);
  return m.msg(7, g).out;
}

Result<LoadedModel> load(const std::string& bytes, const std::string& dir = "") {
  auto owned = std::make_shared<std::string>(bytes);
  std::span<const uint8_t> span(reinterpret_cast<const uint8_t*>(owned->data()), owned->size());
  return load_model_from_bytes(span, dir, owned);
}

std::string error_of(const Result<LoadedModel>& r) { return r ? std::string("(loaded)") : r.status().message(); }

std::vector<float> floats_of(const Tensor& t) { return {t.data_as<float>(), t.data_as<float>() + t.numel()}; }

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "ember_loader_XXXXXX").string();
    path = mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path); }
  void write(const std::string& name, const std::string& data) const {
    std::ofstream(path / name, std::ios::binary) << data;
  }
  fs::path path;
};

const Msg kX = value_info("x", 1, {2, 3});
const Msg kY = value_info("y", 1, {2, 3});

TEST(Loader, LoadsBackendAdd) {
  auto m = load_model((kNodeTests / "test_add/model.onnx").string());
  ASSERT_TRUE(m) << m.status().message();
  const ir::Graph& g = *m->graph;
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op_type, "Add");
  EXPECT_EQ(g.nodes[0].opset, 14);
  EXPECT_EQ(g.opsets.at(""), 14);
  ASSERT_EQ(g.inputs.size(), 2u);
  const ir::Value& out = g.value(g.outputs[0]);
  EXPECT_EQ(out.name, "sum");
  EXPECT_EQ(out.dtype, DType::kF32);
  ASSERT_EQ(out.shape.size(), 3u);
  EXPECT_EQ(out.shape[2].value, 5);
}

TEST(Loader, LoadsBackendIfWithConstantBranches) {
  auto m = load_model((kNodeTests / "test_if/model.onnx").string());
  ASSERT_TRUE(m) << m.status().message();
  const ir::Node& n = m->graph->nodes.at(0);
  ir::AttrReader attrs(n);
  std::shared_ptr<ir::Graph> then_branch = attrs.get_graph("then_branch");
  ASSERT_TRUE(then_branch);
  EXPECT_TRUE(then_branch->nodes.empty());  // the Constant node became a constant
  const ir::Value& out = then_branch->value(then_branch->outputs[0]);
  ASSERT_TRUE(out.constant);
  EXPECT_EQ(out.constant->numel(), 5);
}

TEST(Loader, EveryBackendModelLoadsOrIsReportedUnsupported) {
  int loaded = 0;
  for (const auto& entry : fs::directory_iterator(kNodeTests)) {
    auto m = load_model((entry.path() / "model.onnx").string());
    if (m) {
      ++loaded;
    } else {
      EXPECT_EQ(m.status().code(), StatusCode::kNotImplemented) << entry.path() << ": " << m.status().message();
    }
  }
  EXPECT_GT(loaded, 850);
}

TEST(Loader, ReadsBackendTensorProto) {
  auto t = read_tensor_proto_file((kNodeTests / "test_add/test_data_set_0/input_0.pb").string());
  ASSERT_TRUE(t) << t.status().message();
  EXPECT_EQ(t->name, "x");
  EXPECT_EQ(t->tensor.describe(), "float32[3,4,5]");
  EXPECT_FLOAT_EQ(t->tensor.data_as<float>()[0], 1.7640524f);
}

TEST(Loader, RawDataIsViewedInPlaceWhenAlignedAndCopiedOtherwise) {
  std::vector<Msg> inits;
  std::vector<Msg> nodes;
  for (int pad = 0; pad < 4; ++pad) {
    std::string name = "w" + std::string(static_cast<size_t>(pad), '_');
    inits.push_back(raw_tensor(name, 1, {2, 3}, raw_bytes<float>({1, 2, 3, 4, 5, 6})));
    nodes.push_back(node("Add", {"x", name}, {"o" + std::to_string(pad)}));
  }
  auto owned = std::make_shared<std::string>(model(graph(nodes, {kX}, {value_info("o0", 1, {})}, inits)));
  auto* begin = reinterpret_cast<const uint8_t*>(owned->data());
  auto m = load_model_from_bytes({begin, owned->size()}, "", owned);
  ASSERT_TRUE(m) << m.status().message();
  int in_place = 0;
  for (int pad = 0; pad < 4; ++pad) {
    const ir::Value& v = m->graph->value(m->graph->find_value("w" + std::string(static_cast<size_t>(pad), '_')));
    ASSERT_TRUE(v.constant);
    auto* p = static_cast<const uint8_t*>(v.constant->data());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % alignof(float), 0u);
    in_place += p >= begin && p < begin + owned->size();
    EXPECT_EQ(floats_of(*v.constant), (std::vector<float>{1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(v.dtype, DType::kF32);
  }
  EXPECT_GE(in_place, 1);
  EXPECT_LE(in_place, 3);
}

TEST(Loader, DecodesTypedDataFields) {
  Msg f32 = tensor("f32", 1, {2});
  f32.bytes(4, raw_bytes<float>({1.5f, -2}));  // packed
  Msg f16 = tensor("f16", 10, {2}).varint(5, 0x3c00).varint(5, 0xc000);  // unpacked int32_data
  Msg i8 = tensor("i8", 3, {2}).varint(5, static_cast<uint64_t>(-3)).varint(5, 7);
  Msg b = tensor("b", 9, {3}).bytes(5, std::string("\x01\x00\x01", 3));
  Msg i64 = tensor("i64", 7, {2}).varint(7, static_cast<uint64_t>(-5)).varint(7, 1ull << 40);
  Msg f64 = tensor("f64", 11, {1}).bytes(10, raw_bytes<double>({0.25}));
  Msg u32 = tensor("u32", 12, {1}).varint(11, 4000000000u);
  auto m = load(model(graph({}, {}, {value_info("f32", 1, {})}, {f32, f16, i8, b, i64, f64, u32})));
  ASSERT_TRUE(m) << m.status().message();
  auto c = [&](const char* name) -> const Tensor& { return *m->graph->value(m->graph->find_value(name)).constant; };
  EXPECT_EQ(floats_of(c("f32")), (std::vector<float>{1.5f, -2}));
  EXPECT_EQ(float(c("f16").data_as<Float16>()[1]), -2.0f);
  EXPECT_EQ(c("i8").data_as<int8_t>()[0], -3);
  EXPECT_EQ(c("b").describe(), "bool[3]");
  EXPECT_TRUE(c("b").data_as<bool>()[2]);
  EXPECT_FALSE(c("b").data_as<bool>()[1]);
  EXPECT_EQ(c("i64").data_as<int64_t>()[0], -5);
  EXPECT_EQ(c("i64").data_as<int64_t>()[1], int64_t{1} << 40);
  EXPECT_EQ(c("f64").data_as<double>()[0], 0.25);
  EXPECT_EQ(c("u32").data_as<uint32_t>()[0], 4000000000u);
}

TEST(Loader, ExternalDataWithOffsetAndLengthSharesOneMapping) {
  TempDir dir;
  std::string data(16, 'x');
  data += raw_bytes<float>({1, 2, 3, 4, 5, 6}) + raw_bytes<float>({7, 8, 9, 10, 11, 12});
  dir.write("weights.bin", data);
  Msg a = external_tensor("a", {2, 3}, "weights.bin", 16, 24);
  Msg b = external_tensor("b", {2, 3}, "weights.bin", 40, -1);
  dir.write("model.onnx", model(graph({node("Add", {"a", "b"}, {"y"})}, {}, {kY}, {a, b})));
  auto m = load_model((dir.path / "model.onnx").string());
  ASSERT_TRUE(m) << m.status().message();
  const Tensor& ta = *m->graph->value(m->graph->find_value("a")).constant;
  const Tensor& tb = *m->graph->value(m->graph->find_value("b")).constant;
  EXPECT_EQ(floats_of(ta), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(floats_of(tb), (std::vector<float>{7, 8, 9, 10, 11, 12}));
  EXPECT_EQ(static_cast<const char*>(tb.data()) - static_cast<const char*>(ta.data()), 24);  // same mapping, no copy
}

TEST(Loader, ExternalDataErrors) {
  TempDir dir;
  fs::create_directory(dir.path / "m");
  dir.write("outside.bin", raw_bytes<float>({1, 2, 3, 4, 5, 6}));
  dir.write("m/short.bin", raw_bytes<float>({1, 2, 3}));
  fs::create_symlink(dir.path / "outside.bin", dir.path / "m/link.bin");
  auto try_load = [&](const std::string& location, int offset, int length) {
    Msg w = external_tensor("w", {2, 3}, location, offset, length);
    return load(model(graph({node("Add", {"w", "w"}, {"y"})}, {}, {kY}, {w})), (dir.path / "m").string());
  };
  EXPECT_NE(error_of(try_load("../outside.bin", 0, 24)).find("outside the model's folder"), std::string::npos);
  EXPECT_NE(error_of(try_load("link.bin", 0, 24)).find("outside the model's folder"), std::string::npos);
  EXPECT_NE(error_of(try_load("/etc/passwd", 0, 24)).find("relative"), std::string::npos);
  EXPECT_NE(error_of(try_load("missing.bin", 0, 24)).find("cannot open"), std::string::npos);
  std::string short_error = error_of(try_load("short.bin", 0, 24));
  EXPECT_NE(short_error.find("lie outside 'short.bin'"), std::string::npos) << short_error;
  EXPECT_NE(short_error.find("'w'"), std::string::npos) << short_error;
  EXPECT_NE(error_of(try_load("short.bin", 0, 12)).find("needs 24 bytes"), std::string::npos);
}

// Two call sites of a model-local function whose body uses an attribute
// reference with a default, a Constant bound to an attribute, and its own opset.
TEST(Loader, InlinesModelLocalFunctions) {
  Msg fn;
  fn.bytes(1, "Scale").bytes(4, "X").bytes(5, "Y").bytes(6, "alpha");
  fn.msg(7, node("Constant", {}, {"A"}, {attr_ref("value_float", "alpha", 1)}));
  fn.msg(7, node("Mul", {"X", "A"}, {"T"}));
  fn.msg(7, node("Softmax", {"T"}, {"Y"}, {attr_ref("axis", "axis", 2)}));
  fn.msg(9, opset("", 13)).bytes(10, "local").msg(11, attr_int("axis", -1));
  Msg call1 = node("Scale", {"x"}, {"h"}, {attr_float("alpha", 2)}, "local");
  Msg call2 = node("Scale", {"h"}, {"y"}, {attr_float("alpha", 3), attr_int("axis", 0)}, "local");
  auto m = load(model(graph({call1, call2}, {kX}, {kY}), {fn}));
  ASSERT_TRUE(m) << m.status().message();
  const ir::Graph& g = *m->graph;
  ASSERT_EQ(g.nodes.size(), 4u);
  EXPECT_EQ(g.nodes[0].op_type, "Mul");
  EXPECT_EQ(g.nodes[0].opset, 13);
  EXPECT_EQ(g.value(g.nodes[0].inputs[0]).name, "x");
  const ir::Value& alpha1 = g.value(g.nodes[0].inputs[1]);
  const ir::Value& alpha2 = g.value(g.nodes[2].inputs[1]);
  EXPECT_NE(alpha1.name, alpha2.name);
  EXPECT_EQ(*alpha1.constant->data_as<float>(), 2.0f);
  EXPECT_EQ(*alpha2.constant->data_as<float>(), 3.0f);
  EXPECT_EQ(g.value(g.nodes[1].outputs[0]).name, "h");
  EXPECT_EQ(g.value(g.nodes[2].inputs[0]).name, "h");
  EXPECT_EQ(ir::AttrReader(g.nodes[1]).get_int("axis", 5), -1);  // the default
  EXPECT_EQ(ir::AttrReader(g.nodes[3]).get_int("axis", 5), 0);
}

TEST(Loader, RecursiveFunctionIsRejected) {
  Msg fn;
  fn.bytes(1, "F").bytes(4, "X").bytes(5, "Y").msg(7, node("F", {"X"}, {"Y"}, {}, "local")).bytes(10, "local");
  auto m = load(model(graph({node("F", {"x"}, {"y"}, {}, "local")}, {kX}, {kY}), {fn}));
  EXPECT_NE(error_of(m).find("nest deeper"), std::string::npos) << error_of(m);
}

TEST(Loader, SubgraphOuterReferencesPropagateUpward) {
  Msg inner = graph({node("Add", {"b", "b"}, {"r2"})}, {}, {value_info("r2", 1, {})});
  Msg inner_if = node("If", {"cond"}, {"r"}, {attr_graph("then_branch", inner), attr_graph("else_branch", inner)});
  Msg then_g = graph({node("Identity", {"a"}, {"r"})}, {}, {value_info("r", 1, {})});
  Msg else_g = graph({inner_if}, {}, {value_info("r", 1, {})});
  Msg top_if = node("If", {"cond"}, {"y"}, {attr_graph("then_branch", then_g), attr_graph("else_branch", else_g)});
  auto m = load(model(graph({top_if}, {value_info("cond", 9, {}), value_info("a", 1, {}), value_info("b", 1, {})},
                            {value_info("y", 1, {})})));
  ASSERT_TRUE(m) << m.status().message();
  const ir::Graph& g = *m->graph;
  const ir::Node& n = g.nodes.at(0);
  EXPECT_EQ(n.num_explicit_inputs, 1u);
  std::vector<std::string> names;
  for (ir::ValueId id : n.inputs) names.push_back(g.value(id).name);
  // Every outer reference of the branches is listed after the explicit inputs, even
  // one ("cond", read by the inner If) that is also an explicit input.
  EXPECT_EQ(names, (std::vector<std::string>{"cond", "a", "cond", "b"}));
  std::shared_ptr<ir::Graph> else_branch = ir::AttrReader(n).get_graph("else_branch");
  ASSERT_EQ(else_branch->outer_refs.size(), 2u);  // "cond" of the inner If, and "b"
  EXPECT_TRUE(else_branch->value(else_branch->find_value("b")).is_outer_scope);
  EXPECT_EQ(else_branch->nodes[0].num_explicit_inputs, 1u);
}

TEST(Loader, InputWithInitializerIsAnOverridableInput) {
  Msg w = raw_tensor("x", 1, {2, 3}, raw_bytes<float>({1, 2, 3, 4, 5, 6}));
  auto m = load(model(graph({node("Relu", {"x"}, {"y"})}, {kX}, {kY}, {w})));
  ASSERT_TRUE(m) << m.status().message();
  const ir::Value& x = m->graph->value(m->graph->inputs.at(0));
  EXPECT_TRUE(x.is_graph_input);
  EXPECT_TRUE(x.constant);
}

TEST(Loader, GraphErrorsNameTheCulprit) {
  auto unknown = load(model(graph({node("Relu", {"nope"}, {"y"})}, {kX}, {kY})));
  EXPECT_NE(error_of(unknown).find("'nope'"), std::string::npos) << error_of(unknown);
  auto cycle = load(model(graph({node("Add", {"x", "b"}, {"a"}), node("Relu", {"a"}, {"b"})}, {kX}, {value_info("a", 1, {})})));
  EXPECT_NE(error_of(cycle).find("cycle"), std::string::npos) << error_of(cycle);
  auto domain = load(model(graph({node("Foo", {"x"}, {"y"}, {}, "com.example")}, {kX}, {kY})));
  EXPECT_NE(error_of(domain).find("com.example"), std::string::npos) << error_of(domain);
  auto old_ir = load(model(graph({}, {kX}, {kX}), {}, 2));
  EXPECT_NE(error_of(old_ir).find("IR version 2"), std::string::npos) << error_of(old_ir);
  EXPECT_TRUE(load(model(graph({}, {kX}, {kX}), {}, 14))) << "IR 14: ONNX 1.23's helper.make_model";
  auto new_ir = load(model(graph({}, {kX}, {kX}), {}, 15));
  EXPECT_NE(error_of(new_ir).find("IR version 15"), std::string::npos) << error_of(new_ir);
  auto complex_init = load(model(graph({}, {}, {kY}, {tensor("s", 14, {1}).bytes(9, std::string(8, '\0'))})));
  EXPECT_EQ(complex_init.status().code(), StatusCode::kNotImplemented);
  EXPECT_NE(error_of(complex_init).find("'s'"), std::string::npos) << error_of(complex_init);
  EXPECT_NE(error_of(complex_init).find("COMPLEX64"), std::string::npos) << error_of(complex_init);
}

TEST(Loader, WireErrorsNameTheField) {
  Msg bad_node = Msg().varint(1, 7);  // GraphProto.node must be length-delimited
  auto wire = load(model(bad_node));
  EXPECT_NE(error_of(wire).find("while reading ModelProto.graph"), std::string::npos) << error_of(wire);
  EXPECT_NE(error_of(wire).find("wire type"), std::string::npos) << error_of(wire);
  // GraphProto.node[0] claims 16383 bytes, which the file does not have.
  Msg lying;
  lying.out = Msg().bytes(2, "g").out + std::string("\x0a\xff\x7f", 3);
  std::string past_end = error_of(load(model(lying)));
  EXPECT_NE(past_end.find("while reading ModelProto.graph: length 16383 of field 1 runs past the end"), std::string::npos)
      << past_end;
  std::string bad_varint = model(Msg()) + std::string(11, '\xff');
  EXPECT_NE(error_of(load(bad_varint)).find("longer than 64 bits"), std::string::npos) << error_of(load(bad_varint));
}

TEST(Loader, RanksPastTheBoundAreErrors) {
  const std::vector<int64_t> at_bound(kMaxRank, 1), past(kMaxRank + 1, 1);
  EXPECT_TRUE(load(model(graph({}, {value_info("x", 1, at_bound)}, {value_info("x", 1, at_bound)}))));
  std::string declared = error_of(load(model(graph({}, {value_info("x", 1, past)}, {kY}))));
  EXPECT_NE(declared.find("more than the 64 dims a tensor may have"), std::string::npos) << declared;
  EXPECT_NE(declared.find("ModelProto.graph.input[0].type.tensor_type.shape"), std::string::npos) << declared;
  auto tensor_of = [](std::vector<int64_t> dims) { return raw_tensor("w", 1, std::move(dims), raw_bytes<float>({1})); };
  EXPECT_TRUE(load(model(graph({}, {}, {value_info("w", 1, at_bound)}, {tensor_of(at_bound)}))));
  std::string initializer = error_of(load(model(graph({}, {}, {kY}, {tensor_of(past)}))));
  EXPECT_NE(initializer.find("has 65 dims, past the 64 a tensor may have"), std::string::npos) << initializer;
}

std::string rich_model() {
  Msg fn;
  fn.bytes(1, "Twice").bytes(4, "X").bytes(5, "Y").msg(7, node("Add", {"X", "X"}, {"Y"})).msg(9, opset("", 17)).bytes(10, "local");
  Msg branch = graph({node("Mul", {"x", "w"}, {"r"})}, {}, {value_info("r", 1, {})});
  Msg w = raw_tensor("w", 1, {2, 3}, raw_bytes<float>({1, 2, 3, 4, 5, 6}));
  Msg nodes_if = node("If", {"c"}, {"t"}, {attr_graph("then_branch", branch), attr_graph("else_branch", branch)});
  return model(graph({nodes_if, node("Twice", {"t"}, {"y"}, {attr_int("unused", 1)}, "local")},
                     {kX, value_info("c", 9, {})}, {kY}, {w}),
               {fn});
}

TEST(Loader, RichModelLoads) {
  auto m = load(rich_model());
  ASSERT_TRUE(m) << m.status().message();
  EXPECT_EQ(m->graph->nodes.size(), 2u);
  EXPECT_EQ(m->metadata.producer_name, "loader_test");
}

TEST(Loader, ModelMetadata) {
  auto entry = [](std::string_view k, std::string_view v) { return Msg().bytes(1, k).bytes(2, v); };
  Msg g = graph({node("Relu", {"x"}, {"y"})}, {kX}, {kY}).bytes(10, "graph doc");
  Msg m;
  m.varint(1, 8).bytes(2, "exporter").bytes(3, "1.2").bytes(4, "ai.example").varint(5, 7).bytes(6, "model doc");
  m.msg(14, entry("author", "me")).msg(14, entry("license", "MIT")).msg(8, opset("", 17)).msg(7, g);
  auto loaded = load(m.out);
  ASSERT_TRUE(loaded) << loaded.status().message();
  const ModelMetadata& md = loaded->metadata;
  EXPECT_EQ(md.ir_version, 8);
  EXPECT_EQ(md.producer_name, "exporter");
  EXPECT_EQ(md.producer_version, "1.2");
  EXPECT_EQ(md.domain, "ai.example");
  EXPECT_EQ(md.model_version, 7);
  EXPECT_EQ(md.doc_string, "model doc");
  EXPECT_EQ(md.graph_name, "g");
  EXPECT_EQ(md.graph_doc_string, "graph doc");
  const std::vector<std::pair<std::string, std::string>> props = {{"author", "me"}, {"license", "MIT"}};
  EXPECT_EQ(md.metadata_props, props);
}

TEST(Loader, EveryTruncationIsRejectedWithoutCrashing) {
  std::string bytes = rich_model();
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto m = load(bytes.substr(0, n));
    EXPECT_FALSE(m) << "prefix of " << n << " bytes loaded";
  }
}

TEST(Loader, CorruptedBytesNeverCrash) {
  std::string bytes = rich_model();
  std::mt19937 rng(7);
  for (int i = 0; i < 3000; ++i) {
    std::string copy = bytes;
    for (int k = 0; k < 3; ++k) copy[rng() % copy.size()] = static_cast<char>(rng());
    (void)load(copy);
  }
}

TEST(Loader, WrongAttributeTypeIsCaughtByAttrReader) {
  auto m = load(model(graph({node("Softmax", {"x"}, {"y"}, {attr_float("axis", 1)})}, {kX}, {kY})));
  ASSERT_TRUE(m) << m.status().message();
  ir::AttrReader attrs(m->graph->nodes[0]);
  EXPECT_EQ(attrs.get_int("axis", -1), -1);
  ASSERT_FALSE(attrs.status());
  EXPECT_NE(attrs.status().message().find("must be of type int, got float"), std::string::npos);
}

TEST(TensorProto, SerializeRoundTrips) {
  Tensor t = Tensor::allocate(DType::kI64, {2, 2});
  for (int i = 0; i < 4; ++i) t.data_as<int64_t>()[i] = i * 1000 - 1;
  std::string bytes = serialize_tensor_proto(t, "out");
  auto back = parse_tensor_proto({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(back->name, "out");
  EXPECT_EQ(back->tensor.describe(), "int64[2,2]");
  EXPECT_EQ(back->tensor.data_as<int64_t>()[3], 2999);
}

TEST(TensorProto, PythonOnnxReadsWhatWeWrite) {
  ASSERT_EQ(std::system("python3 -c 'import onnx' 2>/dev/null"), 0) << "python3 with onnx is required (scripts/setup.sh installs it)";
  TempDir dir;
  Tensor t = Tensor::allocate(DType::kF16, {3});
  t.data_as<Float16>()[1] = Float16(-1.5f);
  dir.write("t.pb", serialize_tensor_proto(t, "half"));
  std::string cmd = "python3 -c \"import onnx,sys; from onnx import numpy_helper as h; p=onnx.load_tensor('" +
                    (dir.path / "t.pb").string() +
                    "'); a=h.to_array(p); sys.exit(0 if p.name=='half' and a.dtype.name=='float16' and a.tolist()==[0,-1.5,0] else 1)\"";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
}

TEST(Npy, WriteThenReadRoundTrips) {
  TempDir dir;
  Tensor t = Tensor::allocate(DType::kI32, {2, 1, 3});
  for (int i = 0; i < 6; ++i) t.data_as<int32_t>()[i] = -i;
  std::string path = (dir.path / "a.npy").string();
  ASSERT_TRUE(write_npy_file(path, t));
  auto back = read_npy_file(path);
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(back->describe(), "int32[2,1,3]");
  EXPECT_EQ(back->data_as<int32_t>()[5], -5);
  EXPECT_EQ(fs::file_size(path) % 64, 24u % 64);  // 64-byte header + 24 bytes of data
}

std::string npy_v2(const std::string& dict, const std::string& data) {
  std::string header = dict + "\n";
  std::string out = std::string("\x93NUMPY\x02\x00", 8);
  uint32_t len = static_cast<uint32_t>(header.size());
  out.append(reinterpret_cast<const char*>(&len), 4);
  return out + header + data;
}

TEST(Npy, ReadsVersion2AndRejectsWhatItCannotHold) {
  TempDir dir;
  dir.write("v2.npy", npy_v2("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", raw_bytes<float>({1, 2})));
  dir.write("scalar.npy", npy_v2("{'descr': '|b1', 'fortran_order': False, 'shape': (), }", std::string(1, '\1')));
  dir.write("fortran.npy", npy_v2("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", raw_bytes<float>({1, 2})));
  dir.write("big.npy", npy_v2("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", raw_bytes<float>({1, 2})));
  dir.write("short.npy", npy_v2("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", raw_bytes<float>({1, 2})));
  auto v2 = read_npy_file((dir.path / "v2.npy").string());
  ASSERT_TRUE(v2) << v2.status().message();
  EXPECT_EQ(floats_of(*v2), (std::vector<float>{1, 2}));
  auto scalar = read_npy_file((dir.path / "scalar.npy").string());
  ASSERT_TRUE(scalar) << scalar.status().message();
  EXPECT_EQ(scalar->describe(), "bool[]");
  EXPECT_FALSE(read_npy_file((dir.path / "fortran.npy").string()));
  EXPECT_FALSE(read_npy_file((dir.path / "big.npy").string()));
  EXPECT_FALSE(read_npy_file((dir.path / "short.npy").string()));
  EXPECT_FALSE(write_npy_file((dir.path / "bf.npy").string(), Tensor::allocate(DType::kBF16, {1})));
  std::string ones = "(";
  for (size_t i = 0; i < kMaxRank; ++i) ones += "1,";
  dir.write("at_bound.npy", npy_v2("{'descr': '<f4', 'fortran_order': False, 'shape': " + ones + "), }", raw_bytes<float>({1})));
  dir.write("past.npy", npy_v2("{'descr': '<f4', 'fortran_order': False, 'shape': " + ones + "1,), }", raw_bytes<float>({1})));
  auto at_bound = read_npy_file((dir.path / "at_bound.npy").string());
  ASSERT_TRUE(at_bound) << at_bound.status().message();
  EXPECT_EQ(at_bound->rank(), 64);
  auto past = read_npy_file((dir.path / "past.npy").string());
  ASSERT_FALSE(past);
  EXPECT_NE(past.status().message().find("more than the 64 dims"), std::string::npos) << past.status().message();
}


// Resident pages of this process (file-backed ones included), from /proc/self/statm.
size_t resident_pages() {
  std::ifstream statm("/proc/self/statm");
  size_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident;
}

// Pages of a mapped file leave this process's resident memory and read back
// unchanged from the file; memory that is not a live map is left alone.
TEST(MappedFileTest, ReleasedPagesLeaveResidentMemoryAndReadBack) {
  TempDir dir;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t pages = 4096;
  std::string data(pages * page, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 131 % 251);
  dir.write("weights.bin", data);
  auto file = MappedFile::open((dir.path / "weights.bin").string());
  ASSERT_TRUE(file.is_ok()) << file.status().to_string();
  const uint8_t* bytes = (*file)->bytes().data();
  const size_t before_touch = resident_pages();
  uint64_t sum = 0;
  for (size_t i = 0; i < data.size(); i += page) sum += bytes[i];  // fault every page in
  ASSERT_GT(sum, 0u);
  const size_t touched = resident_pages();
  EXPECT_GE(touched, before_touch + pages * 9 / 10);
  // A range starting mid-page: only the whole pages inside it go.
  EXPECT_EQ(release_mapped_pages(bytes + page / 2, (pages - 1) * page), (pages - 2) * page);
  EXPECT_LE(resident_pages(), touched - pages * 9 / 10);
  EXPECT_EQ(std::memcmp(bytes, data.data(), data.size()), 0);
  // Heap memory, and a range running past the map, are not released.
  std::vector<uint8_t> heap(data.begin(), data.begin() + 16 * page);
  EXPECT_EQ(release_mapped_pages(heap.data(), heap.size()), 0u);
  EXPECT_EQ(std::memcmp(heap.data(), data.data(), heap.size()), 0);
  EXPECT_EQ(release_mapped_pages(bytes, data.size() + page), 0u);
}

// Files truncated underneath a map (mapped_file.h): the lost pages read as
// zeros, the map says so, and a session of weights in the file fails its runs
// with the file's name instead of dying of SIGBUS.
TEST(MappedFile, PagesLostToTruncationReadAsZerosAndAreReported) {
  TempDir dir;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  dir.write("data.bin", std::string(3 * page, '\x7f'));
  const std::string path = (dir.path / "data.bin").string();
  auto file = MappedFile::open(path);
  ASSERT_TRUE(file) << file.status().message();
  const volatile uint8_t* bytes = (*file)->bytes().data();
  EXPECT_EQ(bytes[2 * page + 5], 0x7f);
  EXPECT_TRUE((*file)->check().is_ok());
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(page)), 0);
  EXPECT_EQ(bytes[page - 1], 0x7f) << "a page the file still has";
  EXPECT_EQ(bytes[2 * page + 5], 0) << "a lost page reads as zeros";
  EXPECT_TRUE((*file)->faulted());
  const std::string message = (*file)->check().message();
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;
  EXPECT_NE(message.find("offset " + std::to_string(2 * page)), std::string::npos) << message;
}

TEST(MappedFileDeathTest, SigbusOutsideEmberMapsStillKills) {
  TempDir dir;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  dir.write("data.bin", std::string(2 * page, 'x'));
  const std::string path = (dir.path / "data.bin").string();
  auto ember_map = MappedFile::open(path);  // installs Ember's handler
  ASSERT_TRUE(ember_map);
  EXPECT_EXIT(
      {
        int fd = ::open(path.c_str(), O_RDONLY);
        void* p = ::mmap(nullptr, 2 * page, PROT_READ, MAP_PRIVATE, fd, 0);
        if (::ftruncate(::open(path.c_str(), O_RDWR), 0) != 0) std::exit(12);
        std::exit(static_cast<const volatile char*>(p)[page] == 'x' ? 10 : 11);
      },
      ::testing::KilledBySignal(SIGBUS), "");
}

// A session over a Gather whose table (4096 x 16 floats) is external data, read
// in place at every run.
class TruncatedWeights : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<float> table(kRows * kCols);
    for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<float>(i % 1000) + 0.5f;
    dir.write("emb.bin", raw_bytes(table));
    Msg emb = external_tensor("emb", {kRows, kCols}, "emb.bin", 0, -1);
    dir.write("model.onnx", model(graph({node("Gather", {"emb", "ids"}, {"y"})}, {value_info("ids", 7, {2})},
                                        {value_info("y", 1, {2, kCols})}, {emb})));
    auto s = runtime::Session::load((dir.path / "model.onnx").string());
    ASSERT_TRUE(s) << s.status().message();
    session = std::move(s).value();
  }
  Result<std::vector<Tensor>> run() {
    Tensor ids = Tensor::allocate(DType::kI64, {2});
    ids.data_as<int64_t>()[0] = 3;
    ids.data_as<int64_t>()[1] = kRows - 1;
    runtime::NamedInput in[] = {{"ids", &ids}};
    return session->run(in);
  }
  static constexpr int64_t kRows = 4096, kCols = 16;
  TempDir dir;
  std::unique_ptr<runtime::Session> session;
};

TEST_F(TruncatedWeights, RunsFailNamingTheFile) {
  auto before = run();
  ASSERT_TRUE(before) << before.status().message();
  EXPECT_EQ((*before)[0].data_as<float>()[kCols], static_cast<float>((kRows - 1) * kCols % 1000) + 0.5f);
  ASSERT_EQ(::truncate((dir.path / "emb.bin").c_str(), 0), 0);
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto after = run();
    ASSERT_FALSE(after) << "run " << attempt << " read a truncated weights file without an error";
    EXPECT_NE(after.status().message().find("emb.bin' was truncated"), std::string::npos) << after.status().message();
  }
}

TEST_F(TruncatedWeights, AFileReplacedByRenameKeepsTheMappedContents) {
  auto before = run();
  ASSERT_TRUE(before) << before.status().message();
  dir.write("new.bin", std::string(16, 'z'));
  fs::rename(dir.path / "new.bin", dir.path / "emb.bin");
  auto after = run();
  ASSERT_TRUE(after) << after.status().message();
  EXPECT_EQ(floats_of((*after)[0]), floats_of((*before)[0]));
}

}  // namespace
}  // namespace ember::onnx
