#include "ort_reference.h"

#include <algorithm>
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <mutex>
#include <utility>

#include <onnxruntime_c_api.h>

namespace ember::ortref {
namespace {

using OrtSessionHandle = ::OrtSession;

// The library, its API table and one environment, set up once per process. The
// library is never unloaded: ONNX Runtime does not support dlclose while its
// thread pools or static state may still be alive.
struct Runtime {
  const OrtApi* api = nullptr;
  OrtEnv* env = nullptr;
  std::string version;
  Status status;

  ~Runtime() {
    if (env) api->ReleaseEnv(env);
  }
};

Status load_runtime(Runtime& rt) {
  const char* from_env = std::getenv("EMBER_ORT_LIBRARY");
  std::string path = from_env && *from_env ? from_env : EMBER_ORT_LIBRARY;
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) return Status(StatusCode::kNotFound, fmt::format("cannot load ONNX Runtime '{}': {}", path, dlerror()));
  using GetApiBase = const OrtApiBase* (*)();
  auto get_base = reinterpret_cast<GetApiBase>(dlsym(lib, "OrtGetApiBase"));
  if (!get_base) return internal_error("'{}' has no OrtGetApiBase", path);
  const OrtApiBase* base = get_base();
  rt.version = base->GetVersionString();
  rt.api = base->GetApi(ORT_API_VERSION);
  if (!rt.api) {
    // An older library than the headers: its API table is a prefix of the
    // header's (the table is append-only), and everything used here predates
    // version 10, so its own version ("1.MINOR.x" -> MINOR) is enough.
    int minor = 0;
    if (std::sscanf(rt.version.c_str(), "1.%d", &minor) == 1 && minor > 0 && minor < ORT_API_VERSION)
      rt.api = base->GetApi(static_cast<uint32_t>(minor));
  }
  if (!rt.api)
    return internal_error("ONNX Runtime {} at '{}' supports neither API version {} nor its own", rt.version, path,
                          ORT_API_VERSION);
  if (OrtStatus* s = rt.api->CreateEnv(ORT_LOGGING_LEVEL_ERROR, "ember_ortref", &rt.env)) {
    std::string msg = rt.api->GetErrorMessage(s);
    rt.api->ReleaseStatus(s);
    return internal_error("ONNX Runtime CreateEnv failed: {}", msg);
  }
  return Status::ok();
}

Runtime& runtime() {
  static Runtime rt;
  static std::once_flag once;
  std::call_once(once, [] { rt.status = load_runtime(rt); });
  return rt;
}

StatusCode code_of(OrtErrorCode code) {
  switch (code) {
    case ORT_INVALID_ARGUMENT: return StatusCode::kInvalidArgument;
    case ORT_NO_SUCHFILE:
    case ORT_NOT_FOUND: return StatusCode::kNotFound;
    case ORT_NO_MODEL:
    case ORT_INVALID_PROTOBUF:
    case ORT_INVALID_GRAPH: return StatusCode::kInvalidModel;
    case ORT_NOT_IMPLEMENTED: return StatusCode::kNotImplemented;
    default: return StatusCode::kInternal;
  }
}

// Converts and releases an OrtStatus.
Status check(const OrtApi* api, OrtStatus* s, const char* what) {
  if (!s) return Status::ok();
  Status out(code_of(api->GetErrorCode(s)), fmt::format("onnxruntime {}: {}", what, api->GetErrorMessage(s)));
  api->ReleaseStatus(s);
  return out;
}

#define EMBER_ORT_CHECK(api, call) EMBER_RETURN_IF_ERROR(check(api, api->call, #call))

// Owns one C API object and releases it with the matching Release function.
template <typename T, void (*OrtApi::*Release)(T*)>
class Owned {
 public:
  explicit Owned(const OrtApi* api) : api_(api) {}
  ~Owned() {
    if (p_) (api_->*Release)(p_);
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  T** out() { return &p_; }
  T* get() const { return p_; }
  T* take() { return std::exchange(p_, nullptr); }

 private:
  const OrtApi* api_;
  T* p_ = nullptr;
};

using OwnedOptions = Owned<OrtSessionOptions, &OrtApi::ReleaseSessionOptions>;
using OwnedMemoryInfo = Owned<OrtMemoryInfo, &OrtApi::ReleaseMemoryInfo>;
using OwnedValue = Owned<OrtValue, &OrtApi::ReleaseValue>;
using OwnedShapeInfo = Owned<OrtTensorTypeAndShapeInfo, &OrtApi::ReleaseTensorTypeAndShapeInfo>;

Result<const OrtApi*> api_or_error() {
  Runtime& rt = runtime();
  if (!rt.status.is_ok()) return rt.status;
  return rt.api;
}

Status check_tensor_dtype(const Tensor& t, const std::string& name) {
  if (t.dtype() == DType::kString || dtype_size(t.dtype()) == 0)
    return not_implemented("input '{}': dtype {} is not supported by the ONNX Runtime harness", name,
                           dtype_name(t.dtype()));
  return Status::ok();
}

// ONNXTensorElementDataType numbers are TensorProto.DataType numbers, as DType's are.
ONNXTensorElementDataType ort_type(DType t) { return static_cast<ONNXTensorElementDataType>(static_cast<int>(t)); }

// A copy of `t` in memory ONNX Runtime allocates (handles zero-size tensors,
// which have no data pointer to wrap).
Status copy_to_ort(const OrtApi* api, const Tensor& t, OrtValue** out) {
  OrtAllocator* alloc = nullptr;
  EMBER_ORT_CHECK(api, GetAllocatorWithDefaultOptions(&alloc));
  EMBER_ORT_CHECK(api, CreateTensorAsOrtValue(alloc, t.shape().data(), t.shape().size(), ort_type(t.dtype()), out));
  if (t.nbytes() == 0) return Status::ok();
  void* dst = nullptr;
  EMBER_ORT_CHECK(api, GetTensorMutableData(*out, &dst));
  std::memcpy(dst, t.data(), t.nbytes());
  return Status::ok();
}

Result<Tensor> tensor_from_ort(const OrtApi* api, OrtValue* value, const std::string& name) {
  ONNXType kind = ONNX_TYPE_UNKNOWN;
  EMBER_ORT_CHECK(api, GetValueType(value, &kind));
  if (kind != ONNX_TYPE_TENSOR) return not_implemented("output '{}' is not a tensor (ONNXType {})", name, int(kind));
  OwnedShapeInfo info(api);
  EMBER_ORT_CHECK(api, GetTensorTypeAndShape(value, info.out()));
  ONNXTensorElementDataType elem{};
  size_t rank = 0;
  EMBER_ORT_CHECK(api, GetTensorElementType(info.get(), &elem));
  EMBER_ORT_CHECK(api, GetDimensionsCount(info.get(), &rank));
  Shape shape(rank);
  EMBER_ORT_CHECK(api, GetDimensions(info.get(), shape.data(), rank));
  auto dtype = static_cast<DType>(static_cast<int>(elem));
  if (!dtype_is_known(static_cast<int32_t>(elem)) || dtype == DType::kString || dtype_size(dtype) == 0)
    return not_implemented("output '{}' has element type {}, which Ember cannot hold", name, int(elem));
  Tensor out = Tensor::allocate(dtype, shape);
  if (out.nbytes() == 0) return out;
  void* src = nullptr;
  EMBER_ORT_CHECK(api, GetTensorMutableData(value, &src));
  std::memcpy(out.data(), src, out.nbytes());
  return out;
}

// The input or output names in graph order.
Status read_io_names(const OrtApi* api, const OrtSessionHandle* session, bool inputs, std::vector<std::string>& names) {
  OrtAllocator* alloc = nullptr;
  EMBER_ORT_CHECK(api, GetAllocatorWithDefaultOptions(&alloc));
  size_t count = 0;
  if (inputs) {
    EMBER_ORT_CHECK(api, SessionGetInputCount(session, &count));
  } else {
    EMBER_ORT_CHECK(api, SessionGetOutputCount(session, &count));
  }
  for (size_t i = 0; i < count; ++i) {
    char* name = nullptr;
    if (inputs) {
      EMBER_ORT_CHECK(api, SessionGetInputName(session, i, alloc, &name));
    } else {
      EMBER_ORT_CHECK(api, SessionGetOutputName(session, i, alloc, &name));
    }
    names.emplace_back(name);
    EMBER_ORT_CHECK(api, AllocatorFree(alloc, name));
  }
  return Status::ok();
}

}  // namespace

Result<std::string> ort_version() {
  Runtime& rt = runtime();
  if (!rt.status.is_ok()) return rt.status;
  return rt.version;
}

Status register_ep_library(const std::string& registration_name, const std::string& path) {
  EMBER_ASSIGN_OR_RETURN(const OrtApi* api, api_or_error());
  EMBER_ORT_CHECK(api, RegisterExecutionProviderLibrary(runtime().env, registration_name.c_str(), path.c_str()));
  return Status::ok();
}

Status unregister_ep_library(const std::string& registration_name) {
  EMBER_ASSIGN_OR_RETURN(const OrtApi* api, api_or_error());
  EMBER_ORT_CHECK(api, UnregisterExecutionProviderLibrary(runtime().env, registration_name.c_str()));
  return Status::ok();
}

namespace {

Result<std::span<const OrtEpDevice* const>> ep_devices(const OrtApi* api) {
  const OrtEpDevice* const* devices = nullptr;
  size_t count = 0;
  EMBER_ORT_CHECK(api, GetEpDevices(runtime().env, &devices, &count));
  return std::span<const OrtEpDevice* const>(devices, count);
}

Result<const OrtEpDevice*> find_ep_device(const OrtApi* api, const std::string& ep_name) {
  EMBER_ASSIGN_OR_RETURN(auto devices, ep_devices(api));
  for (const OrtEpDevice* device : devices) {
    if (ep_name == api->EpDevice_EpName(device)) return device;
  }
  return Status(StatusCode::kNotFound, fmt::format("no device of execution provider '{}' is registered", ep_name));
}

}  // namespace

Result<std::vector<std::string>> ep_device_names() {
  EMBER_ASSIGN_OR_RETURN(const OrtApi* api, api_or_error());
  EMBER_ASSIGN_OR_RETURN(auto devices, ep_devices(api));
  std::vector<std::string> names;
  for (const OrtEpDevice* device : devices) names.emplace_back(api->EpDevice_EpName(device));
  return names;
}

Result<std::unique_ptr<OrtSession>> OrtSession::load(const std::string& path, OrtOptions options) {
  return create(path, {}, options);
}

Result<std::unique_ptr<OrtSession>> OrtSession::load_from_bytes(std::span<const uint8_t> bytes, OrtOptions options) {
  return create({}, bytes, options);
}

Result<std::unique_ptr<OrtSession>> OrtSession::create(const std::string& path, std::span<const uint8_t> bytes,
                                                       const OrtOptions& options) {
  EMBER_ASSIGN_OR_RETURN(const OrtApi* api, api_or_error());
  OwnedOptions opts(api);
  EMBER_ORT_CHECK(api, CreateSessionOptions(opts.out()));
  EMBER_ORT_CHECK(api, SetIntraOpNumThreads(opts.get(), options.intra_op_threads));
  EMBER_ORT_CHECK(api, SetInterOpNumThreads(opts.get(), 1));
  EMBER_ORT_CHECK(api, SetSessionExecutionMode(opts.get(), ORT_SEQUENTIAL));
  EMBER_ORT_CHECK(api, SetSessionGraphOptimizationLevel(opts.get(),
                                                  static_cast<GraphOptimizationLevel>(options.optimization)));
  if (!options.plugin_ep.empty()) {
    EMBER_ASSIGN_OR_RETURN(const OrtEpDevice* device, find_ep_device(api, options.plugin_ep));
    std::vector<const char*> keys, values;
    for (const auto& [k, v] : options.plugin_ep_options) {
      keys.push_back(k.c_str());
      values.push_back(v.c_str());
    }
    EMBER_ORT_CHECK(api, SessionOptionsAppendExecutionProvider_V2(opts.get(), runtime().env, &device, 1, keys.data(),
                                                                  values.data(), keys.size()));
  }
  for (const auto& [k, v] : options.config_entries) {
    EMBER_ORT_CHECK(api, AddSessionConfigEntry(opts.get(), k.c_str(), v.c_str()));
  }
  if (options.disable_cpu_ep_fallback) {
    EMBER_ORT_CHECK(api, AddSessionConfigEntry(opts.get(), "session.disable_cpu_ep_fallback", "1"));
  }
  if (options.record_ep_assignment) {
    EMBER_ORT_CHECK(api, AddSessionConfigEntry(opts.get(), "session.record_ep_graph_assignment_info", "1"));
  }
  std::unique_ptr<OrtSession> self(new OrtSession());
  OrtSessionHandle* handle = nullptr;
  OrtStatus* s = path.empty()
                     ? api->CreateSessionFromArray(runtime().env, bytes.data(), bytes.size(), opts.get(), &handle)
                     : api->CreateSession(runtime().env, path.c_str(), opts.get(), &handle);
  EMBER_RETURN_IF_ERROR(check(api, s, path.empty() ? "loading model bytes" : "loading model"));
  self->session_ = handle;
  EMBER_RETURN_IF_ERROR(read_io_names(api, handle, true, self->input_names_));
  EMBER_RETURN_IF_ERROR(read_io_names(api, handle, false, self->output_names_));
  for (const std::string& n : self->output_names_) self->output_name_ptrs_.push_back(n.c_str());
  return self;
}

OrtSession::~OrtSession() {
  if (session_) runtime().api->ReleaseSession(static_cast<OrtSessionHandle*>(session_));
}

Result<std::vector<Tensor>> OrtSession::run(std::span<const OrtInput> inputs) const {
  const OrtApi* api = runtime().api;
  std::vector<const char*> names;
  std::vector<std::unique_ptr<OwnedValue>> owned;
  std::vector<const OrtValue*> values;
  for (const OrtInput& in : inputs) {
    EMBER_RETURN_IF_ERROR(check_tensor_dtype(*in.tensor, in.name));
    owned.push_back(std::make_unique<OwnedValue>(api));
    EMBER_RETURN_IF_ERROR(copy_to_ort(api, *in.tensor, owned.back()->out()).with_context(
        fmt::format("input '{}': ", in.name)));
    names.push_back(in.name.c_str());
    values.push_back(owned.back()->get());
  }
  std::vector<OrtValue*> outs(output_names_.size(), nullptr);
  Status run_status = check(api,
                            api->Run(static_cast<OrtSessionHandle*>(session_), nullptr, names.data(), values.data(),
                                     values.size(), output_name_ptrs_.data(), outs.size(), outs.data()),
                            "Run");
  std::vector<Tensor> result;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (run_status.is_ok()) {
      Result<Tensor> t = tensor_from_ort(api, outs[i], output_names_[i]);
      if (t.is_ok()) {
        result.push_back(std::move(t).value());
      } else {
        run_status = t.status();
      }
    }
    if (outs[i]) api->ReleaseValue(outs[i]);
  }
  if (!run_status.is_ok()) return run_status;
  return result;
}

