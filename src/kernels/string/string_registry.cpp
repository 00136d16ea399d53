#include "kernels/registry.h"
#include "kernels/string/string_ops.h"

namespace ember::kernels {

// Equal, Cast and CastLike take strings too: the elementwise family registers them
// and hands string tensors to this family.
void register_string_ops(OpRegistry& r) {
  using namespace string_ops;
  r.add(up_to_newest("", "StringConcat", 20, create_string_concat, kStringType));
  r.add(up_to_newest("", "StringSplit", 20, create_string_split, kStringType));
  r.add(up_to_newest("", "RegexFullMatch", 20, create_regex_full_match, kStringType));
  r.add(up_to_newest("", "StringNormalizer", 10, create_string_normalizer, kStringType));
  r.add(up_to_newest("", "TfIdfVectorizer", 9, create_tfidf_vectorizer,
                     kStringType | DTypeSet{DType::kI32, DType::kI64}));
}

}  // namespace ember::kernels
