#include <fmt/format.h>

#include <map>

#include "commands.h"
#include "ir/shape_inference.h"
#include "kernels/elementwise/fused_elementwise.h"
#include "kernels/matmul/fused_matmul.h"
#include "kernels/registry.h"
#include "onnx/model_loader.h"
#include "runtime/session.h"

namespace ember::cli {
namespace {

std::string describe_shape(const ir::Value& v) { return v.has_shape ? ir::dims_to_string(v.shape) : "?"; }

void count_ops(const ir::Graph& g, std::map<std::string, std::pair<int, bool>>& ops) {
  const auto& registry = kernels::OpRegistry::instance();
  for (const ir::Node& node : g.nodes) {
    std::string key = (node.domain.empty() ? "" : node.domain + ".") + node.op_type + " (opset " + std::to_string(node.opset) + ")";
    auto& [count, supported] = ops[key];
    ++count;
    supported = registry.find(node.domain, node.op_type, node.opset) != nullptr;
    for (const ir::Attribute& a : node.attributes) {
      if (a.g) count_ops(*a.g, ops);
      for (const auto& sg : a.graphs) count_ops(*sg, ops);
    }
  }
}

// What the session runs after optimization, with each fused group's members.
void print_optimized(std::shared_ptr<ir::Graph> graph) {
  const size_t original = graph->nodes.size();
  auto session = runtime::Session::create(std::move(graph));
  if (!session.is_ok()) {
    fmt::print("session: {}\n", session.status().to_string());
    return;
  }
  const ir::Graph& g = (*session)->graph();
  fmt::print("optimized: {} nodes (from {})\n", g.nodes.size(), original);
  const runtime::ExecutorStats stats = (*session)->stats();
  fmt::print("prepacked weights: {} bytes in kernel layouts, replacing {} bytes of initializers\n", stats.packed_bytes,
             stats.released_bytes);
  for (const ir::Node& node : g.nodes) {
    // The optimizer names nodes it rewrote into existing ops (norms, MatMulNBits with its bias) "<first>/fused".
    if (node.domain != kernels::kEmberDomain && node.name.ends_with("/fused")) {
      fmt::print("  fused {}: {}{}\n", node.name, node.domain.empty() ? "" : node.domain + ".", node.op_type);
      continue;
    }
    if (node.domain != kernels::kEmberDomain) continue;
    if (node.op_type == kernels::kFusedMatMulOp) {
      const ir::Attribute* activation = node.find_attr("activation");
      fmt::print("  fused {}: MatMul -> Add{} ({} in the GEMM epilogue)\n", node.name,
                 activation ? " -> " + activation->s : "", activation ? "bias and activation" : "bias");
      continue;
    }
    const ir::Attribute* body = node.find_attr("body");
    if (node.op_type != kernels::kFusedElementwiseOp || !body || !body->g) continue;
    std::vector<std::string> members;
    for (const ir::Node& m : body->g->nodes) members.push_back(m.op_type);
    fmt::print("  fused {}: {}\n", node.name, fmt::join(members, " -> "));
  }
}

}  // namespace

Command add_info(CLI::App& app) {
  auto model = std::make_shared<std::string>();
  auto list_values = std::make_shared<bool>(false);
  app.add_option("model", *model, "Path of the .onnx file")->required();
  app.add_flag("--values", *list_values, "List every value with its inferred dtype and shape");
  return [model, list_values]() {
    auto loaded = onnx::load_model(*model);
    if (!loaded.is_ok()) {
      fmt::print(stderr, "ember info: {}\n", loaded.status().to_string());
      return 1;
    }
    ir::Graph& g = *loaded->graph;
    fmt::print("model: {} (ir_version {}, producer {} {})\n", *model, loaded->metadata.ir_version, loaded->metadata.producer_name,
               loaded->metadata.producer_version);
    std::string opsets;
    for (const auto& [domain, version] : g.opsets) opsets += fmt::format(" {}={}", domain.empty() ? "ai.onnx" : domain, version);
    fmt::print("opsets:{}\n", opsets);
    fmt::print("inputs:\n");
    for (ir::ValueId id : g.inputs) {
      const ir::Value& v = g.value(id);
      fmt::print("  {} {}{}{}\n", v.name, dtype_name(v.dtype), describe_shape(v), v.constant ? " (has default)" : "");
    }
    fmt::print("outputs:\n");
    for (ir::ValueId id : g.outputs) {
      const ir::Value& v = g.value(id);
      fmt::print("  {} {}{}\n", v.name, dtype_name(v.dtype), describe_shape(v));
    }
    auto inferred = ir::infer_symbolic_values(g);
    if (!inferred.is_ok()) {
      fmt::print("shape inference failed: {}\n", inferred.status().to_string());
    } else {
      auto print_value = [&](ir::ValueId id) {
        const ir::SymbolicValue& s = (*inferred)[static_cast<size_t>(id)];
        fmt::print("  {} {}{}\n", g.value(id).name, dtype_name(s.dtype), ir::sym_shape_to_string(s.shape));
      };
      fmt::print("inferred outputs:\n");
      for (ir::ValueId id : g.outputs) print_value(id);
      if (*list_values) {
        fmt::print("values:\n");
        for (size_t id = 0; id < g.values.size(); ++id) {
          if (!g.values[id].constant) print_value(static_cast<ir::ValueId>(id));
        }
      }
    }
    size_t weight_bytes = 0, weights = 0;
    for (const ir::Value& v : g.values) {
      if (v.constant) {
        weight_bytes += v.constant->nbytes();
        ++weights;
      }
    }
    fmt::print("initializers: {} tensors, {} bytes\n", weights, weight_bytes);
    std::map<std::string, std::pair<int, bool>> ops;
    count_ops(g, ops);
    fmt::print("ops:\n");
    std::vector<std::string> unsupported;
    for (const auto& [name, entry] : ops) {
      fmt::print("  {:6d}  {}{}\n", entry.first, name, entry.second ? "" : "  UNSUPPORTED");
      if (!entry.second) unsupported.push_back(name);
    }
    fmt::print("unsupported ops: {}\n", unsupported.empty() ? "none" : fmt::format("{}", fmt::join(unsupported, ", ")));
    if (unsupported.empty()) print_optimized(std::move(loaded->graph));
    return 0;
  };
}

}  // namespace ember::cli