Result<std::vector<EpAssignedSubgraph>> OrtSession::ep_assignment() const {
  const OrtApi* api = runtime().api;
  const OrtEpAssignedSubgraph* const* subgraphs = nullptr;
  size_t count = 0;
  EMBER_ORT_CHECK(api, Session_GetEpGraphAssignmentInfo(static_cast<OrtSessionHandle*>(session_), &subgraphs, &count));
  std::vector<EpAssignedSubgraph> result(count);
  for (size_t i = 0; i < count; ++i) {
    const char* ep = nullptr;
    EMBER_ORT_CHECK(api, EpAssignedSubgraph_GetEpName(subgraphs[i], &ep));
    result[i].ep_name = ep ? ep : "";
    const OrtEpAssignedNode* const* nodes = nullptr;
    size_t num_nodes = 0;
    EMBER_ORT_CHECK(api, EpAssignedSubgraph_GetNodes(subgraphs[i], &nodes, &num_nodes));
    for (size_t k = 0; k < num_nodes; ++k) {
      const char* name = nullptr;
      const char* domain = nullptr;
      const char* op = nullptr;
      EMBER_ORT_CHECK(api, EpAssignedNode_GetName(nodes[k], &name));
      EMBER_ORT_CHECK(api, EpAssignedNode_GetDomain(nodes[k], &domain));
      EMBER_ORT_CHECK(api, EpAssignedNode_GetOperatorType(nodes[k], &op));
      result[i].node_names.emplace_back(name ? name : "");
      result[i].op_types.push_back(fmt::format("{}:{}", domain ? domain : "", op ? op : ""));
    }
  }
  return result;
}

