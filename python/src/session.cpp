// ember._ember.Session: runtime::Session for the Python InferenceSession
// (python/ember/_session.py), and IoBinding-style runs into caller buffers.
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <unordered_map>

#include "bindings.h"
#include "onnx/model_loader.h"
#include "runtime/session.h"

namespace ember::python {
namespace {

nb::list io_info(const std::vector<runtime::IoInfo>& infos) {
  nb::list out;
  for (const runtime::IoInfo& info : infos) {
    nb::list shape;
    for (const ir::Dim& d : info.shape) {
      if (d.known()) {
        shape.append(d.value);
      } else if (!d.symbol.empty()) {
        shape.append(d.symbol);
      } else {
        shape.append(nb::none());
      }
    }
    out.append(nb::make_tuple(info.name, ort_type_string(info.dtype), shape));
  }
  return out;
}

std::string names_of(const std::vector<runtime::IoInfo>& infos) {
  std::string s;
  for (const auto& info : infos) s += (s.empty() ? "" : ", ") + info.name;
  return s;
}

class PySession {
 public:
  PySession(nb::object model, int num_threads, bool optimize) {
    runtime::SessionOptions options;
    options.num_threads = num_threads;
    options.optimize = optimize;
    Result<onnx::LoadedModel> loaded = invalid_argument("unreachable");
    if (nb::isinstance<nb::bytes>(model)) {
      nb::bytes b = nb::borrow<nb::bytes>(model);
      auto owned = std::make_shared<std::string>(b.c_str(), b.size());
      nb::gil_scoped_release release;
      std::span<const uint8_t> span(reinterpret_cast<const uint8_t*>(owned->data()), owned->size());
      loaded = onnx::load_model_from_bytes(span, "", owned);
    } else {
      const std::string path = nb::cast<std::string>(nb::str(model));
      nb::gil_scoped_release release;
      loaded = onnx::load_model(path);
    }
    onnx::LoadedModel m = value_or_throw(std::move(loaded));
    metadata_ = std::move(m.metadata);
    {
      nb::gil_scoped_release release;
      session_ = value_or_throw(runtime::Session::create(std::move(m.graph), options));
    }
    for (size_t i = 0; i < session_->inputs().size(); ++i) input_index_.emplace(session_->inputs()[i].name, i);
    for (size_t i = 0; i < session_->outputs().size(); ++i) output_index_.emplace(session_->outputs()[i].name, i);
  }

  nb::list inputs() const { return io_info(session_->inputs()); }
  nb::list outputs() const { return io_info(session_->outputs()); }

  nb::dict metadata() const {
    nb::dict d;
    d["ir_version"] = metadata_.ir_version;
    d["producer_name"] = metadata_.producer_name;
    d["producer_version"] = metadata_.producer_version;
    d["domain"] = metadata_.domain;
    d["version"] = metadata_.model_version;
    d["description"] = metadata_.doc_string;
    d["graph_name"] = metadata_.graph_name;
    d["graph_description"] = metadata_.graph_doc_string;
    nb::dict custom;
    for (const auto& [k, v] : metadata_.metadata_props) custom[k.c_str()] = v;
    d["custom_metadata_map"] = custom;
    return d;
  }

  // Session.run(output_names or None, {name: array}) -> [array]
  nb::list run(nb::handle output_names, nb::dict feed) const {
    std::vector<size_t> wanted;
    if (output_names.is_none()) {
      for (size_t i = 0; i < session_->outputs().size(); ++i) wanted.push_back(i);
    } else {
      for (nb::handle name : output_names) wanted.push_back(output_position(nb::cast<std::string>(name)));
    }
    std::vector<ArrayInput> arrays;
    std::vector<runtime::NamedInput> named;
    arrays.reserve(feed.size());
    named.reserve(feed.size());
    for (auto [key, value] : feed) {
      std::string name = nb::cast<std::string>(key);
      const DType declared = session_->inputs()[input_position(name)].dtype;
      arrays.push_back(array_to_tensor(value, "input '" + name + "'", declared));
      named.push_back({std::move(name), nullptr});
    }
    for (size_t i = 0; i < named.size(); ++i) named[i].tensor = &arrays[i].tensor;
    Result<std::vector<Tensor>> outputs = invalid_argument("unreachable");
    {
      nb::gil_scoped_release release;
      outputs = session_->run(named);
    }
    std::vector<Tensor> results = value_or_throw(std::move(outputs));
    nb::list out;
    std::vector<size_t> first(results.size(), SIZE_MAX);
    for (size_t i : wanted) {
      if (first[i] != SIZE_MAX) {  // asked for twice: a copy
        out.append(out[first[i]].attr("copy")());
        continue;
      }
      first[i] = out.size();
      out.append(tensor_to_array(std::move(results[i])));
    }
    return out;
  }

