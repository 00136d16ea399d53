#pragma once
// Builds ir::Graphs directly in tests (no file round trip).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/session.h"

namespace ember::test {

class GraphBuilder {
 public:
  explicit GraphBuilder(int opset = 17) : g_(std::make_shared<ir::Graph>()) { g_->opsets[""] = opset; }

  // dims: >= 0 known, -1 symbolic (named "d<i>").
  GraphBuilder& input(const std::string& name, DType dtype, std::vector<int64_t> dims) {
    ir::ValueId id = value(name);
    ir::Value& v = g_->value(id);
    v.dtype = dtype;
    v.is_graph_input = true;
    v.has_shape = true;
    for (size_t i = 0; i < dims.size(); ++i) {
      v.shape.push_back(dims[i] >= 0 ? ir::Dim{dims[i], ""} : ir::Dim{-1, "d" + std::to_string(i)});
    }
    g_->inputs.push_back(id);
    return *this;
  }
  GraphBuilder& constant(const std::string& name, Tensor t) {
    ir::Value& v = g_->value(value(name));
    v.dtype = t.dtype();
    v.constant = std::move(t);
    return *this;
  }
  GraphBuilder& node(const std::string& op, std::vector<std::string> inputs, std::vector<std::string> outputs,
                     std::vector<ir::Attribute> attrs = {}) {
    ir::Node n;
    n.name = op + "_" + std::to_string(g_->nodes.size());
    n.op_type = op;
    n.opset = g_->opsets[""];
    for (const auto& in : inputs) n.inputs.push_back(in.empty() ? ir::kNoValue : value(in));
    for (const auto& out : outputs) n.outputs.push_back(out.empty() ? ir::kNoValue : value(out));
    n.num_explicit_inputs = n.inputs.size();
    n.attributes = std::move(attrs);
    g_->nodes.push_back(std::move(n));
    return *this;
  }
  GraphBuilder& output(const std::string& name) {
    g_->outputs.push_back(value(name));
    g_->value(g_->outputs.back()).is_graph_output = true;
    return *this;
  }
  // Sorts and checks the graph; the test fails on an error.
  std::shared_ptr<ir::Graph> build() {
    Status st = g_->topological_sort();
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    return g_;
  }
  std::shared_ptr<ir::Graph> raw() { return g_; }

 private:
  ir::ValueId value(const std::string& name) {
    ir::ValueId id = g_->find_value(name);
    return id == ir::kNoValue ? g_->add_value(name) : id;
  }
  std::shared_ptr<ir::Graph> g_;
};

// A session of `g` (the test fails if it cannot be created), with or without
// the optimizer, for comparing a graph's optimized and plain runs.
inline std::unique_ptr<runtime::Session> make_session(std::shared_ptr<ir::Graph> g, bool optimize) {
  runtime::SessionOptions options;
  options.optimize = optimize;
  auto s = runtime::Session::create(std::move(g), options);
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  return s.is_ok() ? std::move(s).value() : nullptr;
}

// The op types of the session's graph after optimization, in order.
inline std::vector<std::string> op_types(const runtime::Session& s) {
  std::vector<std::string> ops;
  for (const ir::Node& n : s.graph().nodes) ops.push_back(n.op_type);
  return ops;
}

}  // namespace ember::test
