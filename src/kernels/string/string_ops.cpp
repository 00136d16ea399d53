// StringConcat, StringSplit, RegexFullMatch and Equal on strings.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <string>
#include <string_view>
#include <vector>

#include "kernels/common/shape_util.h"
#include "kernels/string/string_ops.h"

namespace ember::kernels::string_ops {
namespace {

Status require_strings(const KernelInit& init, size_t count) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, count));
  for (size_t i = 0; i < count; ++i) {
    if (init.input_dtypes[i] != DType::kString) {
      return invalid_argument("input {} must be a string tensor, got {}", i, dtype_name(init.input_dtypes[i]));
    }
  }
  return Status::ok();
}

// Calls f(out_index, a_index, b_index) over the numpy broadcast of a and b into `out`.
template <typename F>
void for_each_broadcast(const Shape& a, const Shape& b, const Shape& out, F&& f) {
  const Shape sa = broadcast_strides(a, out);
  const Shape sb = broadcast_strides(b, out);
  const int64_t n = shape_numel(out);
  Shape idx(out.size(), 0);
  int64_t ia = 0, ib = 0;
  for (int64_t i = 0; i < n; ++i) {
    f(i, ia, ib);
    for (size_t d = out.size(); d-- > 0;) {
      ia += sa[d];
      ib += sb[d];
      if (++idx[d] < out[d]) break;
      ia -= sa[d] * out[d];
      ib -= sb[d] * out[d];
      idx[d] = 0;
    }
  }
}

// Y = X + Y elementwise on strings, with numpy broadcasting.
class StringBinaryKernel final : public OpKernel {
 public:
  enum class Op { kConcat, kEqual };
  explicit StringBinaryKernel(Op op) : op_(op) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(Shape shape, broadcast_shapes(ctx.input(0).shape(), ctx.input(1).shape()));
    ctx.set_output(0, op_ == Op::kConcat ? DType::kString : DType::kBool, std::move(shape));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const auto* a = ctx.input(0).data_as<std::string>();
    const auto* b = ctx.input(1).data_as<std::string>();
    Tensor& out = ctx.output(0);
    if (op_ == Op::kConcat) {
      auto* y = out.data_as<std::string>();
      for_each_broadcast(ctx.input(0).shape(), ctx.input(1).shape(), out.shape(),
                         [&](int64_t i, int64_t ia, int64_t ib) { y[i] = a[ia] + b[ib]; });
    } else {
      bool* y = out.data_as<bool>();
      for_each_broadcast(ctx.input(0).shape(), ctx.input(1).shape(), out.shape(),
                         [&](int64_t i, int64_t ia, int64_t ib) { y[i] = a[ia] == b[ib]; });
    }
    return Status::ok();
  }

 private:
  Op op_;
};

bool is_python_space(char c) {
  // The ASCII characters Python's str.split() treats as whitespace.
  return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f');
}

// Python's str.split(None, maxsplit): runs of whitespace separate, ends are trimmed
// (the unsplit remainder keeps its trailing whitespace).
void split_whitespace(std::string_view s, int64_t maxsplit, std::vector<std::string_view>& parts) {
  size_t i = 0;
  while (true) {
    while (i < s.size() && is_python_space(s[i])) ++i;
    if (i == s.size()) return;
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
      parts.push_back(s.substr(i));
      return;
    }
    size_t j = i;
    while (j < s.size() && !is_python_space(s[j])) ++j;
    parts.push_back(s.substr(i, j - i));
    i = j;
  }
}

// Python's str.split(delimiter, maxsplit): every occurrence separates, empty parts kept.
void split_delimiter(std::string_view s, std::string_view delimiter, int64_t maxsplit,
                     std::vector<std::string_view>& parts) {
  size_t start = 0;
  while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
    size_t at = s.find(delimiter, start);
    if (at == std::string_view::npos) break;
    parts.push_back(s.substr(start, at - start));
    start = at + delimiter.size();
  }
  parts.push_back(s.substr(start));
}

// Outputs: the substrings padded with "" to the longest split ([..., max_parts]),
// and each element's number of substrings (int64, the input's shape).
class StringSplitKernel final : public OpKernel {
 public:
  StringSplitKernel(std::string delimiter, int64_t maxsplit) : delimiter_(std::move(delimiter)), maxsplit_(maxsplit) {}

  Status infer(KernelContext& ctx) const override {
    if (!ctx.has_value(0)) return needs_value(0);
    Shape shape = ctx.input(0).shape();
    ctx.set_output(1, DType::kI64, shape);
    shape.push_back(max_parts(ctx.input(0)));
    ctx.set_output(0, DType::kString, std::move(shape));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const auto* in = x.data_as<std::string>();
    const int64_t width = max_parts(x);
    auto* out = ctx.output(0).data_as<std::string>();
    int64_t* counts = ctx.has_output(1) ? ctx.output(1).data_as<int64_t>() : nullptr;
    std::vector<std::string_view> parts;
    for (int64_t i = 0; i < x.numel(); ++i) {
      split(in[i], parts);
      for (size_t k = 0; k < parts.size(); ++k) out[i * width + static_cast<int64_t>(k)] = parts[k];
      if (counts) counts[i] = static_cast<int64_t>(parts.size());
    }
    return Status::ok();
  }

