#pragma once
// String tensors' ops. Elements are std::string (UTF-8 bytes), owned by the
// tensor; kernels producing strings get outputs allocated at run time (the
// planner never places strings in its arena).
#include <memory>

#include "kernels/registry.h"

namespace ember::kernels::string_ops {

using KernelResult = Result<std::unique_ptr<OpKernel>>;

KernelResult create_string_concat(const KernelInit& init);
KernelResult create_string_split(const KernelInit& init);
KernelResult create_regex_full_match(const KernelInit& init);
KernelResult create_string_normalizer(const KernelInit& init);
KernelResult create_tfidf_vectorizer(const KernelInit& init);
// Equal, Cast and CastLike: string tensors are handled here, every other dtype
// by the elementwise family's `numeric` factory.
KernelResult create_equal_with_strings(const KernelInit& init, KernelFactory numeric);
KernelResult create_cast_with_strings(const KernelInit& init, KernelFactory numeric);

}  // namespace ember::kernels::string_ops
