// TreeEnsemble (ai.onnx.ml 5): sums (or averages, or takes the min or max of) the
// leaf weights each tree reaches, per target.
#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_set>
#include <vector>

#include "kernels/ml/ml_ops.h"

namespace ember::kernels::ml_ops {
namespace {

enum class Mode : uint8_t { kLeq = 0, kLt = 1, kGte = 2, kGt = 3, kEq = 4, kNeq = 5, kMember = 6 };
enum class Aggregate { kAverage = 0, kSum = 1, kMin = 2, kMax = 3 };
enum class PostTransform { kNone = 0, kSoftmax = 1, kLogistic = 2, kSoftmaxZero = 3, kProbit = 4 };

// erf^-1 by Newton's method on std::erf from a closed-form start (Giles' single
// precision approximation): three steps reach double precision on (-1, 1).
double erf_inv(double y) {
  if (y <= -1) return -std::numeric_limits<double>::infinity();
  if (y >= 1) return std::numeric_limits<double>::infinity();
  const double w = -std::log((1 - y) * (1 + y));
  double x = y * (w < 5 ? 1.50140941 + 0.246640727 * (w - 2.5) : 2.83297682 + 1.00167406 * (std::sqrt(w) - 3));
  for (int i = 0; i < 3; ++i) x -= (std::erf(x) - y) / (2 / std::sqrt(M_PI) * std::exp(-x * x));
  return x;
}

// The score transforms of ONNX Runtime's tree ensembles, per row of targets.
void post_transform(PostTransform t, std::vector<double>& v) {
  switch (t) {
    case PostTransform::kNone: return;
    case PostTransform::kLogistic:
      for (double& x : v) x = x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x));
      return;
    case PostTransform::kProbit:
      for (double& x : v) x = std::sqrt(2.0) * erf_inv(2 * x - 1);
      return;
    case PostTransform::kSoftmax:
    case PostTransform::kSoftmaxZero: {
      // SOFTMAX_ZERO leaves zero scores at zero (ONNX Runtime's |x| <= 1e-7 test).
      const bool keep_zeros = t == PostTransform::kSoftmaxZero;
      const double top = *std::max_element(v.begin(), v.end());
      double sum = 0;
      for (double& x : v) {
        x = keep_zeros && std::fabs(x) <= 1e-7 ? 0 : std::exp(x - top);
        sum += x;
      }
      for (double& x : v) x /= sum;
      return;
    }
  }
}

struct TreeNode {
  Mode mode;
  int64_t feature;
  double split;
  bool missing_tracks_true;
  int64_t true_id, false_id;      // a node, or a leaf when the matching *_leaf is set
  bool true_leaf, false_leaf;
  std::unordered_set<double> members;  // kMember
};

struct Leaf {
  int64_t target;
  double weight;
};

class TreeEnsembleKernel final : public OpKernel {
 public:
  struct Model {
    std::vector<TreeNode> nodes;
    std::vector<Leaf> leaves;
    // Per tree: its root node, or (a single-leaf tree) a leaf.
    std::vector<std::pair<int64_t, bool>> roots;
    Aggregate aggregate;
    PostTransform post;
    int64_t n_targets;
    int64_t n_features;  // the largest feature index + 1
  };

  explicit TreeEnsembleKernel(Model m) : m_(std::move(m)) {}