OrtSession::PreparedInputs::PreparedInputs(PreparedInputs&& other) noexcept
    : names_(std::move(other.names_)),
      name_ptrs_(std::move(other.name_ptrs_)),
      values_(std::move(other.values_)),
      outputs_(std::move(other.outputs_)) {
  other.values_.clear();
  other.outputs_.clear();
}

OrtSession::PreparedInputs& OrtSession::PreparedInputs::operator=(PreparedInputs&& other) noexcept {
  if (this != &other) {
    release();
    names_ = std::move(other.names_);
    name_ptrs_ = std::move(other.name_ptrs_);
    values_ = std::move(other.values_);
    outputs_ = std::move(other.outputs_);
    other.values_.clear();
    other.outputs_.clear();
  }
  return *this;
}

OrtSession::PreparedInputs::~PreparedInputs() { release(); }

void OrtSession::PreparedInputs::release() {
  for (void* v : values_) runtime().api->ReleaseValue(static_cast<OrtValue*>(v));
  for (void* v : outputs_) {
    if (v) runtime().api->ReleaseValue(static_cast<OrtValue*>(v));
  }
  values_.clear();
  outputs_.clear();
}

Result<OrtSession::PreparedInputs> OrtSession::prepare(std::span<const OrtInput> inputs,
                                                      std::span<const OrtInput> outputs) const {
  const OrtApi* api = runtime().api;
  OwnedMemoryInfo mem(api);
  EMBER_ORT_CHECK(api, CreateCpuMemoryInfo(OrtDeviceAllocator, OrtMemTypeDefault, mem.out()));
  PreparedInputs prepared;
  prepared.outputs_.assign(output_names_.size(), nullptr);
  for (const OrtInput& out : outputs) {
    auto it = std::find(output_names_.begin(), output_names_.end(), out.name);
    if (it == output_names_.end()) return invalid_argument("the model has no output '{}' to bind", out.name);
    if (prepared.outputs_[static_cast<size_t>(it - output_names_.begin())]) {
      return invalid_argument("output '{}' is bound twice", out.name);
    }
    const Tensor& t = *out.tensor;
    EMBER_RETURN_IF_ERROR(check_tensor_dtype(t, out.name));
    OwnedValue value(api);
    EMBER_ORT_CHECK(api, CreateTensorWithDataAsOrtValue(mem.get(), const_cast<void*>(t.data()), t.nbytes(),
                                                  t.shape().data(), t.shape().size(), ort_type(t.dtype()),
                                                  value.out()));
    prepared.outputs_[static_cast<size_t>(it - output_names_.begin())] = value.take();
  }
  for (const OrtInput& in : inputs) {
    const Tensor& t = *in.tensor;
    EMBER_RETURN_IF_ERROR(check_tensor_dtype(t, in.name));
    OwnedValue value(api);
    if (t.nbytes() == 0) {
      EMBER_RETURN_IF_ERROR(copy_to_ort(api, t, value.out()));
    } else {
      EMBER_ORT_CHECK(api, CreateTensorWithDataAsOrtValue(mem.get(), const_cast<void*>(t.data()), t.nbytes(),
                                                    t.shape().data(), t.shape().size(), ort_type(t.dtype()),
                                                    value.out()));
    }
    prepared.values_.push_back(value.take());
    prepared.names_.push_back(in.name);
  }
  for (const std::string& n : prepared.names_) prepared.name_ptrs_.push_back(n.c_str());
  return prepared;
}

