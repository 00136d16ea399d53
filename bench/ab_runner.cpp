#include "ab_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <string>

#include "compare.h"
#include "ort_reference.h"
#include "runtime/session.h"

namespace ember::bench {
namespace {

using Clock = std::chrono::steady_clock;

double elapsed_us(Clock::time_point t0, Clock::time_point t1) {
  return std::chrono::duration<double, std::micro>(t1 - t0).count();
}

// Nearest rank, upper median for an even count.
double median(std::vector<double> v) {
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

Spread spread(const std::vector<double>& v) {
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return {median(v), *lo, *hi};
}

std::span<const uint8_t> as_bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// Each session gets its own graph: creation rewrites it. The graph may reference
// initializer bytes inside `bytes`, which the caller keeps alive (no keep_alive).
Result<std::unique_ptr<runtime::Session>> ember_session(const CaseModel& model, int threads) {
  runtime::SessionOptions options;
  options.num_threads = threads;
  if (!model.path.empty()) return runtime::Session::load(model.path, options);
  return runtime::Session::load_from_bytes(as_bytes(model.bytes), options);
}

Result<std::unique_ptr<ortref::OrtSession>> ort_session(const CaseModel& model, const ortref::OrtOptions& options) {
  if (!model.path.empty()) return ortref::OrtSession::load(model.path, options);
  return ortref::OrtSession::load_from_bytes(as_bytes(model.bytes), options);
}

// ORT reports a missing kernel as ORT_NOT_IMPLEMENTED: "Could not find an
// implementation for Erf(13) node with name 'n0'".
bool ort_lacks_kernel(const Status& s) {
  return s.code() == StatusCode::kNotImplemented ||
         s.message().find("Could not find an implementation") != std::string::npos;
}

// Empty when every output agrees within compare.h's tolerance for its dtype;
// otherwise which output disagrees and how. `names` are the outputs' names.
std::string compare_tensors(const std::vector<std::string>& names, const std::vector<Tensor>& mine,
                            const std::vector<Tensor>& theirs, const CaseModel& model) {
  if (mine.size() != theirs.size())
    return fmt::format("ours gives {} outputs, ONNX Runtime {}", mine.size(), theirs.size());
  bool compared_logits = false;
  for (size_t i = 0; i < mine.size(); ++i) {
    if (model.rms_tolerance) {
      if (names[i] != "logits") continue;
      if (theirs[i].dtype() != DType::kF32 || !(mine[i].shape() == theirs[i].shape())) {
        return fmt::format("output 'logits': ours gives {}, ONNX Runtime {}", mine[i].describe(), theirs[i].describe());
      }
      compared_logits = true;
      if (Status s = ortref::check_logits(ortref::compare_logits(mine[i], theirs[i]), *model.rms_tolerance); !s.is_ok())
        return fmt::format("output 'logits': {}", s.message());
      continue;
    }
    const Tolerance tolerance = model.tolerance.value_or(ortref::default_tolerance(theirs[i].dtype()));
    if (Status s = ortref::compare(mine[i], theirs[i], tolerance); !s.is_ok())
      return fmt::format("output '{}': {}", names[i], s.message());
  }
  if (model.rms_tolerance && !compared_logits) return std::string("the model has no output named 'logits' to compare");
  return std::string();
}

std::vector<ortref::OrtInput> ort_inputs(const CaseModel& model) {
  std::vector<ortref::OrtInput> inputs;
  for (const CaseInput& in : model.inputs) inputs.push_back({in.name, &in.value});
  return inputs;
}

Result<std::string> compare_outputs(const runtime::Session& ember, const ortref::OrtSession& ort,
                                    const CaseModel& model) {
  std::vector<runtime::NamedInput> named;
  for (const CaseInput& in : model.inputs) named.push_back({in.name, &in.value});
  EMBER_ASSIGN_OR_RETURN(std::vector<Tensor> mine, ember.run(named));
  EMBER_ASSIGN_OR_RETURN(std::vector<Tensor> theirs, ort.run(ort_inputs(model)));
  std::vector<std::string> names;
  for (const runtime::IoInfo& o : ember.outputs()) names.push_back(o.name);
  return compare_tensors(names, mine, theirs, model);
}

// The same, with ORT + the Ember EP as ours.
Result<std::string> compare_outputs(const ortref::OrtSession& ours, const ortref::OrtSession& ort,
                                    const CaseModel& model) {
  EMBER_ASSIGN_OR_RETURN(std::vector<Tensor> mine, ours.run(ort_inputs(model)));
  EMBER_ASSIGN_OR_RETURN(std::vector<Tensor> theirs, ort.run(ort_inputs(model)));
  return compare_tensors(ours.output_names(), mine, theirs, model);
}

// With bound outputs each system writes into its own copy of the bound inputs.
std::vector<Tensor> bound_copies(const CaseModel& model) {
  std::vector<Tensor> copies;
  for (const auto& [out, in] : model.bound_outputs) {
    auto it = std::find_if(model.inputs.begin(), model.inputs.end(), [&](const CaseInput& c) { return c.name == in; });
    copies.push_back(it == model.inputs.end() ? Tensor() : it->value.clone());
  }
  return copies;
}

const Tensor* input_for(const CaseModel& model, const std::vector<Tensor>& copies, const CaseInput& in) {
  for (size_t b = 0; b < model.bound_outputs.size(); ++b) {
    if (model.bound_outputs[b].second == in.name) return &copies[b];
  }
  return &in.value;
}

// An ORT session's timed inputs, wrapped once; bound outputs write into `copies`.
Result<ortref::OrtSession::PreparedInputs> prepare_ort(const ortref::OrtSession& session, const CaseModel& model,
                                                       std::vector<Tensor>& copies) {
  std::vector<ortref::OrtInput> ins, outs;
  for (const CaseInput& in : model.inputs) ins.push_back({in.name, input_for(model, copies, in)});
  for (size_t b = 0; b < model.bound_outputs.size(); ++b) outs.push_back({model.bound_outputs[b].first, &copies[b]});
  return session.prepare(ins, outs);
}

struct TimedSystem {
  std::function<Status()> run;
  std::vector<double> round_us;  // this round's trials
  std::vector<double> all_us;    // every round's trials
};

// How a trial runs the systems. At one thread, one run each. With worker
// threads, each system's idle workers spin for a while after its run; run
// back to back, the next system found a core taken by the previous one's
// spinning worker (at 2 threads Ember's Tanh over 1 Mi floats took its
// 1-thread time, 284 us against ORT's 137). So with workers a trial runs each
// system as a block: untimed runs for `settle_us` (the previous system's
// workers park, this one's wake), then `block` timed runs. ORT's workers spin
// for 2^20 pause iterations before blocking (EigenNonBlockingThreadPool.h), tens
// of milliseconds here: with 2 and 10 ms of settling Ember's worker still
// shared its core with ORT's spinning one in some rounds (Sigmoid over 1 Mi
// floats read 0.79-1.59 across rounds); with 50 ms rounds agree.
struct TrialShape {
  int block = 1;
  double settle_us = 0;
};

TrialShape trial_shape(int threads) {
  if (threads <= 1) return {};
  return {16, 50000.0};
}

// The systems in an order drawn per trial: with a fixed order each system
// always follows the same other one, and the null control at 4Ki read 1.03-1.06
// (ORT-null measured slower than ORT: the state a predecessor leaves in caches
// and branch predictors differs); shuffled, it reads 0.995-1.006.
Status trial(std::vector<TimedSystem>& systems, const TrialShape& shape, std::minstd_rand& rng, bool record) {
  std::array<size_t, 3> order{0, 1, 2};
  std::shuffle(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(systems.size()), rng);
  for (size_t k = 0; k < systems.size(); ++k) {
    TimedSystem& s = systems[order[k]];
    const Clock::time_point settle_start = Clock::now();
    while (shape.settle_us > 0 && elapsed_us(settle_start, Clock::now()) < shape.settle_us) {
      EMBER_RETURN_IF_ERROR(s.run());
    }
    for (int b = 0; b < shape.block; ++b) {
      const Clock::time_point t0 = Clock::now();
      Status status = s.run();
      const Clock::time_point t1 = Clock::now();
      if (!status.is_ok()) return status;
      if (record) s.round_us.push_back(elapsed_us(t0, t1));
    }
  }
  return Status::ok();
}

// Warms up, picks the trials per round, then runs the rounds. systems[0] is
// Ember; systems[1] and [2], when present, ORT and the ORT null control.
Status time_systems(std::vector<TimedSystem>& systems, const TrialShape& shape, const RunConfig& config,
                    CaseResult& result) {
  std::minstd_rand rng(7);
  std::vector<double> warm_trial_us;
  const Clock::time_point start = Clock::now();
  const size_t min_trials = static_cast<size_t>(std::max(config.warmup_trials, 1));
  while (warm_trial_us.size() < min_trials || elapsed_us(start, Clock::now()) < config.warmup_ms * 1e3) {
    const Clock::time_point t0 = Clock::now();
    EMBER_RETURN_IF_ERROR(trial(systems, shape, rng, false));
    warm_trial_us.push_back(elapsed_us(t0, Clock::now()));
  }
  const double trial_us = std::max(median(warm_trial_us), 1e-3);
  result.iters = config.iters > 0 ? config.iters
                                  : static_cast<int>(std::clamp(config.round_ms * 1e3 / trial_us,
                                                                shape.block > 1 ? 1.0 : 3.0, 1e6));
  result.rounds = config.rounds;
  for (TimedSystem& s : systems) {
    s.round_us.reserve(static_cast<size_t>(result.iters));
    s.all_us.reserve(static_cast<size_t>(result.iters) * static_cast<size_t>(config.rounds));
  }
  std::vector<double> ratios, null_ratios;
  for (int r = 0; r < config.rounds; ++r) {
    for (TimedSystem& s : systems) s.round_us.clear();
    for (int i = 0; i < result.iters; ++i) EMBER_RETURN_IF_ERROR(trial(systems, shape, rng, true));
    if (systems.size() == 3) {
      const double ours = median(systems[0].round_us), ort = median(systems[1].round_us);
      ratios.push_back(ours / ort);
      null_ratios.push_back(ort / median(systems[2].round_us));
    }
    for (TimedSystem& s : systems) s.all_us.insert(s.all_us.end(), s.round_us.begin(), s.round_us.end());
  }
  result.timed = true;
  result.ours_p50_us = median(systems[0].all_us);
  if (systems.size() == 3) {
    result.has_ort = true;
    result.ort_p50_us = median(systems[1].all_us);
    result.null_p50_us = median(systems[2].all_us);
    result.ratio = spread(ratios);
    result.null_ratio = spread(null_ratios);
  }
  return Status::ok();
}

void set_status(CaseResult& r, CaseStatus status, std::string detail) {
  r.status = status;
  r.detail = std::move(detail);
}

}  // namespace

const char* status_name(CaseStatus s) {
  switch (s) {
    case CaseStatus::kOk: return "ok";
    case CaseStatus::kMismatch: return "MISMATCH";
    case CaseStatus::kUnsupported: return "unsupported";
    case CaseStatus::kOrtNoKernel: return "ORT: no kernel";
    case CaseStatus::kError: return "error";
  }
  return "?";
}

const char* ours_name(const RunConfig& config) { return config.via_ort_ep ? "ORT + Ember EP" : "Ember"; }

namespace {

// Plain ORT and its null control, checked against ours and added to `systems`
// (ours is systems[0]). Leaves result.detail empty when ORT can run the model.
struct OrtPair {
  Result<std::unique_ptr<ortref::OrtSession>> ort = internal_error("not created");
  Result<std::unique_ptr<ortref::OrtSession>> null = internal_error("not created");
  std::vector<Tensor> ort_bound, null_bound;
  ortref::OrtSession::PreparedInputs ort_prepared, null_prepared;
};

void create_ort_pair(const CaseModel& model, int threads, OrtPair& pair, CaseResult& result) {
  const ortref::OrtOptions options{threads, ortref::OrtOptLevel::kAll};
  pair.ort = ort_session(model, options);
  pair.null = ort_session(model, options);
  for (const auto* s : {&pair.ort, &pair.null}) {
    if (s->is_ok() || !result.detail.empty()) continue;
    set_status(result, ort_lacks_kernel(s->status()) ? CaseStatus::kOrtNoKernel : CaseStatus::kError,
               s->status().message());
  }
}

// Appends the two ORT systems; false (with result set) on failure.
bool add_ort_systems(const CaseModel& model, OrtPair& pair, std::vector<TimedSystem>& systems, CaseResult& result) {
  pair.ort_bound = bound_copies(model);
  pair.null_bound = bound_copies(model);
  auto p = prepare_ort(**pair.ort, model, pair.ort_bound);
  auto q = prepare_ort(**pair.null, model, pair.null_bound);
  if (!p.is_ok() || !q.is_ok()) {
    set_status(result, CaseStatus::kError, (p.is_ok() ? q.status() : p.status()).message());
    return false;
  }
  pair.ort_prepared = std::move(*p);
  pair.null_prepared = std::move(*q);
  systems.push_back({[&pair] { return (*pair.ort)->run_prepared(pair.ort_prepared); }, {}, {}});
  systems.push_back({[&pair] { return (*pair.null)->run_prepared(pair.null_prepared); }, {}, {}});
  return true;
}

void finish_times(const CaseModel& model, CaseResult& result) {
  const double copies = static_cast<double>(model.copies);
  result.ours_p50_us /= copies;
  result.ort_p50_us /= copies;
  result.null_p50_us /= copies;
}

// The plain ORT pair for `model` (when it can be made: `with_ort`), and ours'
// outputs checked against it; false when the case ended in an error (in `result`).
template <typename Ours>
bool pair_and_compare(const Ours& ours, const CaseModel& model, int threads, OrtPair& pair, CaseResult& result,
                      bool& with_ort) {
  create_ort_pair(model, threads, pair, result);
  with_ort = result.detail.empty();
  if (!with_ort) return true;
  auto agree = compare_outputs(ours, **pair.ort, model);
  if (!agree.is_ok()) {
    set_status(result, CaseStatus::kError, agree.status().message());
    return false;
  }
  if (!agree->empty()) set_status(result, CaseStatus::kMismatch, *agree);
  return true;
}

// Times `systems` (ours first), with the ORT pair's two sessions added when there is a pair.
void time_against_ort(std::vector<TimedSystem>& systems, bool with_ort, const CaseModel& model, OrtPair& pair,
                      int threads, const RunConfig& config, CaseResult& result) {
  if (with_ort && !add_ort_systems(model, pair, systems, result)) return;
  if (Status s = time_systems(systems, trial_shape(threads), config, result); !s.is_ok()) {
    set_status(result, CaseStatus::kError, s.message());
  }
  finish_times(model, result);
}

// Ours: ORT with the Ember EP appended. Ember's threads follow `threads` (the
// EP option num_threads); ORT's intra-op threads too, as in plain ORT.
CaseResult run_case_via_ep(const std::string& name, const CaseModel& model, int threads, const RunConfig& config) {
  CaseResult result;
  result.name = name;
  result.threads = threads;
  ortref::OrtOptions ep_options{threads, ortref::OrtOptLevel::kAll};
  ep_options.plugin_ep = kEmberEp;
  ep_options.plugin_ep_options = {{"num_threads", std::to_string(threads)}};
  if (!config.ep_spinning) ep_options.config_entries = {{"session.intra_op.allow_spinning", "0"}};
  auto ours = ort_session(model, ep_options);
  if (!ours.is_ok()) {
    set_status(result, CaseStatus::kError, "ORT + Ember EP: " + ours.status().message());
    return result;
  }
  OrtPair pair;
  bool with_ort = false;
  if (!pair_and_compare(**ours, model, threads, pair, result, with_ort)) return result;
  std::vector<Tensor> ours_bound = bound_copies(model);
  auto ours_prepared = prepare_ort(**ours, model, ours_bound);
  if (!ours_prepared.is_ok()) {
    set_status(result, CaseStatus::kError, ours_prepared.status().message());
    return result;
  }
  std::vector<TimedSystem> systems;
  systems.push_back({[&] { return (*ours)->run_prepared(*ours_prepared); }, {}, {}});
  time_against_ort(systems, with_ort, model, pair, threads, config, result);
  return result;
}

}  // namespace

CaseResult run_case(const std::string& name, const CaseModel& model, int threads, const RunConfig& config) {
  if (config.via_ort_ep) return run_case_via_ep(name, model, threads, config);
  CaseResult result;
  result.name = name;
  result.threads = threads;
  auto ember = ember_session(model, threads);
  if (!ember.is_ok()) {
    const bool unsupported = ember.status().code() == StatusCode::kNotImplemented;
    set_status(result, unsupported ? CaseStatus::kUnsupported : CaseStatus::kError,
               "Ember: " + ember.status().message());
    return result;
  }
  OrtPair pair;
  bool with_ort = false;
  if (!pair_and_compare(**ember, model, threads, pair, result, with_ort)) return result;

  std::vector<Tensor> ember_bound = bound_copies(model);
  std::vector<const Tensor*> positional;
  for (const runtime::IoInfo& info : (*ember)->inputs()) {
    auto it = std::find_if(model.inputs.begin(), model.inputs.end(),
                           [&](const CaseInput& in) { return in.name == info.name; });
    positional.push_back(it == model.inputs.end() ? nullptr : input_for(model, ember_bound, *it));
  }
  std::vector<Tensor*> ember_outputs((*ember)->outputs().size(), nullptr);
  for (size_t b = 0; b < model.bound_outputs.size(); ++b) {
    const auto& outs = (*ember)->outputs();
    auto it = std::find_if(outs.begin(), outs.end(), [&](const runtime::IoInfo& o) { return o.name == model.bound_outputs[b].first; });
    if (it != outs.end()) ember_outputs[static_cast<size_t>(it - outs.begin())] = &ember_bound[b];
  }

  std::vector<Tensor> outputs;
  std::vector<TimedSystem> systems;
  if (model.bound_outputs.empty()) {
    systems.push_back({[&] { return (*ember)->run(positional, outputs); }, {}, {}});
  } else {
    systems.push_back({[&] { return (*ember)->run_bound(positional, ember_outputs); }, {}, {}});
  }
  time_against_ort(systems, with_ort, model, pair, threads, config, result);
  return result;
}

}  // namespace ember::bench
