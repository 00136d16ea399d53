#include <climits>

#include "kernels/registry.h"
#include "kernels/string/string_ops.h"

namespace ember::kernels {

// Equal, Cast and CastLike take strings too: the elementwise family registers them
// and hands string tensors to this family.
void register_string_ops(OpRegistry& r) {
  using namespace string_ops;
  r.add({"", "StringConcat", 20, INT_MAX, create_string_concat, /*strings=*/true});
  r.add({"", "StringSplit", 20, INT_MAX, create_string_split, /*strings=*/true});
  r.add({"", "RegexFullMatch", 20, INT_MAX, create_regex_full_match, /*strings=*/true});
  r.add({"", "StringNormalizer", 10, INT_MAX, create_string_normalizer, /*strings=*/true});
  r.add({"", "TfIdfVectorizer", 9, INT_MAX, create_tfidf_vectorizer, /*strings=*/true});
}

}  // namespace ember::kernels