Status OrtSession::run_prepared(const PreparedInputs& inputs) const {
  const OrtApi* api = runtime().api;
  SmallVector<OrtValue*, 8> outs(output_names_.size(), nullptr);
  for (size_t i = 0; i < outs.size(); ++i) outs[i] = static_cast<OrtValue*>(inputs.outputs_[i]);
  Status s = check(api,
                   api->Run(static_cast<OrtSessionHandle*>(session_), nullptr, inputs.name_ptrs_.data(),
                            reinterpret_cast<const OrtValue* const*>(inputs.values_.data()), inputs.values_.size(),
                            output_name_ptrs_.data(), outs.size(), outs.data()),
                   "Run");
  for (size_t i = 0; i < outs.size(); ++i) {
    if (outs[i] && !inputs.outputs_[i]) api->ReleaseValue(outs[i]);
  }
  return s;
}

}  // namespace ember::ortref

// LeakSanitizer reads this hook at exit. ONNX Runtime 1.30 itself leaks 14 bytes
// per process once CreateEnv has run, even after ReleaseEnv (seen with a bare
// dlopen + CreateEnv + ReleaseEnv program); leaks inside the library are not
// ours to fix, and without this every test that touches ORT fails under
// EMBER_SANITIZE.
extern "C" __attribute__((used, visibility("default"))) const char* __lsan_default_suppressions() {
  return "leak:libonnxruntime.so\n";
}
