#include "ort_ep/ort_api.h"

namespace ember::ort_ep {
namespace {

const OrtApi* g_api = nullptr;
const OrtEpApi* g_ep_api = nullptr;

}  // namespace

const OrtApi& api() { return *g_api; }
const OrtEpApi& ep_api() { return *g_ep_api; }

void set_api(const OrtApi* api, const OrtEpApi* ep_api) {
  g_api = api;
  g_ep_api = ep_api;
}

Status from_ort(OrtStatus* s, const char* what) {
  if (!s) return Status::ok();
  Status out(StatusCode::kInternal, fmt::format("onnxruntime {}: {}", what, g_api->GetErrorMessage(s)));
  g_api->ReleaseStatus(s);
  return out;
}

OrtStatus* to_ort(const Status& s) {
  if (s.is_ok()) return nullptr;
  const OrtErrorCode code = s.code() == StatusCode::kInvalidArgument ? ORT_INVALID_ARGUMENT
                            : s.code() == StatusCode::kNotImplemented ? ORT_NOT_IMPLEMENTED
                                                                      : ORT_EP_FAIL;
  return g_api->CreateStatus(code, ("Ember: " + s.message()).c_str());
}

}  // namespace ember::ort_ep
