#include "ir/shape_inference.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <queue>

#include "ir/shape_inference_internal.h"

namespace ember::ir {

// ---------------------------------------------------------------- DimExpr

DimExpr DimExpr::constant(int64_t v) {
  DimExpr e;
  e.known_ = true;
  if (v != 0) e.terms_[{}] = v;
  return e;
}

DimExpr DimExpr::symbol(std::string name) {
  DimExpr e;
  if (name.empty()) return e;
  e.known_ = true;
  e.terms_[{std::move(name)}] = 1;
  return e;
}

DimExpr DimExpr::from_dim(const Dim& d) {
  if (d.known()) return constant(d.value);
  return symbol(d.symbol);
}

Dim DimExpr::to_dim() const {
  if (!known_) return Dim{};
  if (auto c = as_constant()) return Dim{*c, {}};
  return Dim{-1, to_string()};
}

std::optional<int64_t> DimExpr::as_constant() const {
  if (!known_) return std::nullopt;
  if (terms_.empty()) return 0;
  if (terms_.size() == 1 && terms_.begin()->first.empty()) return terms_.begin()->second;
  return std::nullopt;
}

std::string DimExpr::atom_text(const std::string& atom) {
  bool plain = std::all_of(atom.begin(), atom.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == ':';
  });
  if (plain || atom.starts_with("floor(")) return atom;
  return "(" + atom + ")";
}

std::string DimExpr::term_text(const Monomial& m, int64_t coeff) {
  std::string s;
  for (const std::string& atom : m) s += (s.empty() ? "" : "*") + atom_text(atom);
  if (coeff != 1) s += "*" + std::to_string(coeff);
  return s;
}

std::string DimExpr::to_string() const {
  if (!known_) return "?";
  if (auto c = as_constant()) return std::to_string(*c);
  // Positive terms first so that "seq-past" reads naturally; the constant last.
  std::string s;
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& [m, coeff] : terms_) {
      if (m.empty() || (coeff > 0) != (pass == 0)) continue;
      std::string t = term_text(m, coeff < 0 ? -coeff : coeff);
      s += coeff < 0 ? "-" + t : (s.empty() ? t : "+" + t);
    }
  }
  auto it = terms_.find({});
  if (it != terms_.end()) s += (it->second < 0 ? "" : "+") + std::to_string(it->second);
  return s;
}

DimExpr operator+(const DimExpr& a, const DimExpr& b) {
  if (!a.known_ || !b.known_) return {};
  DimExpr r = a;
  for (const auto& [m, coeff] : b.terms_) {
    int64_t& t = r.terms_[m];
    if (__builtin_add_overflow(t, coeff, &t)) return {};
    if (t == 0) r.terms_.erase(m);
  }
  return r;
}

DimExpr operator-(const DimExpr& a, const DimExpr& b) { return a + b * DimExpr::constant(-1); }

DimExpr operator*(const DimExpr& a, const DimExpr& b) {
  if (!a.known_ || !b.known_) return {};
  DimExpr r = DimExpr::constant(0);
  for (const auto& [ma, ca] : a.terms_) {
    for (const auto& [mb, cb] : b.terms_) {
      DimExpr::Monomial m = ma;
      m.insert(m.end(), mb.begin(), mb.end());
      std::sort(m.begin(), m.end());
      int64_t c = 0;
      if (__builtin_mul_overflow(ca, cb, &c)) return {};
      int64_t& t = r.terms_[m];
      if (__builtin_add_overflow(t, c, &t)) return {};
      if (t == 0) r.terms_.erase(m);
    }
  }
  return r;
}

