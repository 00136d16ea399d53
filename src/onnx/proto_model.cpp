#include "onnx/proto_model.h"

#include <climits>

namespace ember::onnx {
namespace {

using proto::Field;
using proto::Reader;
using proto::Where;

// Subgraphs nest through attributes; a hostile file could nest them until the
// stack runs out.
constexpr int kMaxGraphDepth = 64;

Status read_graph(std::span<const uint8_t> bytes, const Where& w, TensorContext& ctx, int depth, GraphMsg& g);

// Reads a length-delimited sub-message and hands its bytes to `fn`.
template <typename Fn>
Status read_message(const Field& f, const Where& w, Fn&& fn) {
  std::span<const uint8_t> bytes;
  EMBER_RETURN_IF_ERROR(proto::read_bytes(f, w, bytes));
  return fn(bytes, w);
}

Status read_dim(std::span<const uint8_t> bytes, const Where& w, ir::Dim& dim) {
  Reader r(bytes, w);
  Field f;
  while (!r.done()) {
    EMBER_RETURN_IF_ERROR(r.next(f));
    if (f.number == 1) {
      int64_t v;
      EMBER_RETURN_IF_ERROR(proto::read_int(f, w.child("dim_value"), v));
      dim.value = v >= 0 ? v : -1;
    } else if (f.number == 2) {
      EMBER_RETURN_IF_ERROR(proto::read_string(f, w.child("dim_param"), dim.symbol));
    }
  }
  return Status::ok();
}

Status read_tensor_type(std::span<const uint8_t> bytes, const Where& w, ValueInfoMsg& v) {
  Reader r(bytes, w);
  Field f;
  while (!r.done()) {
    EMBER_RETURN_IF_ERROR(r.next(f));
    if (f.number == 1) {
      int64_t elem;
      EMBER_RETURN_IF_ERROR(proto::read_int(f, w.child("elem_type"), elem));
      v.dtype = elem > 0 && elem <= INT32_MAX && dtype_is_known(static_cast<int32_t>(elem)) ? static_cast<DType>(elem)
                                                                                           : DType::kUndefined;
    } else if (f.number == 2) {
      v.has_shape = true;
      EMBER_RETURN_IF_ERROR(read_message(f, w.child("shape"), [&](std::span<const uint8_t> shape, const Where& sw) {
        Reader sr(shape, sw);
        Field d;
        while (!sr.done()) {
          EMBER_RETURN_IF_ERROR(sr.next(d));
          if (d.number != 1) continue;
          if (v.shape.size() == kMaxRank) return proto::malformed(sw, "more than the {} dims a tensor may have", kMaxRank);
          Where dw = sw.child("dim", static_cast<int64_t>(v.shape.size()));
          EMBER_RETURN_IF_ERROR(read_message(d, dw, [&](std::span<const uint8_t> b, const Where& x) {
            return read_dim(b, x, v.shape.emplace_back());
          }));
        }
        return Status::ok();
      }));
    }
  }
  return Status::ok();
}

Status read_value_info(std::span<const uint8_t> bytes, const Where& w, ValueInfoMsg& v) {
  Reader r(bytes, w);
  Field f;
  while (!r.done()) {
    EMBER_RETURN_IF_ERROR(r.next(f));
    if (f.number == 1) {
      EMBER_RETURN_IF_ERROR(proto::read_string(f, w.child("name"), v.name));
    } else if (f.number == 2) {
      // TypeProto: tensor_type (1) with its element type and shape; sequence_type
      // (4) and optional_type (9) as kSequence / kOptional handles, their element
      // types left to the values themselves; maps stay untyped.
      EMBER_RETURN_IF_ERROR(read_message(f, w.child("type"), [&](std::span<const uint8_t> type, const Where& tw) {
        Reader tr(type, tw);
        Field t;
        while (!tr.done()) {
          EMBER_RETURN_IF_ERROR(tr.next(t));
          if (t.number == 1) {
            EMBER_RETURN_IF_ERROR(read_message(t, tw.child("tensor_type"), [&](std::span<const uint8_t> b, const Where& x) {
              return read_tensor_type(b, x, v);
            }));
          } else if (t.number == 4) {
            v.dtype = DType::kSequence;
          } else if (t.number == 9) {
            v.dtype = DType::kOptional;
          }
        }
        return Status::ok();
      }));
    }
  }
  return Status::ok();
}

Status set_attr_type(int64_t type, AttributeMsg& a, const Where& w) {
  if (type >= 1 && type <= 10) {
    a.attr.type = static_cast<ir::AttrType>(type);
  } else if (type == 11 || type == 12) {
    a.unsupported = "sparse tensor";
    a.attr.type = ir::AttrType::kUndefined;
  } else if (type == 13 || type == 14) {
    a.unsupported = "type proto";
    a.attr.type = ir::AttrType::kUndefined;
  } else if (type != 0) {
    return proto::malformed(w, "attribute '{}' has unknown type {}", a.attr.name, type);
  }
  return Status::ok();
}

Status read_attribute(std::span<const uint8_t> bytes, const Where& w, TensorContext& ctx, int depth, AttributeMsg& a) {
  Reader r(bytes, w);
  Field f;
  int64_t type = 0;
  ir::AttrType seen = ir::AttrType::kUndefined;  // for files that omit `type`
  ir::Attribute& x = a.attr;
  while (!r.done()) {
    EMBER_RETURN_IF_ERROR(r.next(f));
    switch (f.number) {
      case 1: EMBER_RETURN_IF_ERROR(proto::read_string(f, w.child("name"), x.name)); break;
      case 21: EMBER_RETURN_IF_ERROR(proto::read_string(f, w.child("ref_attr_name"), x.ref_attr_name)); break;
      case 20: EMBER_RETURN_IF_ERROR(proto::read_int(f, w.child("type"), type)); break;
      case 2:
        EMBER_RETURN_IF_ERROR(proto::read_float(f, w.child("f"), x.f));
        seen = ir::AttrType::kFloat;
        break;
      case 3:
        EMBER_RETURN_IF_ERROR(proto::read_int(f, w.child("i"), x.i));
        seen = ir::AttrType::kInt;
        break;
      case 4:
        EMBER_RETURN_IF_ERROR(proto::read_string(f, w.child("s"), x.s));
        seen = ir::AttrType::kString;
        break;
      case 5: {
        Where tw = w.child("t");
        std::span<const uint8_t> b;
        EMBER_RETURN_IF_ERROR(proto::read_bytes(f, tw, b));
        EMBER_ASSIGN_OR_RETURN(NamedTensor t, decode_tensor(b, tw, ctx));
        x.t = std::move(t.tensor);
        seen = ir::AttrType::kTensor;
        break;
      }
      case 6:
      case 11: {
        Where gw = f.number == 6 ? w.child("g") : w.child("graphs", static_cast<int64_t>(a.graphs.size()));
        EMBER_RETURN_IF_ERROR(read_message(f, gw, [&](std::span<const uint8_t> b, const Where& x2) {
          return read_graph(b, x2, ctx, depth + 1, a.graphs.emplace_back());
        }));
        seen = f.number == 6 ? ir::AttrType::kGraph : ir::AttrType::kGraphs;
        break;
      }
      case 7:
        EMBER_RETURN_IF_ERROR(proto::append_floats(f, w.child("floats"), x.floats));
        seen = ir::AttrType::kFloats;
        break;
      case 8:
        EMBER_RETURN_IF_ERROR(proto::append_varints(f, w.child("ints"), x.ints));
        seen = ir::AttrType::kInts;
        break;
      case 9:
        EMBER_RETURN_IF_ERROR(proto::read_string(f, w.child("strings", static_cast<int64_t>(x.strings.size())),
                                                 x.strings.emplace_back()));
        seen = ir::AttrType::kStrings;
        break;
      case 10: {
        Where tw = w.child("tensors", static_cast<int64_t>(x.tensors.size()));
        std::span<const uint8_t> b;
        EMBER_RETURN_IF_ERROR(proto::read_bytes(f, tw, b));
        EMBER_ASSIGN_OR_RETURN(NamedTensor t, decode_tensor(b, tw, ctx));
        x.tensors.push_back(std::move(t.tensor));
        seen = ir::AttrType::kTensors;
        break;
      }
      case 22: case 23: a.unsupported = "sparse tensor"; break;
      case 14: case 15: a.unsupported = "type proto"; break;
      default: break;
    }
  }
  if (type == 0 && a.unsupported.empty()) type = static_cast<int64_t>(seen);
  return set_attr_type(type, a, w);
}

Status read_node(std::span<const uint8_t> bytes, const Where& w, TensorContext& ctx, int depth, NodeMsg& n) {
  Reader r(bytes, w);
  Field f;
  while (!r.done()) {
    EMBER_RETURN_IF_ERROR(r.next(f));
    switch (f.number) {
      case 1:
        EMBER_RETURN_IF_ERROR(proto::read_string(f, w.child("input", static_cast<int64_t>(n.inputs.size())), n.inputs.emplace_back()));
        break;
      case 2:
        EMBER_RETURN_IF_ERROR(proto::read_string(f, w.child("output", static_cast<int64_t>(n.outputs.size())), n.outputs.emplace_back()));
        break;
      case 3: EMBER_RETURN_IF_ERROR(proto::read_string(f, w.child("name"), n.name)); break;
      case 4: EMBER_RETURN_IF_ERROR(proto::read_string(f, w.child("op_type"), n.op_type)); break;
      case 7: EMBER_RETURN_IF_ERROR(proto::read_string(f, w.child("domain"), n.domain)); break;
      case 8: EMBER_RETURN_IF_ERROR(proto::read_string(f, w.child("overload"), n.overload)); break;
      case 5:
        EMBER_RETURN_IF_ERROR(read_message(f, w.child("attribute", static_cast<int64_t>(n.attributes.size())),
                                           [&](std::span<const uint8_t> b, const Where& x) {
                                             return read_attribute(b, x, ctx, depth, n.attributes.emplace_back());
                                           }));
        break;
      default: break;
    }
  }
  n.domain = normalize_domain(std::move(n.domain));
  return Status::ok();
}

Status read_graph(std::span<const uint8_t> bytes, const Where& w, TensorContext& ctx, int depth, GraphMsg& g) {
  if (depth > kMaxGraphDepth) return proto::malformed(w, "subgraphs nest deeper than {}", kMaxGraphDepth);
  Reader r(bytes, w);
  Field f;
  auto value_infos = [&](std::vector<ValueInfoMsg>& list, std::string_view field) {
    return read_message(f, w.child(field, static_cast<int64_t>(list.size())), [&](std::span<const uint8_t> b, const Where& x) {
      return read_value_info(b, x, list.emplace_back());
    });
  };
  while (!r.done()) {
    EMBER_RETURN_IF_ERROR(r.next(f));
    switch (f.number) {
      case 1:
        EMBER_RETURN_IF_ERROR(read_message(f, w.child("node", static_cast<int64_t>(g.nodes.size())),
                                           [&](std::span<const uint8_t> b, const Where& x) {
                                             return read_node(b, x, ctx, depth, g.nodes.emplace_back());
                                           }));
        break;
      case 2: EMBER_RETURN_IF_ERROR(proto::read_string(f, w.child("name"), g.name)); break;
      case 10: EMBER_RETURN_IF_ERROR(proto::read_string(f, w.child("doc_string"), g.doc_string)); break;
      case 5: {
        Where tw = w.child("initializer", static_cast<int64_t>(g.initializers.size()));
        std::span<const uint8_t> b;
        EMBER_RETURN_IF_ERROR(proto::read_bytes(f, tw, b));
        EMBER_ASSIGN_OR_RETURN(NamedTensor t, decode_tensor(b, tw, ctx));
        g.initializers.push_back(std::move(t));
        break;
      }
      case 11: EMBER_RETURN_IF_ERROR(value_infos(g.inputs, "input")); break;
      case 12: EMBER_RETURN_IF_ERROR(value_infos(g.outputs, "output")); break;
      case 13: EMBER_RETURN_IF_ERROR(value_infos(g.value_info, "value_info")); break;
      case 15: return not_implemented("{}: sparse initializers are not supported", w.path());
      default: break;
    }
  }
  return Status::ok();
}

Status read_opset(std::span<const uint8_t> bytes, const Where& w, OpsetMap& opsets) {
  Reader r(bytes, w);
  Field f;
  std::string domain;
  int64_t version = 0;
  while (!r.done()) {
    EMBER_RETURN_IF_ERROR(r.next(f));
    if (f.number == 1) EMBER_RETURN_IF_ERROR(proto::read_string(f, w.child("domain"), domain));
    if (f.number == 2) EMBER_RETURN_IF_ERROR(proto::read_int(f, w.child("version"), version));
  }
  if (version < 1 || version > INT_MAX) return proto::malformed(w, "opset version {} of domain '{}' is invalid", version, domain);
  opsets[normalize_domain(std::move(domain))] = static_cast<int>(version);
  return Status::ok();
}

Status read_function(std::span<const uint8_t> bytes, const Where& w, TensorContext& ctx, FunctionMsg& fn) {
  Reader r(bytes, w);
  Field f;
  int64_t opset_index = 0;
  while (!r.done()) {
    EMBER_RETURN_IF_ERROR(r.next(f));
    switch (f.number) {
      case 1: EMBER_RETURN_IF_ERROR(proto::read_string(f, w.child("name"), fn.name)); break;
      case 4:
        EMBER_RETURN_IF_ERROR(proto::read_string(f, w.child("input", static_cast<int64_t>(fn.inputs.size())), fn.inputs.emplace_back()));
        break;
      case 5:
        EMBER_RETURN_IF_ERROR(proto::read_string(f, w.child("output", static_cast<int64_t>(fn.outputs.size())), fn.outputs.emplace_back()));
        break;
      case 7:
        EMBER_RETURN_IF_ERROR(read_message(f, w.child("node", static_cast<int64_t>(fn.nodes.size())),
                                           [&](std::span<const uint8_t> b, const Where& x) {
                                             return read_node(b, x, ctx, 1, fn.nodes.emplace_back());
                                           }));
        break;
      case 9:
        EMBER_RETURN_IF_ERROR(read_message(f, w.child("opset_import", opset_index++), [&](std::span<const uint8_t> b, const Where& x) {
          return read_opset(b, x, fn.opsets);
        }));
        break;
      case 10: EMBER_RETURN_IF_ERROR(proto::read_string(f, w.child("domain"), fn.domain)); break;
      case 11:
        EMBER_RETURN_IF_ERROR(read_message(f, w.child("attribute_proto", static_cast<int64_t>(fn.attribute_defaults.size())),
                                           [&](std::span<const uint8_t> b, const Where& x) {
                                             return read_attribute(b, x, ctx, 1, fn.attribute_defaults.emplace_back());
                                           }));
        break;
      case 13: EMBER_RETURN_IF_ERROR(proto::read_string(f, w.child("overload"), fn.overload)); break;
      default: break;
    }
  }
  fn.domain = normalize_domain(std::move(fn.domain));
  return Status::ok();
}

// StringStringEntryProto: key = 1, value = 2.
Status read_string_entry(std::span<const uint8_t> bytes, const Where& w, std::pair<std::string, std::string>& entry) {
  Reader r(bytes, w);
  Field f;
  while (!r.done()) {
    EMBER_RETURN_IF_ERROR(r.next(f));
    if (f.number == 1) EMBER_RETURN_IF_ERROR(proto::read_string(f, w.child("key"), entry.first));
    if (f.number == 2) EMBER_RETURN_IF_ERROR(proto::read_string(f, w.child("value"), entry.second));
  }
  return Status::ok();
}

}  // namespace

std::string normalize_domain(std::string domain) { return domain == "ai.onnx" ? std::string() : domain; }

Status read_model(std::span<const uint8_t> bytes, TensorContext& ctx, ModelMsg& model) {
  Where w{nullptr, "ModelProto"};
  Reader r(bytes, w);
  Field f;
  int64_t opset_index = 0;
  while (!r.done()) {
    EMBER_RETURN_IF_ERROR(r.next(f));
    switch (f.number) {
      case 1: EMBER_RETURN_IF_ERROR(proto::read_int(f, w.child("ir_version"), model.ir_version)); break;
      case 2: EMBER_RETURN_IF_ERROR(proto::read_string(f, w.child("producer_name"), model.producer_name)); break;
      case 3: EMBER_RETURN_IF_ERROR(proto::read_string(f, w.child("producer_version"), model.producer_version)); break;
      case 4: EMBER_RETURN_IF_ERROR(proto::read_string(f, w.child("domain"), model.domain)); break;
      case 5: EMBER_RETURN_IF_ERROR(proto::read_int(f, w.child("model_version"), model.model_version)); break;
      case 6: EMBER_RETURN_IF_ERROR(proto::read_string(f, w.child("doc_string"), model.doc_string)); break;
      case 14:
        EMBER_RETURN_IF_ERROR(read_message(f, w.child("metadata_props", static_cast<int64_t>(model.metadata_props.size())),
                                           [&](std::span<const uint8_t> b, const Where& x) {
                                             return read_string_entry(b, x, model.metadata_props.emplace_back());
                                           }));
        break;
      case 7:
        model.has_graph = true;
        EMBER_RETURN_IF_ERROR(read_message(f, w.child("graph"), [&](std::span<const uint8_t> b, const Where& x) {
          return read_graph(b, x, ctx, 0, model.graph);
        }));
        break;
      case 8:
        EMBER_RETURN_IF_ERROR(read_message(f, w.child("opset_import", opset_index++), [&](std::span<const uint8_t> b, const Where& x) {
          return read_opset(b, x, model.opsets);
        }));
        break;
      case 25:
        EMBER_RETURN_IF_ERROR(read_message(f, w.child("functions", static_cast<int64_t>(model.functions.size())),
                                           [&](std::span<const uint8_t> b, const Where& x) {
                                             return read_function(b, x, ctx, model.functions.emplace_back());
                                           }));
        break;
      default: break;
    }
  }
  return Status::ok();
}

}  // namespace ember::onnx
