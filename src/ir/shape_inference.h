#pragma once
// Load-time symbolic shape inference: dtypes and shapes of every value, with
// dimensions as small expressions over the graph inputs' symbols ("batch",
// "past+seq", "seq*2"), and the contents of small integer tensors (shape tensors)
// propagated through Shape -> Gather/Slice -> Concat -> Reshape chains.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"

namespace ember::ir {

// A dimension as an expression: unknown, or a sum of terms coeff*atom*atom...,
// where an atom is a symbol or an opaque floor division. The term map is
// canonical, so equal expressions compare equal and constants fold.
class DimExpr {
 public:
  DimExpr() = default;  // unknown
  static DimExpr constant(int64_t v);
  static DimExpr symbol(std::string name);
  // A declared dim: its value, its symbol as an atom, or unknown.
  static DimExpr from_dim(const Dim& d);
  Dim to_dim() const;

  bool known() const { return known_; }
  std::optional<int64_t> as_constant() const;
  bool is_constant(int64_t v) const { return as_constant() == v; }
  // Both known and structurally identical: provably the same size.
  bool same_as(const DimExpr& o) const { return known_ && o.known_ && terms_ == o.terms_; }
  std::string to_string() const;  // "?" when unknown

  friend DimExpr operator+(const DimExpr& a, const DimExpr& b);
  friend DimExpr operator-(const DimExpr& a, const DimExpr& b);
  friend DimExpr operator*(const DimExpr& a, const DimExpr& b);
  friend DimExpr floor_div(const DimExpr& a, const DimExpr& b);
  friend DimExpr ceil_div(const DimExpr& a, const DimExpr& b);
  friend bool operator==(const DimExpr& a, const DimExpr& b) = default;

 private:
  using Monomial = std::vector<std::string>;  // sorted atoms; empty = the constant term
  static std::string atom_text(const std::string& atom);
  static std::string term_text(const Monomial& m, int64_t coeff);
  bool known_ = false;
  std::map<Monomial, int64_t> terms_;  // no zero coefficients
};

using SymShape = std::vector<DimExpr>;

// What inference knows about one value.
struct SymbolicValue {
  DType dtype = DType::kUndefined;
  std::optional<SymShape> shape;  // nullopt: rank unknown
  // For small 0-D/1-D integer tensors: their elements (shape tensors).
  std::optional<std::vector<DimExpr>> contents;
};

std::string sym_shape_to_string(const std::optional<SymShape>& shape);

// Infers every value of `g` (and of its subgraphs) in place: fills dtype and shape
// of values without a declared one, completes unknown dims of declared ones, and
// fails when a declared shape or dtype contradicts the inferred one. Unknown ops
// leave their outputs unknown. Nodes are not modified.
Status infer_shapes(Graph& g);

// The same, also returning what was inferred for each value (indexed by ValueId).
Result<std::vector<SymbolicValue>> infer_symbolic_values(Graph& g);

// Every (domain, op type) inference has a rule for, sorted; "" is the default domain.
std::vector<std::pair<std::string, std::string>> shape_rule_ops();

}  // namespace ember::ir
