// ember._ember: the extension behind the `ember` Python package (python/ember).
#include <nanobind/ndarray.h>

#include <Python.h>

#include "base/value_list.h"
#include "bindings.h"

namespace ember::python {
namespace {

// The class ember._errors defines for a Status code, looked up at the first error.
PyObject* error_class(StatusCode code) {
  static nb::handle classes[5];
  if (!classes[0]) {
    nb::object errors = nb::module_::import_("ember._errors");
    const char* names[5] = {"EmberError", "InvalidArgument", "InvalidGraph", "NoSuchFile", "NotImplemented"};
    for (int i = 0; i < 5; ++i) classes[i] = nb::object(errors.attr(names[i])).release();
  }
  switch (code) {
    case StatusCode::kInvalidArgument: return classes[1].ptr();
    case StatusCode::kInvalidModel: return classes[2].ptr();
    case StatusCode::kNotFound:
    case StatusCode::kIoError: return classes[3].ptr();
    case StatusCode::kNotImplemented: return classes[4].ptr();
    default: return classes[0].ptr();
  }
}

void register_errors() {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const StatusError& e) {
      PyErr_SetString(error_class(e.status().code()), e.what());
    }
  });
}

// numpy and ml_dtypes, imported once and kept for the interpreter's life.
nb::handle numpy() {
  static PyObject* np = nb::module_::import_("numpy").release().ptr();
  return np;
}

nb::object bfloat16_dtype() {
  static PyObject* bf16 = nullptr;
  if (!bf16) {
    try {
      nb::object dtype = nb::module_::import_("ml_dtypes").attr("bfloat16");
      bf16 = dtype.release().ptr();
    } catch (nb::python_error&) {
      throw StatusError(not_implemented("a bfloat16 tensor needs the ml_dtypes package (pip install ml_dtypes)"));
    }
  }
  return nb::borrow(bf16);
}

Result<DType> dtype_from_dlpack(nb::dlpack::dtype t) {
  using nb::dlpack::dtype_code;
  if (t.lanes != 1) return not_implemented("vector dtypes (lanes {}) are not supported", t.lanes);
  const auto code = static_cast<dtype_code>(t.code);
  switch (code) {
    case dtype_code::Float:
      if (t.bits == 32) return DType::kF32;
      if (t.bits == 16) return DType::kF16;
      if (t.bits == 64) return DType::kF64;
      break;
    case dtype_code::Bfloat:
      if (t.bits == 16) return DType::kBF16;
      break;
    case dtype_code::Int:
      if (t.bits == 8) return DType::kI8;
      if (t.bits == 16) return DType::kI16;
      if (t.bits == 32) return DType::kI32;
      if (t.bits == 64) return DType::kI64;
      break;
    case dtype_code::UInt:
      if (t.bits == 8) return DType::kU8;
      if (t.bits == 16) return DType::kU16;
      if (t.bits == 32) return DType::kU32;
      if (t.bits == 64) return DType::kU64;
      break;
    case dtype_code::Bool: return DType::kBool;
    default: break;
  }
  return not_implemented("numpy dtype (code {}, {} bits) has no ONNX tensor type Ember supports", t.code, t.bits);
}

nb::dlpack::dtype dlpack_from_dtype(DType t) {
  using nb::dlpack::dtype_code;
  auto make = [](dtype_code c, size_t bits) { return nb::dlpack::dtype{static_cast<uint8_t>(c), static_cast<uint8_t>(bits), 1}; };
  switch (t) {
    case DType::kF32: return make(dtype_code::Float, 32);
    case DType::kF16: return make(dtype_code::Float, 16);
    case DType::kF64: return make(dtype_code::Float, 64);
    case DType::kBF16: return make(dtype_code::UInt, 16);  // viewed as ml_dtypes.bfloat16 afterwards
    case DType::kBool: return make(dtype_code::Bool, 8);
    default: break;
  }
  const size_t bits = dtype_size(t) * 8;
  return make(dtype_is_signed_int(t) ? dtype_code::Int : dtype_code::UInt, bits);
}

using CpuArray = nb::ndarray<nb::ro, nb::device::cpu, nb::c_contig>;

}  // namespace

