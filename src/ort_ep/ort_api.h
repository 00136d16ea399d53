#pragma once
// The ONNX Runtime API tables the plugin EP was handed in CreateEpFactories, and
// conversions between OrtStatus and ember::Status. Everything ORT-facing in
// src/ort_ep goes through these (the library never links libonnxruntime).
#include <onnxruntime_c_api.h>

#include <exception>
#include <string>
#include <vector>

#include "base/status.h"

namespace ember::ort_ep {

inline constexpr const char* kEpName = "EmberExecutionProvider";

// Set by CreateEpFactories before any other entry point runs.
const OrtApi& api();
const OrtEpApi& ep_api();
void set_api(const OrtApi* api, const OrtEpApi* ep_api);

// Converts (and releases) an OrtStatus returned by an ORT call.
Status from_ort(OrtStatus* s, const char* what);
// An OrtStatus for ORT to own (nullptr when ok).
OrtStatus* to_ort(const Status& s);

// ORT's paired getters (Node_GetNumInputs + Node_GetInputs, ...): the count, then the items.
template <typename T, typename Obj, typename CountFn, typename GetFn>
Result<std::vector<T>> ort_list(CountFn OrtApi::*count, GetFn OrtApi::*get, const Obj* obj, const char* what) {
  size_t n = 0;
  EMBER_RETURN_IF_ERROR(from_ort((api().*count)(obj, &n), what));
  std::vector<T> items(n);
  if (n) EMBER_RETURN_IF_ERROR(from_ort((api().*get)(obj, items.data(), n), what));
  return items;
}

// An ORT callback's body (returning Status) as the OrtStatus ORT expects; an
// exception becomes an internal error whose message starts with `prefix`.
template <typename F>
OrtStatus* guarded(const char* prefix, F&& body) noexcept {
  try {
    return to_ort(body());
  } catch (const std::exception& e) {
    return to_ort(internal_error("{}{}", prefix, e.what()));
  }
}

#define EMBER_ORT(fn, ...) EMBER_RETURN_IF_ERROR(::ember::ort_ep::from_ort(::ember::ort_ep::api().fn(__VA_ARGS__), #fn))

}  // namespace ember::ort_ep
