#pragma once
// Shared pieces of the ember._ember extension (nanobind): Ember's errors as
// Python exceptions, and numpy arrays <-> Tensors without copies where the
// dtype and layout allow.
#include <nanobind/nanobind.h>

#include <exception>
#include <string>
#include <utility>

#include "base/status.h"
#include "base/tensor.h"

namespace ember::python {

namespace nb = nanobind;

// A failed Status on its way to Python, raised there as the ember exception of its
// code (ember.InvalidArgument, ember.InvalidGraph, ember.NoSuchFile,
// ember.NotImplemented, else ember.EmberError) with Status::to_string() as the message.
class StatusError : public std::exception {
 public:
  explicit StatusError(Status status) : status_(std::move(status)), what_(status_.to_string()) {}
  const Status& status() const { return status_; }
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  Status status_;
  std::string what_;
};

inline void throw_if_error(const Status& s) {
  if (!s.is_ok()) throw StatusError(s);
}
template <typename T> T value_or_throw(Result<T>&& r) {
  if (!r.is_ok()) throw StatusError(r.status());
  return std::move(*r);
}

// A Tensor viewing a numpy array's memory; `keep` holds the array it views (the
// caller's own, or a C-contiguous copy of it) for as long as the tensor is used.
struct ArrayInput {
  Tensor tensor;
  nb::object keep;
};
// Any C-contiguous numpy array is viewed in place; other arrays are converted first
// (np.ascontiguousarray), and other values (lists, scalars) to `declared` when it is
// known, as ONNX Runtime converts them. bfloat16 comes from ml_dtypes. `what` names
// the value in errors ("input 'x'").
ArrayInput array_to_tensor(nb::handle value, const std::string& what, DType declared = DType::kUndefined);
// A numpy array that owns `t` (no copy when `t` owns its storage alone).
nb::object tensor_to_array(Tensor t);
// ONNX Runtime's type strings: "tensor(float)", "tensor(int64)", ...
std::string ort_type_string(DType t);

void bind_session(nb::module_& m);
// ember.genai's classes (genai.cpp).
void bind_genai(nb::module_& m);

}  // namespace ember::python
