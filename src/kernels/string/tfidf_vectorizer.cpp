// TfIdfVectorizer: counts the pool's n-grams in each row of int or string items
// (skip-grams up to max_skip_count), then weighs the counts by mode.
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/string/string_ops.h"

namespace ember::kernels::string_ops {
namespace {

enum class Weighting { kTf, kIdf, kTfIdf };

// Pool items become dense ids; an input item outside the pool is kAbsent and can
// be part of no n-gram.
constexpr int64_t kAbsent = -1;

class TfIdfKernel final : public OpKernel {
 public:
  struct Config {
    Weighting weighting;
    int64_t min_gram, max_gram, max_skip;
    int64_t output_size;
    std::vector<float> weights;  // per output column; empty: none
    // n-gram (as item ids) -> its output column.
    std::map<std::vector<int64_t>, int64_t> ngrams;
    std::unordered_map<int64_t, int64_t> int_ids;
    std::unordered_map<std::string, int64_t> string_ids;
  };

  explicit TfIdfKernel(Config c) : c_(std::move(c)) {}

  Status infer(KernelContext& ctx) const override {
    const Shape& shape = ctx.input(0).shape();
    if (shape.size() == 1) {
      ctx.set_output(0, DType::kF32, {c_.output_size});
    } else if (shape.size() == 2 && shape[0] > 0) {
      ctx.set_output(0, DType::kF32, {shape[0], c_.output_size});
    } else {
      return invalid_argument("input must be [C] or [B, C] with B > 0, got {}", ctx.input(0).describe());
    }
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int64_t rows = x.rank() == 2 ? x.dim(0) : 1;
    const int64_t cols = x.rank() == 2 ? x.dim(1) : x.dim(0);
    std::vector<int64_t> ids(static_cast<size_t>(x.numel()));
    for (int64_t i = 0; i < x.numel(); ++i) ids[static_cast<size_t>(i)] = item_id(x, i);
    float* y = ctx.output(0).data_as<float>();
    std::vector<int64_t> counts(static_cast<size_t>(c_.output_size));
    std::vector<int64_t> gram;
    for (int64_t r = 0; r < rows; ++r) {
      std::fill(counts.begin(), counts.end(), 0);
      const int64_t* row = ids.data() + r * cols;
      for (int64_t skip = 0; skip <= c_.max_skip; ++skip) {
        const int64_t step = skip + 1;
        // Unigrams do not depend on the skip: count them on the first pass only.
        const int64_t first_n = std::max<int64_t>(c_.min_gram, skip == 0 ? 1 : 2);
        for (int64_t start = 0; start < cols; ++start) {
          gram.clear();
          for (int64_t n = 1; n <= c_.max_gram; ++n) {
            const int64_t at = start + (n - 1) * step;
            if (at >= cols || row[at] == kAbsent) break;
            gram.push_back(row[at]);
            if (n < first_n) continue;
            auto it = c_.ngrams.find(gram);
            if (it != c_.ngrams.end()) ++counts[static_cast<size_t>(it->second)];
          }
        }
      }
      weigh(counts, y + r * c_.output_size);
    }
    return Status::ok();
  }

 private:
  int64_t item_id(const Tensor& x, int64_t i) const {
    if (x.dtype() == DType::kString) {
      auto it = c_.string_ids.find(x.data_as<std::string>()[i]);
      return it == c_.string_ids.end() ? kAbsent : it->second;
    }
    auto it = c_.int_ids.find(read_int(x, i));
    return it == c_.int_ids.end() ? kAbsent : it->second;
  }

  void weigh(const std::vector<int64_t>& counts, float* y) const {
    for (size_t j = 0; j < counts.size(); ++j) {
      const float w = c_.weights.empty() ? 1.0f : c_.weights[j];
      const auto f = static_cast<float>(counts[j]);
      switch (c_.weighting) {
        case Weighting::kTf: y[j] = f; break;
        case Weighting::kIdf: y[j] = counts[j] > 0 ? w : 0.0f; break;
        case Weighting::kTfIdf: y[j] = w * f; break;
      }
    }
  }

