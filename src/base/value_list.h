#pragma once
// Sequence and optional values. A graph value that is a sequence of tensors or
// an optional travels through the runtime as a 0-D Tensor of dtype kSequence or
// kOptional (a handle): its data is a ValueList, kept alive by the handle's
// storage. A list is never changed once its handle is built: ops that "change"
// a sequence build a new one, so copying a handle may share the list.
#include <vector>

#include "base/status.h"
#include "base/tensor.h"

namespace ember {

struct ValueList {
  // Sequence: the element dtype (kUndefined while unknown, e.g. an empty
  // sequence read from a file). Optional: the dtype of the element it holds or
  // would hold (a tensor dtype, kSequence, or kUndefined when unknown).
  DType elem_dtype = DType::kUndefined;
  // Sequence: the elements, each a tensor that owns its bytes. Optional: none
  // (empty) or one (a tensor or a sequence handle).
  std::vector<Tensor> items;
};

inline bool dtype_is_container(DType t) { return t == DType::kSequence || t == DType::kOptional; }

// A new handle of `kind` (kSequence or kOptional) owning `list`.
Tensor make_container(DType kind, ValueList list);
// The list of a handle; null for anything else (a tensor, or a handle without data).
const ValueList* container_list(const Tensor& t);
// A deep copy of a handle and of every element (Tensor::clone of a handle).
Tensor clone_container(const Tensor& t);

}  // namespace ember