 private:
  void split(std::string_view s, std::vector<std::string_view>& parts) const {
    parts.clear();
    if (delimiter_.empty()) {
      split_whitespace(s, maxsplit_, parts);
    } else {
      split_delimiter(s, delimiter_, maxsplit_, parts);
    }
  }

  int64_t max_parts(const Tensor& x) const {
    std::vector<std::string_view> parts;
    size_t most = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      split(x.data_as<std::string>()[i], parts);
      most = std::max(most, parts.size());
    }
    return static_cast<int64_t>(most);
  }

  std::string delimiter_;  // empty: split on runs of whitespace
  int64_t maxsplit_;       // < 0: no limit
};

struct Pcre2CodeDeleter {
  void operator()(pcre2_code* c) const { pcre2_code_free(c); }
};
struct Pcre2MatchDataDeleter {
  void operator()(pcre2_match_data* m) const { pcre2_match_data_free(m); }
};

// RE2 (the syntax the spec names) and PCRE2 agree on the patterns ONNX models use;
// matching is anchored at both ends, over UTF-8, with ASCII classes as in RE2.
class RegexFullMatchKernel final : public OpKernel {
 public:
  RegexFullMatchKernel(std::string pattern, std::unique_ptr<pcre2_code, Pcre2CodeDeleter> code)
      : pattern_(std::move(pattern)), code_(std::move(code)) {}

  Status infer(KernelContext& ctx) const override {
    ctx.set_output(0, DType::kBool, ctx.input(0).shape());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const auto* in = x.data_as<std::string>();
    bool* out = ctx.output(0).data_as<bool>();
    std::unique_ptr<pcre2_match_data, Pcre2MatchDataDeleter> match(
        pcre2_match_data_create_from_pattern(code_.get(), nullptr));
    if (!match) return internal_error("cannot allocate PCRE2 match data");
    for (int64_t i = 0; i < x.numel(); ++i) {
      const std::string& s = in[i];
      int rc = pcre2_match(code_.get(), reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), 0,
                           PCRE2_ANCHORED | PCRE2_ENDANCHORED, match.get(), nullptr);
      if (rc == PCRE2_ERROR_NOMATCH) {
        out[i] = false;
      } else if (rc < 0) {
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(rc, message, sizeof(message));
        return invalid_argument("pattern '{}' on element {}: {}", pattern_, i, reinterpret_cast<const char*>(message));
      } else {
        out[i] = true;
      }
    }
    return Status::ok();
  }

 private:
  std::string pattern_;
  std::unique_ptr<pcre2_code, Pcre2CodeDeleter> code_;
};

}  // namespace

KernelResult create_string_concat(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_strings(init, 2));
  return std::unique_ptr<OpKernel>(std::make_unique<StringBinaryKernel>(StringBinaryKernel::Op::kConcat));
}

KernelResult create_equal_with_strings(const KernelInit& init, KernelFactory numeric) {
  if (input_dtype(init, 0) != DType::kString && input_dtype(init, 1) != DType::kString) return numeric(init);
  EMBER_RETURN_IF_ERROR(require_strings(init, 2));
  return std::unique_ptr<OpKernel>(std::make_unique<StringBinaryKernel>(StringBinaryKernel::Op::kEqual));
}

KernelResult create_string_split(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_strings(init, 1));
  ir::AttrReader attrs(init.node);
  std::string delimiter = attrs.get_string("delimiter", "");
  int64_t maxsplit = attrs.get_int("maxsplit", -1);
  EMBER_RETURN_IF_ERROR(attrs.status());
  return std::unique_ptr<OpKernel>(std::make_unique<StringSplitKernel>(std::move(delimiter), maxsplit < 0 ? -1 : maxsplit));
}

KernelResult create_regex_full_match(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_strings(init, 1));
  ir::AttrReader attrs(init.node);
  if (!attrs.has("pattern")) return invalid_model("attribute pattern is required");
  std::string pattern = attrs.get_string("pattern", "");
  EMBER_RETURN_IF_ERROR(attrs.status());
  int error = 0;
  PCRE2_SIZE offset = 0;
  std::unique_ptr<pcre2_code, Pcre2CodeDeleter> code(pcre2_compile(
      reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF, &error, &offset, nullptr));
  if (!code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    return invalid_argument("pattern '{}' does not compile at offset {}: {}", pattern, offset,
                            reinterpret_cast<const char*>(message));
  }
  return std::unique_ptr<OpKernel>(std::make_unique<RegexFullMatchKernel>(std::move(pattern), std::move(code)));
}

}  // namespace ember::kernels::string_ops
