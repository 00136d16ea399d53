#pragma once
// The ONNX Runtime API tables the plugin EP was handed in CreateEpFactories, and
// conversions between OrtStatus and ember::Status. Everything ORT-facing in
// src/ort_ep goes through these (the library never links libonnxruntime).
#include <onnxruntime_c_api.h>

#include <string>

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

#define EMBER_ORT(fn, ...) EMBER_RETURN_IF_ERROR(::ember::ort_ep::from_ort(::ember::ort_ep::api().fn(__VA_ARGS__), #fn))

}  // namespace ember::ort_ep