  Config c_;
};

}  // namespace

KernelResult create_tfidf_vectorizer(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 1));
  const DType dtype = init.input_dtypes[0];
  if (dtype != DType::kString && dtype != DType::kI32 && dtype != DType::kI64) {
    return invalid_argument("input must be string, int32 or int64, got {}", dtype_name(dtype));
  }
  ir::AttrReader attrs(init.node);
  const std::string mode = attrs.get_string("mode", "");
  TfIdfKernel::Config c;
  c.min_gram = attrs.get_int("min_gram_length", 0);
  c.max_gram = attrs.get_int("max_gram_length", 0);
  c.max_skip = attrs.get_int("max_skip_count", 0);
  const std::vector<int64_t> ngram_counts = attrs.get_ints("ngram_counts");
  const std::vector<int64_t> ngram_indexes = attrs.get_ints("ngram_indexes");
  const std::vector<int64_t> pool_ints = attrs.get_ints("pool_int64s");
  const std::vector<std::string> pool_strings = attrs.get_strings("pool_strings");
  c.weights = attrs.get_floats("weights");
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (mode == "TF") {
    c.weighting = Weighting::kTf;
  } else if (mode == "IDF") {
    c.weighting = Weighting::kIdf;
  } else if (mode == "TFIDF") {
    c.weighting = Weighting::kTfIdf;
  } else {
    return invalid_model("mode must be TF, IDF or TFIDF, got '{}'", mode);
  }
  if (c.min_gram < 1 || c.max_gram < c.min_gram) {
    return invalid_model("need 1 <= min_gram_length <= max_gram_length, got {} and {}", c.min_gram, c.max_gram);
  }
  if (c.max_skip < 0) return invalid_model("max_skip_count must be >= 0, got {}", c.max_skip);
  const bool strings = !pool_strings.empty();
  if (strings == !pool_ints.empty()) return invalid_model("exactly one of pool_int64s and pool_strings must be given");
  if (strings != (dtype == DType::kString)) {
    return invalid_argument("a {} input needs {}", dtype_name(dtype), strings ? "pool_int64s" : "pool_strings");
  }
  const auto pool_size = static_cast<int64_t>(strings ? pool_strings.size() : pool_ints.size());
  std::vector<int64_t> pool(static_cast<size_t>(pool_size));
  for (int64_t i = 0; i < pool_size; ++i) {
    const auto k = static_cast<size_t>(i);
    pool[k] = strings ? c.string_ids.emplace(pool_strings[k], static_cast<int64_t>(c.string_ids.size())).first->second
                      : c.int_ids.emplace(pool_ints[k], static_cast<int64_t>(c.int_ids.size())).first->second;
  }
  // ngram_counts[n-1] is where the n-grams start in the pool; the k-th n-gram overall
  // goes to column ngram_indexes[k].
  c.output_size = 0;
  for (int64_t column : ngram_indexes) {
    if (column < 0) return invalid_model("ngram_indexes holds a negative index {}", column);
    c.output_size = std::max(c.output_size, column + 1);
  }
  if (!c.weights.empty() && static_cast<int64_t>(c.weights.size()) < c.output_size) {
    return invalid_model("weights has {} values for {} output columns", c.weights.size(), c.output_size);
  }
  size_t ordinal = 0;
  for (size_t g = 0; g < ngram_counts.size(); ++g) {
    const int64_t n = static_cast<int64_t>(g) + 1;
    const int64_t begin = ngram_counts[g];
    const int64_t end = g + 1 < ngram_counts.size() ? ngram_counts[g + 1] : pool_size;
    if (begin < 0 || end < begin || end > pool_size || (end - begin) % n != 0) {
      return invalid_model("ngram_counts {} does not split the pool of {} items into {}-grams", begin, pool_size, n);
    }
    for (int64_t at = begin; at < end; at += n, ++ordinal) {
      if (ordinal >= ngram_indexes.size()) return invalid_model("ngram_indexes has fewer entries than the pool has n-grams");
      if (n < c.min_gram || n > c.max_gram) continue;
      c.ngrams[std::vector<int64_t>(pool.begin() + at, pool.begin() + at + n)] = ngram_indexes[ordinal];
    }
  }
  return std::unique_ptr<OpKernel>(std::make_unique<TfIdfKernel>(std::move(c)));
}

}  // namespace ember::kernels::string_ops
