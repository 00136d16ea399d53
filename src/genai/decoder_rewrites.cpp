#include "genai/decoder_rewrites.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>

#include <fmt/format.h>

namespace ember::genai {
namespace {

ir::ValueId add_i64_constant(ir::Graph& graph, const std::string& name, int64_t v) {
  const ir::ValueId id = graph.add_value(name);
  Tensor t = Tensor::allocate(DType::kI64, {1});
  t.data_as<int64_t>()[0] = v;
  graph.value(id).dtype = DType::kI64;
  graph.value(id).constant = std::move(t);
  return id;
}

bool is_scalar_constant(const ir::Graph& graph, ir::ValueId id) {
  const ir::Value& v = graph.value(id);
  return v.constant.has_value() && v.constant->numel() == 1;
}

int opset_of_default_domain(const ir::Graph& graph) { return graph.opsets.count("") ? graph.opsets.at("") : 13; }

ir::ValueId add_graph_input(ir::Graph& graph, std::string_view name, DType dtype, int rank) {
  const ir::ValueId id = graph.add_value(std::string(name));
  ir::Value& v = graph.value(id);
  v.dtype = dtype;
  v.is_graph_input = true;
  v.has_shape = true;
  for (int i = 0; i < rank; ++i) v.shape.push_back(ir::Dim{-1, fmt::format("{}_{}", name, i)});
  graph.inputs.push_back(id);
  return id;
}

ir::Attribute int_attribute(std::string name, int64_t value) {
  ir::Attribute a;
  a.name = std::move(name);
  a.type = ir::AttrType::kInt;
  a.i = value;
  return a;
}

ir::Node new_node(const ir::Graph& graph, std::string name, std::string op_type) {
  ir::Node n;
  n.name = std::move(name);
  n.op_type = std::move(op_type);
  n.opset = opset_of_default_domain(graph);
  return n;
}

// hidden[:, -1:, :]
ir::ValueId last_position(ir::Graph& graph, ir::ValueId hidden) {
  ir::Node slice = new_node(graph, "ember_genai/lm_head_last_position", "Slice");
  const ir::ValueId out = graph.add_value(slice.name + "/output");
  graph.value(out).dtype = graph.value(hidden).dtype;
  slice.inputs = {hidden, add_i64_constant(graph, slice.name + "/starts", -1),
                  add_i64_constant(graph, slice.name + "/ends", std::numeric_limits<int64_t>::max()),
                  add_i64_constant(graph, slice.name + "/axes", 1)};
  slice.num_explicit_inputs = slice.inputs.size();
  slice.outputs = {out};
  graph.nodes.push_back(std::move(slice));
  return out;
}

// Gather(hidden, logits_positions, axis=1)
ir::ValueId gathered_positions(ir::Graph& graph, ir::ValueId hidden) {
  ir::Node gather = new_node(graph, "ember_genai/lm_head_positions", "Gather");
  const ir::ValueId out = graph.add_value(gather.name + "/output");
  graph.value(out).dtype = graph.value(hidden).dtype;
  gather.inputs = {hidden, add_graph_input(graph, kLogitsPositionsInput, DType::kI64, 1)};
  gather.num_explicit_inputs = gather.inputs.size();
  gather.outputs = {out};
  gather.attributes.push_back(int_attribute("axis", 1));
  graph.nodes.push_back(std::move(gather));
  return out;
}

}  // namespace

bool restrict_lm_head(ir::Graph& graph, const std::string& logits, LogitsRows rows) {
  const ir::ValueId out = graph.find_value(logits);
  if (out == ir::kNoValue || graph.value(out).producer < 0) return false;
  std::vector<ir::ValueId> chain = {out};
  ir::NodeId head = graph.value(out).producer;
  while (graph.node(head).op_type != "MatMul" && graph.node(head).op_type != "MatMulNBits") {
    const ir::Node& n = graph.node(head);
    static constexpr std::string_view kElementwise[] = {"Mul", "Div", "Add", "Sub", "Tanh", "Cast"};
    if (std::find(std::begin(kElementwise), std::end(kElementwise), n.op_type) == std::end(kElementwise)) return false;
    ir::ValueId next = ir::kNoValue;
    for (ir::ValueId in : n.inputs) {
      if (is_scalar_constant(graph, in)) continue;
      if (next != ir::kNoValue) return false;
      next = in;
    }
    if (next == ir::kNoValue || graph.value(next).producer < 0 || graph.value(next).consumers.size() != 1) return false;
    chain.push_back(next);
    head = graph.value(next).producer;
  }
  // Logits declared [batch, sequence, vocab]: a 2-D weight and scalar
  // elementwise ops keep the rank, so the head's input is [batch, sequence, hidden].
  if (!graph.value(out).has_shape || graph.value(out).shape.size() != 3) return false;
  const ir::ValueId hidden = graph.node(head).inputs.front();
  const ir::ValueId selected = rows == LogitsRows::kLastPosition ? last_position(graph, hidden)
                                                                 : gathered_positions(graph, hidden);
  graph.node(head).inputs.front() = selected;
  // The declared [batch, sequence, vocab] no longer holds.
  for (ir::ValueId v : chain) {
    graph.value(v).has_shape = false;
    graph.value(v).shape.clear();
  }
  return true;
}

std::vector<int64_t> length_switches(const ir::Graph& graph) {
  std::vector<int64_t> switches;
  for (const ir::Node& node : graph.nodes) {
    if (node.op_type != "If" || node.inputs.empty() || node.inputs[0] == ir::kNoValue) continue;
    const ir::NodeId producer = graph.value(node.inputs[0]).producer;
    if (producer < 0) continue;
    const ir::Node& compare = graph.node(producer);
    if ((compare.op_type != "Greater" && compare.op_type != "GreaterOrEqual") || compare.inputs.size() != 2) continue;
    const ir::ValueId bound = compare.inputs[1];
    if (bound == ir::kNoValue || !is_scalar_constant(graph, bound)) continue;
    const Tensor& c = *graph.value(bound).constant;
    int64_t at = 0;
    if (c.dtype() == DType::kI64) {
      at = c.data_as<int64_t>()[0];
    } else if (c.dtype() == DType::kI32) {
      at = c.data_as<int32_t>()[0];
    } else {
      continue;
    }
    switches.push_back(compare.op_type == "Greater" ? at : at - 1);
  }
  std::sort(switches.begin(), switches.end());
  switches.erase(std::unique(switches.begin(), switches.end()), switches.end());
  return switches;
}

std::vector<int> apply_sliding_window(ir::Graph& graph, const DecoderConfig& d) {
  const SlidingWindowConfig& w = *d.sliding_window;
  std::vector<int> layers = w.layers;
  if (layers.empty()) {
    layers.resize(static_cast<size_t>(d.num_hidden_layers));
    std::iota(layers.begin(), layers.end(), 0);
  }
  std::map<std::string, int> layer_of_past;  // past key input -> windowed layer
  for (int layer : layers) layer_of_past[layer_name(d.past_key_names, layer)] = layer;
  for (ir::Node& node : graph.nodes) {
    if (node.op_type != "GroupQueryAttention" || node.inputs.size() < 4 || node.inputs[3] == ir::kNoValue) continue;
    if (layer_of_past.erase(graph.value(node.inputs[3]).name) == 0) continue;
    auto it = std::find_if(node.attributes.begin(), node.attributes.end(),
                           [](const ir::Attribute& a) { return a.name == "local_window_size"; });
    if (it == node.attributes.end()) {
      node.attributes.push_back(int_attribute("local_window_size", w.window_size));
    } else if (it->i <= 0) {
      it->i = w.window_size;
    }
  }
  std::vector<int> missing;
  for (const auto& [name, layer] : layer_of_past) missing.push_back(layer);
  std::sort(missing.begin(), missing.end());
  return missing;
}


Status make_paged_decoder(ir::Graph& graph, const DecoderConfig& d) {
  // GroupQueryAttention's inputs and outputs (com.microsoft) and PagedAttention's (ember).
  enum Gqa : size_t { kQuery, kKey, kValue, kPastKey, kPastValue, kSeqlensK, kTotalSeqLen, kCos, kSin, kPositionIds,
                      kBias, kHeadSink };
  std::map<std::string, int> layer_of_past;
  for (int layer = 0; layer < d.num_hidden_layers; ++layer) {
    layer_of_past[layer_name(d.past_key_names, layer)] = layer;
  }
  const ir::ValueId query_start = add_graph_input(graph, kQueryStartInput, DType::kI32, 1);
  const ir::ValueId past_lens = add_graph_input(graph, kPastLensInput, DType::kI32, 1);
  const ir::ValueId block_tables = add_graph_input(graph, kBlockTablesInput, DType::kI32, 2);
  std::vector<bool> paged(static_cast<size_t>(d.num_hidden_layers), false);
  for (ir::Node& node : graph.nodes) {
    if (node.op_type != "GroupQueryAttention" || node.inputs.size() <= kPastValue || node.inputs[kPastKey] == ir::kNoValue) {
      continue;
    }
    auto input = [&](size_t i) { return i < node.inputs.size() ? node.inputs[i] : ir::kNoValue; };
    auto it = layer_of_past.find(graph.value(node.inputs[kPastKey]).name);
    if (it == layer_of_past.end()) continue;
    const int layer = it->second;
    const std::string past_value = layer_name(d.past_value_names, layer);
    if (graph.value(node.inputs[kPastValue]).name != past_value || node.outputs.size() < 3 ||
        node.outputs[1] == ir::kNoValue || graph.value(node.outputs[1]).name != layer_name(d.present_key_names, layer) ||
        node.outputs[2] == ir::kNoValue || graph.value(node.outputs[2]).name != layer_name(d.present_value_names, layer)) {
      return not_implemented("GroupQueryAttention node '{}' reads layer {}'s past key but not its past value '{}', or "
                             "does not write its present key and value: the paged engine needs each layer's cache in "
                             "one attention node",
                             node.name, layer, past_value);
    }
    if (input(kBias) != ir::kNoValue) {
      return not_implemented("GroupQueryAttention node '{}' has an attention_bias input: the paged engine flattens "
                             "several sequences into one run and cannot place a per-batch bias",
                             node.name);
    }
    if (node.outputs.size() > 3 && node.outputs[3] != ir::kNoValue) {
      return not_implemented("GroupQueryAttention node '{}' outputs its attention scores (output 3)", node.name);
    }
    node.op_type = "PagedAttention";
    node.domain = "ember";
    node.opset = 1;
    node.inputs = {input(kQuery), input(kKey), input(kValue), input(kPastKey), input(kPastValue), query_start,
                   past_lens, block_tables, input(kCos), input(kSin), input(kHeadSink)};
    while (node.inputs.back() == ir::kNoValue) node.inputs.pop_back();
    node.num_explicit_inputs = node.inputs.size();
    node.outputs.resize(3);
    // The pool holds every position, so a window-sized cache never needs eviction.
    std::erase_if(node.attributes, [](const ir::Attribute& a) { return a.name == "sliding_window_cache"; });
    // The caches are now pools [num_blocks, kv_heads, block_size, head_size]:
    // their batch and sequence symbols are no longer input_ids'.
    for (ir::ValueId cache : {node.inputs[3], node.inputs[4], node.outputs[1], node.outputs[2]}) {
      ir::Value& v = graph.value(cache);
      if (!v.has_shape || v.shape.size() != 4) continue;
      v.shape[0] = ir::Dim{-1, "ember/num_blocks"};
      v.shape[2] = ir::Dim{-1, "ember/block_size"};
    }
    paged[static_cast<size_t>(layer)] = true;
  }
  for (int layer = 0; layer < d.num_hidden_layers; ++layer) {
    if (!paged[static_cast<size_t>(layer)]) {
      return not_implemented("layer {}'s past key '{}' is not read by a GroupQueryAttention node: the paged engine "
                             "runs decoders whose attention is GroupQueryAttention (onnxruntime-genai's model builder "
                             "exports)",
                             layer, layer_name(d.past_key_names, layer));
    }
  }
  EMBER_RETURN_IF_ERROR(graph.rebuild_links());
  return graph.topological_sort();
}

}  // namespace ember::genai