namespace {

int64_t floor_div_int(int64_t a, int64_t b) {
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

// True when `big` contains every atom of `small` (as multisets); `rest` gets the others.
bool divides(const std::vector<std::string>& small, const std::vector<std::string>& big, std::vector<std::string>& rest) {
  rest.clear();
  size_t i = 0;
  for (const std::string& atom : big) {
    if (i < small.size() && small[i] == atom) {
      ++i;
    } else {
      rest.push_back(atom);
    }
  }
  return i == small.size();
}

}  // namespace

DimExpr floor_div(const DimExpr& a, const DimExpr& b) {
  if (!a.known_ || !b.known_) return {};
  if (auto c = b.as_constant()) {
    if (*c == 0) return {};
    // floor((c*q + r) / c) = q + floor(r / c) when every non-constant term divides.
    DimExpr q = DimExpr::constant(0);
    int64_t rest = 0;
    bool exact = true;
    for (const auto& [m, coeff] : a.terms_) {
      if (m.empty()) {
        rest = coeff;
      } else if (coeff % *c == 0) {
        q.terms_[m] = coeff / *c;
      } else {
        exact = false;
      }
    }
    if (exact) return q + DimExpr::constant(floor_div_int(rest, *c));
  } else if (a.same_as(b)) {
    return DimExpr::constant(1);
  } else if (b.terms_.size() == 1) {
    const auto& [mb, cb] = *b.terms_.begin();
    DimExpr q = DimExpr::constant(0);
    std::vector<std::string> rest;
    bool exact = true;
    for (const auto& [m, coeff] : a.terms_) {
      if (!divides(mb, m, rest) || coeff % cb != 0) {
        exact = false;
        break;
      }
      q.terms_[rest] = coeff / cb;
    }
    if (exact) return q;
  }
  auto operand = [](const DimExpr& e) {
    bool single = e.terms_.size() == 1 && (e.terms_.begin()->first.empty() ||
                                           (e.terms_.begin()->second == 1 && e.terms_.begin()->first.size() == 1));
    return single ? e.to_string() : "(" + e.to_string() + ")";
  };
  return DimExpr::symbol("floor(" + operand(a) + "/" + operand(b) + ")");
}

DimExpr ceil_div(const DimExpr& a, const DimExpr& b) {
  auto ca = a.as_constant(), cb = b.as_constant();
  if (ca && cb) return *cb == 0 ? DimExpr{} : DimExpr::constant(-floor_div_int(-*ca, *cb));
  return floor_div(a + b - DimExpr::constant(1), b);
}

std::string sym_shape_to_string(const std::optional<SymShape>& shape) {
  if (!shape) return "?";
  std::string s = "[";
  for (size_t i = 0; i < shape->size(); ++i) s += (i ? "," : "") + (*shape)[i].to_string();
  return s + "]";
}

// ---------------------------------------------------------------- driver

namespace shape_inference_detail {

const SymbolicValue* Scope::lookup(std::string_view name) const {
  ValueId id = graph_.find_value(name);
  if (id == kNoValue || graph_.value(id).is_outer_scope) return parent_ ? parent_->lookup(name) : nullptr;
  return &values_[static_cast<size_t>(id)];
}

const SymShape* OpContext::shape(size_t i) const {
  return has_input(i) && inputs_[i]->shape ? &*inputs_[i]->shape : nullptr;
}

const std::vector<DimExpr>* OpContext::contents(size_t i) const {
  return has_input(i) && inputs_[i]->contents ? &*inputs_[i]->contents : nullptr;
}

std::optional<std::vector<int64_t>> OpContext::ints(size_t i) const {
  const std::vector<DimExpr>* c = contents(i);
  if (!c) return std::nullopt;
  std::vector<int64_t> r;
  for (const DimExpr& e : *c) {
    auto v = e.as_constant();
    if (!v) return std::nullopt;
    r.push_back(*v);
  }
  return r;
}

std::optional<std::vector<DimExpr>> contents_of(const Tensor& t) {
  if (!(dtype_is_int(t.dtype()) || t.dtype() == DType::kBool) || t.rank() > 1 ||
      t.numel() > static_cast<int64_t>(kMaxContents)) {
    return std::nullopt;
  }
  std::vector<DimExpr> r;
  for (int64_t i = 0; i < t.numel(); ++i) {
    r.push_back(DimExpr::constant(t.dtype() == DType::kBool ? t.data_as<bool>()[i] : read_int(t, i)));
  }
  return r;
}

namespace {

const RuleTable& rule_table() {
  static const RuleTable rules = [] {
    RuleTable r;
    add_string_rules(r);
    add_tensor_rules(r);
    add_nn_rules(r);
    add_sequence_rules(r);
    add_signal_rules(r);
    add_attention_rules(r);
    return r;
  }();
  return rules;
}

}  // namespace

InferFn find_infer_fn(const Node& node) {
  bool onnx_domain = node.domain.empty() || node.domain == "ai.onnx";
  const RuleTable& rules = rule_table();
  auto it = rules.find(onnx_domain ? node.op_type : node.domain + "." + node.op_type);
  return it == rules.end() ? nullptr : it->second;
}

namespace {

SymbolicValue initial_value(const Value& v, const Scope* parent) {
  SymbolicValue s;
  if (v.is_outer_scope && parent) {
    if (const SymbolicValue* outer = parent->lookup(v.name)) return *outer;
  }
  // A graph input's initializer is only a default: the declared type rules.
  if (v.constant && !v.is_graph_input) {
    s.dtype = v.constant->dtype();
    s.shape = SymShape{};
    for (int64_t d : v.constant->shape()) s.shape->push_back(DimExpr::constant(d));
    s.contents = contents_of(*v.constant);
    return s;
  }
  s.dtype = v.dtype;
  if (v.has_shape) {
    s.shape = SymShape{};
    for (const Dim& d : v.shape) s.shape->push_back(DimExpr::from_dim(d));
  }
  return s;
}

// Nodes in dependency order, without reordering the graph itself.
std::vector<size_t> dependency_order(const Graph& g) {
  std::vector<int> producer(g.values.size(), -1);
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (g.nodes[n].removed) continue;
    for (ValueId out : g.nodes[n].outputs) {
      if (out != kNoValue) producer[static_cast<size_t>(out)] = static_cast<int>(n);
    }
  }
  std::vector<std::vector<size_t>> users(g.nodes.size());
  std::vector<int> pending(g.nodes.size(), 0);
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (g.nodes[n].removed) continue;
    for (ValueId in : g.nodes[n].inputs) {
      if (in == kNoValue || producer[static_cast<size_t>(in)] < 0) continue;
      users[static_cast<size_t>(producer[static_cast<size_t>(in)])].push_back(n);
      ++pending[n];
    }
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (!g.nodes[n].removed && pending[n] == 0) ready.push(n);
  }
  std::vector<size_t> order;
  while (!ready.empty()) {
    size_t n = ready.top();
    ready.pop();
    order.push_back(n);
    for (size_t u : users[n]) {
      if (--pending[u] == 0) ready.push(u);
    }
  }
  return order;
}

// The more specific of a declared and an inferred dim.
DimExpr pick_dim(const DimExpr& declared, const DimExpr& inferred) {
  if (inferred.as_constant()) return inferred;
  if (declared.as_constant()) return declared;
  return inferred.known() ? inferred : declared;
}

Status merge_output(const Value& v, const Node& node, SymbolicValue inferred, SymbolicValue& state) {
  auto conflict = [&](const std::string& what) {
    return invalid_model("value '{}' produced by {}: declared {} {} but inference gives {}", v.name, node.label(), what,
                         what == "dtype" ? std::string(dtype_name(state.dtype)) : sym_shape_to_string(state.shape),
                         what == "dtype" ? std::string(dtype_name(inferred.dtype)) : sym_shape_to_string(inferred.shape));
  };
  if (state.dtype != DType::kUndefined && inferred.dtype != DType::kUndefined && state.dtype != inferred.dtype) {
    return conflict("dtype");
  }
  if (inferred.dtype == DType::kUndefined) inferred.dtype = state.dtype;
  // A rule that derives a negative size (e.g. a slice whose symbolic bounds cross)
  // has proved nothing: keep the dim unknown rather than report a false conflict.
  if (inferred.shape) {
    for (DimExpr& d : *inferred.shape) {
      if (auto c = d.as_constant(); c && *c < 0) d = DimExpr();
    }
  }
  if (state.shape && inferred.shape) {
    if (state.shape->size() != inferred.shape->size()) return conflict("shape");
    for (size_t i = 0; i < state.shape->size(); ++i) {
      auto d = (*state.shape)[i].as_constant(), n = (*inferred.shape)[i].as_constant();
      if (d && n && *d != *n) return conflict("shape");
      (*inferred.shape)[i] = pick_dim((*state.shape)[i], (*inferred.shape)[i]);
    }
  } else if (!inferred.shape) {
    inferred.shape = state.shape;
  }
  state = std::move(inferred);
  return Status::ok();
}

void write_back(Value& v, const SymbolicValue& s) {
  if (v.dtype == DType::kUndefined) v.dtype = s.dtype;
  if (!s.shape) return;
  if (!v.has_shape) {
    v.has_shape = true;
    v.shape.clear();
    for (const DimExpr& d : *s.shape) v.shape.push_back(d.to_dim());
    return;
  }
  if (v.shape.size() != s.shape->size()) return;
  for (size_t i = 0; i < v.shape.size(); ++i) {
    if (!v.shape[i].known() && v.shape[i].symbol.empty()) v.shape[i] = (*s.shape)[i].to_dim();
  }
}

}  // namespace