  Status infer(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.rank() != 2) return invalid_argument("X must be [N, F], got {}", x.describe());
    if (x.dim(1) < m_.n_features) {
      return invalid_argument("X has {} features but the trees read feature {}", x.dim(1), m_.n_features - 1);
    }
    ctx.set_output(0, x.dtype(), {x.dim(0), m_.n_targets});
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const int64_t rows = x.dim(0), features = x.dim(1);
    std::vector<double> row(static_cast<size_t>(features));
    std::vector<double> acc(static_cast<size_t>(m_.n_targets));
    const double start = m_.aggregate == Aggregate::kMin   ? std::numeric_limits<double>::max()
                         : m_.aggregate == Aggregate::kMax ? std::numeric_limits<double>::lowest()
                                                           : 0.0;
    const auto trees = static_cast<double>(m_.roots.size());
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t f = 0; f < features; ++f) row[static_cast<size_t>(f)] = read_double(x, r * features + f);
      std::fill(acc.begin(), acc.end(), start);
      for (const auto& [root, is_leaf] : m_.roots) {
        const Leaf& leaf = m_.leaves[static_cast<size_t>(is_leaf ? root : walk(root, row))];
        double& a = acc[static_cast<size_t>(leaf.target)];
        switch (m_.aggregate) {
          case Aggregate::kSum: a += leaf.weight; break;
          case Aggregate::kAverage: a += leaf.weight / trees; break;
          case Aggregate::kMin: a = std::min(a, leaf.weight); break;
          case Aggregate::kMax: a = std::max(a, leaf.weight); break;
        }
      }
      post_transform(m_.post, acc);
      EMBER_SWITCH_FLOAT(y.dtype(), T, {
        for (int64_t t = 0; t < m_.n_targets; ++t) {
          y.data_as<T>()[r * m_.n_targets + t] = T(static_cast<compute_t<T>>(acc[static_cast<size_t>(t)]));
        }
      }, return internal_error("TreeEnsemble output {}", y.describe()));
    }
    return Status::ok();
  }

 private:
  static bool goes_true(const TreeNode& n, double v) {
    if (std::isnan(v) && n.missing_tracks_true) return true;
    switch (n.mode) {
      case Mode::kLeq: return v <= n.split;
      case Mode::kLt: return v < n.split;
      case Mode::kGte: return v >= n.split;
      case Mode::kGt: return v > n.split;
      case Mode::kEq: return v == n.split;
      case Mode::kNeq: return v != n.split;
      case Mode::kMember: return n.members.count(v) > 0;
    }
    return false;
  }

  // The leaf reached from node `id`; creation checked every path ends at a leaf.
  int64_t walk(int64_t id, const std::vector<double>& row) const {
    while (true) {
      const TreeNode& n = m_.nodes[static_cast<size_t>(id)];
      const bool t = goes_true(n, row[static_cast<size_t>(n.feature)]);
      if (t ? n.true_leaf : n.false_leaf) return t ? n.true_id : n.false_id;
      id = t ? n.true_id : n.false_id;
    }
  }

  Model m_;
};

// Reads a float tensor attribute (float, double or float16) as doubles.
Result<std::vector<double>> read_floats(ir::AttrReader& attrs, const std::string& name, bool required) {
  const Tensor* t = attrs.get_tensor(name);
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (!t) {
    if (required) return invalid_model("attribute {} is required", name);
    return std::vector<double>{};
  }
  if (!dtype_is_float(t->dtype())) return invalid_model("{} must be a float tensor, got {}", name, t->describe());
  std::vector<double> v(static_cast<size_t>(t->numel()));
  for (int64_t i = 0; i < t->numel(); ++i) v[static_cast<size_t>(i)] = read_double(*t, i);
  return v;
}

// Every path from every node must end at a leaf: no cycle, no id out of range.
Status check_acyclic(const std::vector<TreeNode>& nodes) {
  enum : uint8_t { kNew, kOpen, kDone };
  std::vector<uint8_t> state(nodes.size(), kNew);
  std::vector<std::pair<int64_t, int>> stack;
  for (size_t s = 0; s < nodes.size(); ++s) {
    if (state[s] != kNew) continue;
    stack.push_back({static_cast<int64_t>(s), 0});
    state[s] = kOpen;
    while (!stack.empty()) {
      auto& [id, branch] = stack.back();
      const TreeNode& n = nodes[static_cast<size_t>(id)];
      if (branch == 2) {
        state[static_cast<size_t>(id)] = kDone;
        stack.pop_back();
        continue;
      }
      const bool leaf = branch == 0 ? n.true_leaf : n.false_leaf;
      const int64_t next = branch == 0 ? n.true_id : n.false_id;
      ++branch;
      if (leaf) continue;
      if (state[static_cast<size_t>(next)] == kOpen) return invalid_model("the trees have a cycle through node {}", next);
      if (state[static_cast<size_t>(next)] == kNew) {
        state[static_cast<size_t>(next)] = kOpen;
        stack.push_back({next, 0});
      }
    }
  }
  return Status::ok();
}

}  // namespace