  // IoBinding: `inputs` {name: array}; `outputs` [(name, array or None)] in the
  // caller's order: an array is written in place (its dtype and shape must be
  // what the run computes), None gets a new array. Returns the outputs' arrays.
  nb::list run_bound(nb::dict inputs, nb::list outputs) const {
    const auto& infos = session_->inputs();
    std::vector<ArrayInput> arrays(infos.size());
    std::vector<const Tensor*> positional(infos.size(), nullptr);
    for (auto [key, value] : inputs) {
      const std::string name = nb::cast<std::string>(key);
      const size_t i = input_position(name);
      arrays[i] = array_to_tensor(value, "input '" + name + "'", infos[i].dtype);
      positional[i] = &arrays[i].tensor;
    }
    for (size_t i = 0; i < infos.size(); ++i) {
      if (!positional[i] && !infos[i].has_default) {
        throw StatusError(invalid_argument("input '{}' is not bound", infos[i].name));
      }
    }
    const size_t n_out = session_->outputs().size();
    std::vector<ArrayInput> bound(n_out);
    std::vector<nb::object> result(n_out);
    std::vector<bool> wanted(n_out, false);
    std::vector<size_t> order;
    for (nb::handle item : outputs) {
      const std::string name = nb::cast<std::string>(item[0]);
      const size_t k = output_position(name);
      wanted[k] = true;
      order.push_back(k);
      nb::handle array = item[1];
      if (array.is_none()) continue;
      if (!nb::cast<bool>(array.attr("flags").attr("writeable"))) {
        throw StatusError(invalid_argument("output '{}' is bound to a read-only array", name));
      }
      bound[k] = array_to_tensor(array, "output '" + name + "'");
      if (!bound[k].keep.is(array)) {
        throw StatusError(invalid_argument("output '{}' must be bound to a C-contiguous numpy array", name));
      }
      result[k] = nb::borrow(array);
    }
    std::vector<runtime::PlannedOutput> planned(n_out);
    std::unique_ptr<runtime::PreparedRun> prepared;
    {
      nb::gil_scoped_release release;
      prepared = value_or_throw(session_->prepare(positional, planned));
    }
    bool all_known = true;
    for (size_t k = 0; k < n_out; ++k) all_known = all_known && (!wanted[k] || result[k] || planned[k].known);
    std::vector<Tensor> fresh(n_out);
    std::vector<Tensor*> targets(n_out, nullptr);
    if (all_known) {
      for (size_t k = 0; k < n_out; ++k) {
        if (result[k]) {
          targets[k] = &bound[k].tensor;
        } else if (wanted[k]) {
          fresh[k] = Tensor::allocate_uninitialized(planned[k].dtype, planned[k].shape);
          targets[k] = &fresh[k];
        }
      }
      Status s;
      {
        nb::gil_scoped_release release;
        s = prepared->run_bound(positional, targets);
      }
      throw_if_error(s);
    } else {
      // An output whose shape only the run finds (after NonZero, ...): run, then copy into bound arrays.
      std::vector<Tensor> computed;
      Status s;
      {
        nb::gil_scoped_release release;
        s = prepared->run(positional, computed);
      }
      throw_if_error(s);
      for (size_t k = 0; k < n_out; ++k) {
        if (result[k]) {
          const Tensor& want = bound[k].tensor;
          if (want.dtype() != computed[k].dtype() || want.shape() != computed[k].shape()) {
            throw StatusError(invalid_argument("output '{}' is bound to {} but the run computed {}",
                                               session_->outputs()[k].name, want.describe(), computed[k].describe()));
          }
          std::memcpy(bound[k].tensor.data(), computed[k].data(), computed[k].nbytes());
        } else if (wanted[k]) {
          fresh[k] = std::move(computed[k]);
        }
      }
    }
    nb::list out;
    for (size_t k : order) out.append(result[k] ? result[k] : tensor_to_array(std::move(fresh[k])));
    return out;
  }

 private:
  size_t input_position(const std::string& name) const {
    auto it = input_index_.find(name);
    if (it == input_index_.end()) {
      throw StatusError(
          invalid_argument("'{}' is not an input of the model (inputs: {})", name, names_of(session_->inputs())));
    }
    return it->second;
  }
  size_t output_position(const std::string& name) const {
    auto it = output_index_.find(name);
    if (it == output_index_.end()) {
      throw StatusError(
          invalid_argument("'{}' is not an output of the model (outputs: {})", name, names_of(session_->outputs())));
    }
    return it->second;
  }

  std::unique_ptr<runtime::Session> session_;
  onnx::ModelMetadata metadata_;
  std::unordered_map<std::string, size_t> input_index_, output_index_;
};

}  // namespace

void bind_session(nb::module_& m) {
  nb::class_<PySession>(m, "Session")
      .def(nb::init<nb::object, int, bool>(), nb::arg("model"), nb::arg("num_threads"), nb::arg("optimize"))
      .def("inputs", &PySession::inputs)
      .def("outputs", &PySession::outputs)
      .def("metadata", &PySession::metadata)
      .def("run", &PySession::run, nb::arg("output_names").none(), nb::arg("feed"))
      .def("run_bound", &PySession::run_bound, nb::arg("inputs"), nb::arg("outputs"));
}

}  // namespace ember::python