Result<std::vector<SymbolicValue>> infer_graph(Graph& g, const Scope* parent) {
  std::vector<SymbolicValue> values(g.values.size());
  for (size_t i = 0; i < g.values.size(); ++i) values[i] = initial_value(g.values[i], parent);
  Scope scope(g, values, parent);
  for (size_t n : dependency_order(g)) {
    const Node& node = g.nodes[n];
    std::vector<const SymbolicValue*> inputs;
    for (ValueId in : node.inputs) inputs.push_back(in == kNoValue ? nullptr : &values[static_cast<size_t>(in)]);
    OpContext ctx(node, std::move(inputs), scope);
    if (InferFn fn = find_infer_fn(node)) {
      Status st = fn(ctx);
      if (!st.is_ok()) return st.with_context(node.label() + ": ");
      if (!ctx.attrs.status().is_ok()) return ctx.attrs.status();
    }
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      ValueId out = node.outputs[i];
      if (out == kNoValue) continue;
      SymbolicValue& inferred = ctx.outputs[i];
      if (inferred.contents && inferred.contents->size() > kMaxContents) inferred.contents.reset();
      if (inferred.shape && inferred.shape->size() > kMaxRank) {
        return invalid_model("{}: output '{}' would have rank {}, past the {} dims a tensor may have", node.label(),
                             g.value(out).name, inferred.shape->size(), kMaxRank);
      }
      EMBER_RETURN_IF_ERROR(merge_output(g.value(out), node, std::move(inferred), values[static_cast<size_t>(out)]));
    }
  }
  for (size_t i = 0; i < g.values.size(); ++i) {
    if (!g.values[i].is_outer_scope) write_back(g.values[i], values[i]);
  }
  return values;
}

}  // namespace shape_inference_detail

Result<std::vector<SymbolicValue>> infer_symbolic_values(Graph& g) {
  return shape_inference_detail::infer_graph(g, nullptr);
}

Status infer_shapes(Graph& g) { return infer_symbolic_values(g).status(); }

std::vector<std::pair<std::string, std::string>> shape_rule_ops() {
  std::vector<std::pair<std::string, std::string>> ops;
  for (const auto& [key, rule] : shape_inference_detail::rule_table()) {
    // Keys are "Op" in the default domain and "domain.Op" elsewhere (op types have no dots).
    size_t dot = key.rfind('.');
    ops.emplace_back(dot == std::string::npos ? "" : key.substr(0, dot), dot == std::string::npos ? key : key.substr(dot + 1));
  }
  std::sort(ops.begin(), ops.end());
  return ops;
}

}  // namespace ember::ir