KernelResult create_tree_ensemble(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 1));
  const DType dtype = init.input_dtypes[0];
  if (dtype != DType::kF32 && dtype != DType::kF64 && dtype != DType::kF16) {
    return invalid_argument("X must be float32, float64 or float16, got {}", dtype_name(dtype));
  }
  ir::AttrReader attrs(init.node);
  const int64_t post_transform = attrs.get_int("post_transform", 0);
  const int64_t aggregate = attrs.get_int("aggregate_function", 1);
  TreeEnsembleKernel::Model m;
  m.n_targets = attrs.get_int("n_targets", 0);
  const std::vector<int64_t> features = attrs.get_ints("nodes_featureids");
  const std::vector<int64_t> true_ids = attrs.get_ints("nodes_truenodeids");
  const std::vector<int64_t> false_ids = attrs.get_ints("nodes_falsenodeids");
  const std::vector<int64_t> true_leafs = attrs.get_ints("nodes_trueleafs");
  const std::vector<int64_t> false_leafs = attrs.get_ints("nodes_falseleafs");
  const std::vector<int64_t> missing = attrs.get_ints("nodes_missing_value_tracks_true");
  const std::vector<int64_t> targets = attrs.get_ints("leaf_targetids");
  const std::vector<int64_t> roots = attrs.get_ints("tree_roots");
  const Tensor* modes = attrs.get_tensor("nodes_modes");
  EMBER_RETURN_IF_ERROR(attrs.status());
  EMBER_ASSIGN_OR_RETURN(std::vector<double> splits, read_floats(attrs, "nodes_splits", true));
  EMBER_ASSIGN_OR_RETURN(std::vector<double> weights, read_floats(attrs, "leaf_weights", true));
  EMBER_ASSIGN_OR_RETURN(std::vector<double> members, read_floats(attrs, "membership_values", false));
  if (post_transform < 0 || post_transform > 4) return invalid_model("post_transform {} is not 0-4", post_transform);
  m.post = static_cast<PostTransform>(post_transform);
  if (aggregate < 0 || aggregate > 3) return invalid_model("aggregate_function {} is not 0-3", aggregate);
  m.aggregate = static_cast<Aggregate>(aggregate);
  if (m.n_targets < 1) return invalid_model("n_targets must be >= 1, got {}", m.n_targets);
  if (!modes || modes->dtype() != DType::kU8) return invalid_model("nodes_modes must be a uint8 tensor");
  const size_t n = features.size();
  if (true_ids.size() != n || false_ids.size() != n || true_leafs.size() != n || false_leafs.size() != n ||
      splits.size() != n || static_cast<size_t>(modes->numel()) != n || (!missing.empty() && missing.size() != n)) {
    return invalid_model("the nodes_* attributes must all have {} entries (nodes_featureids)", n);
  }
  if (targets.size() != weights.size()) {
    return invalid_model("leaf_targetids has {} entries, leaf_weights {}", targets.size(), weights.size());
  }
  for (size_t i = 0; i < targets.size(); ++i) {
    if (targets[i] < 0 || targets[i] >= m.n_targets) {
      return invalid_model("leaf {} targets {}, outside [0, {})", i, targets[i], m.n_targets);
    }
    m.leaves.push_back({targets[i], weights[i]});
  }
  // Membership sets follow the MEMBER nodes in node order, each ended by a NaN.
  size_t next_member = 0;
  m.n_features = 0;
  for (size_t i = 0; i < n; ++i) {
    TreeNode node;
    const uint8_t mode = modes->data_as<uint8_t>()[i];
    if (mode > 6) return invalid_model("node {} has mode {}, not 0-6", i, mode);
    node.mode = static_cast<Mode>(mode);
    node.feature = features[i];
    if (node.feature < 0) return invalid_model("node {} reads feature {}", i, node.feature);
    m.n_features = std::max(m.n_features, node.feature + 1);
    node.split = splits[i];
    node.missing_tracks_true = !missing.empty() && missing[i] != 0;
    node.true_id = true_ids[i];
    node.false_id = false_ids[i];
    node.true_leaf = true_leafs[i] != 0;
    node.false_leaf = false_leafs[i] != 0;
    for (auto [id, leaf] : {std::pair{node.true_id, node.true_leaf}, std::pair{node.false_id, node.false_leaf}}) {
      const size_t limit = leaf ? m.leaves.size() : n;
      if (id < 0 || static_cast<size_t>(id) >= limit) {
        return invalid_model("node {} branches to {} {}, outside [0, {})", i, leaf ? "leaf" : "node", id, limit);
      }
    }
    if (node.mode == Mode::kMember) {
      if (next_member >= members.size()) return invalid_model("membership_values has no set for node {}", i);
      while (next_member < members.size() && !std::isnan(members[next_member])) node.members.insert(members[next_member++]);
      ++next_member;  // the NaN
    }
    m.nodes.push_back(std::move(node));
  }
  EMBER_RETURN_IF_ERROR(check_acyclic(m.nodes));
  for (int64_t root : roots) {
    if (root < 0 || static_cast<size_t>(root) >= n) return invalid_model("tree root {} is not a node", root);
    const TreeNode& r = m.nodes[static_cast<size_t>(root)];
    // A root whose branches are the same leaf is a single-leaf tree: the leaf has the root's index.
    const bool is_leaf = r.true_leaf && r.false_leaf && r.true_id == r.false_id;
    if (is_leaf && static_cast<size_t>(root) >= m.leaves.size()) return invalid_model("tree root {} is not a leaf", root);
    m.roots.push_back({root, is_leaf});
  }
  return std::unique_ptr<OpKernel>(std::make_unique<TreeEnsembleKernel>(std::move(m)));
}

}  // namespace ember::kernels::ml_ops
