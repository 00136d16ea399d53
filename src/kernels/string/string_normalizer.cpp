// StringNormalizer: drops stopwords, then lower- or upper-cases with ICU's
// full Unicode case mappings for the node's locale.
#include <unicode/locid.h>
#include <unicode/unistr.h>

#include <string>
#include <unordered_set>
#include <vector>

#include "kernels/string/string_ops.h"

namespace ember::kernels::string_ops {
namespace {

enum class CaseChange { kNone, kLower, kUpper };

std::string change_case(const std::string& s, CaseChange change, const icu::Locale& locale) {
  if (change == CaseChange::kNone) return s;
  icu::UnicodeString u = icu::UnicodeString::fromUTF8(s);
  if (change == CaseChange::kLower) {
    u.toLower(locale);
  } else {
    u.toUpper(locale);
  }
  std::string out;
  u.toUTF8String(out);
  return out;
}

// Input [C] or [1, C]; output the kept elements, [K] or [1, K], or one "" when
// every element was a stopword ([1] or [1, 1]), as the spec says.
class StringNormalizerKernel final : public OpKernel {
 public:
  StringNormalizerKernel(CaseChange change, bool case_sensitive, icu::Locale locale, const std::vector<std::string>& stopwords)
      : change_(change), case_sensitive_(case_sensitive), locale_(std::move(locale)) {
    for (const std::string& w : stopwords) stopwords_.insert(stop_key(w));
  }

  Status infer(KernelContext& ctx) const override {
    const Shape& shape = ctx.input(0).shape();
    if (!(shape.size() == 1 || (shape.size() == 2 && shape[0] == 1))) {
      return invalid_argument("input must be [C] or [1, C], got {}", ctx.input(0).describe());
    }
    if (!ctx.has_value(0)) return needs_value(0);
    int64_t kept = std::max<int64_t>(count_kept(ctx.input(0)), 1);
    ctx.set_output(0, DType::kString, shape.size() == 1 ? Shape{kept} : Shape{1, kept});
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const auto* in = x.data_as<std::string>();
    auto* out = ctx.output(0).data_as<std::string>();
    int64_t k = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      if (!is_stopword(in[i])) out[k++] = change_case(in[i], change_, locale_);
    }
    if (k == 0) out[0].clear();
    return Status::ok();
  }

 private:
  std::string stop_key(const std::string& s) const {
    return case_sensitive_ ? s : change_case(s, CaseChange::kLower, locale_);
  }
  bool is_stopword(const std::string& s) const { return !stopwords_.empty() && stopwords_.count(stop_key(s)) > 0; }
  int64_t count_kept(const Tensor& x) const {
    int64_t kept = 0;
    for (int64_t i = 0; i < x.numel(); ++i) kept += is_stopword(x.data_as<std::string>()[i]) ? 0 : 1;
    return kept;
  }

  CaseChange change_;
  bool case_sensitive_;
  icu::Locale locale_;
  std::unordered_set<std::string> stopwords_;  // lower-cased unless case-sensitive
};

}  // namespace

KernelResult create_string_normalizer(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 1));
  if (init.input_dtypes[0] != DType::kString) {
    return invalid_argument("input must be a string tensor, got {}", dtype_name(init.input_dtypes[0]));
  }
  ir::AttrReader attrs(init.node);
  const std::string action = attrs.get_string("case_change_action", "NONE");
  const bool case_sensitive = attrs.get_int("is_case_sensitive", 0) != 0;
  const std::string locale_name = attrs.get_string("locale", "en_US");
  const std::vector<std::string> stopwords = attrs.get_strings("stopwords");
  EMBER_RETURN_IF_ERROR(attrs.status());
  CaseChange change;
  if (action == "NONE") {
    change = CaseChange::kNone;
  } else if (action == "LOWER") {
    change = CaseChange::kLower;
  } else if (action == "UPPER") {
    change = CaseChange::kUpper;
  } else {
    return invalid_model("case_change_action must be LOWER, UPPER or NONE, got '{}'", action);
  }
  icu::Locale locale(locale_name.c_str());
  if (locale.isBogus()) return invalid_argument("locale '{}' is not a valid ICU locale", locale_name);
  return std::unique_ptr<OpKernel>(
      std::make_unique<StringNormalizerKernel>(change, case_sensitive, std::move(locale), stopwords));
}

}  // namespace ember::kernels::string_ops