ArrayInput array_to_tensor(nb::handle value, const std::string& what, DType declared) {
  ArrayInput in;
  CpuArray array;
  // The fast path: a C-contiguous CPU array of a standard dtype, viewed as is.
  if (nb::try_cast(value, array, /*convert=*/false)) {
    in.keep = nb::borrow(value);
  } else {
    nb::object converted;
    const bool is_array = nb::isinstance(value, numpy().attr("ndarray"));
    if (!is_array && declared != DType::kUndefined && declared != DType::kString) {
      const std::string_view name = dtype_name(declared);
      nb::object target = declared == DType::kBF16 ? bfloat16_dtype() : nb::str(name.data(), name.size());
      converted = numpy().attr("ascontiguousarray")(value, nb::arg("dtype") = target);
    } else {
      converted = numpy().attr("ascontiguousarray")(value);
    }
    nb::object dtype = converted.attr("dtype");
    const bool is_bf16 = nb::str(dtype.attr("name")).equal(nb::str("bfloat16"));
    nb::object view = is_bf16 ? converted.attr("view")(numpy().attr("uint16")) : converted;
    if (!nb::try_cast(view, array, /*convert=*/false)) {
      throw StatusError(not_implemented("{}: numpy dtype {} has no ONNX tensor type Ember supports (strings and "
                                        "objects are not supported)",
                                        what, nb::str(dtype).c_str()));
    }
    in.keep = converted;
    if (is_bf16) {
      Shape shape;
      for (size_t i = 0; i < array.ndim(); ++i) shape.push_back(static_cast<int64_t>(array.shape(i)));
      in.tensor = Tensor(DType::kBF16, std::move(shape), const_cast<void*>(array.data()));
      return in;
    }
  }
  auto dtype = dtype_from_dlpack(array.dtype());
  if (!dtype.is_ok()) throw StatusError(dtype.status().with_context(what + ": "));
  Shape shape;
  for (size_t i = 0; i < array.ndim(); ++i) shape.push_back(static_cast<int64_t>(array.shape(i)));
  in.tensor = Tensor(*dtype, std::move(shape), const_cast<void*>(array.data()));
  return in;
}

nb::object tensor_to_array(Tensor t) {
  // Sequences and optionals would be Python lists and None: not converted yet.
  if (t.dtype() == DType::kString || t.dtype() == DType::kUndefined || dtype_is_container(t.dtype())) {
    throw StatusError(not_implemented("a {} output cannot be returned as a numpy array", dtype_name(t.dtype())));
  }
  if (!t.owns_unique_storage()) t = t.clone();
  const DType dtype = t.dtype();
  auto* owned = new Tensor(std::move(t));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  size_t shape[16];
  if (owned->rank() > 16) throw StatusError(not_implemented("rank {} outputs are not supported", owned->rank()));
  for (int64_t i = 0; i < owned->rank(); ++i) shape[i] = static_cast<size_t>(owned->dim(i));
  nb::ndarray<nb::numpy> array(owned->data(), static_cast<size_t>(owned->rank()), shape, owner, nullptr,
                               dlpack_from_dtype(dtype));
  nb::object out = array.cast();
  if (dtype == DType::kBF16) out = out.attr("view")(bfloat16_dtype());
  return out;
}

std::string ort_type_string(DType t) {
  switch (t) {
    case DType::kF32: return "tensor(float)";
    case DType::kF16: return "tensor(float16)";
    case DType::kBF16: return "tensor(bfloat16)";
    case DType::kF64: return "tensor(double)";
    case DType::kI8: return "tensor(int8)";
    case DType::kI16: return "tensor(int16)";
    case DType::kI32: return "tensor(int32)";
    case DType::kI64: return "tensor(int64)";
    case DType::kU8: return "tensor(uint8)";
    case DType::kU16: return "tensor(uint16)";
    case DType::kU32: return "tensor(uint32)";
    case DType::kU64: return "tensor(uint64)";
    case DType::kBool: return "tensor(bool)";
    case DType::kString: return "tensor(string)";
    case DType::kUndefined: break;
  }
  return "unknown";
}

}  // namespace ember::python

NB_MODULE(_ember, m) {
  m.doc() = "Ember's runtime (use the `ember` package, not this module)";
  ember::python::register_errors();
  ember::python::bind_session(m);
  ember::python::bind_genai(m);
}
