#pragma once
// Times one model in Ember and in ONNX Runtime, interleaved trial by trial, with
// a second ONNX Runtime session of the same model as the null control.
#include <string>
#include <vector>

#include "ab_cases.h"

namespace ember::bench {

struct RunConfig {
  int rounds = 5;
  int iters = 0;            // trials per round; 0: chosen so a round takes about round_ms
  double round_ms = 60.0;   // the three systems together
  double warmup_ms = 20.0;  // untimed trials before the first round, for at least this long
  int warmup_trials = 3;    // and at least this many
  // "Ours" is an ONNX Runtime session with the Ember plugin EP appended (it must
  // be registered as kEmberEp first), against plain ORT.
  bool via_ort_ep = false;
  // With via_ort_ep: leave session.intra_op.allow_spinning at ORT's default ("1")
  // in the EP session instead of "0".
  bool ep_spinning = false;
};

inline constexpr const char* kEmberEp = "EmberExecutionProvider";

// "ours" in reports: "Ember" or "ORT + Ember EP".
const char* ours_name(const RunConfig& config);

// What happened to a case, in the order a reader checks them.
enum class CaseStatus {
  kOk,
  kMismatch,     // Ember's outputs disagree with ORT's (still timed)
  kUnsupported,  // Ember cannot run the model (kNotImplemented at session creation)
  kOrtNoKernel,  // ORT cannot run it: Ember timed alone
  kError,        // anything else; detail says what
};
const char* status_name(CaseStatus s);  // "ok", "MISMATCH", "unsupported", "ORT: no kernel", "error"

struct Spread {
  double p50 = 0, min = 0, max = 0;
};

struct CaseResult {
  std::string name;
  int threads = 1;
  CaseStatus status = CaseStatus::kOk;
  std::string detail;  // why, for every status but kOk
  bool timed = false;       // ours_p50_us is valid
  bool has_ort = false;     // the ORT columns are valid
  double ours_p50_us = 0;   // over every sample of every round
  double ort_p50_us = 0;
  double null_p50_us = 0;
  Spread ratio;       // per-round p50(ours) / p50(ORT)
  Spread null_ratio;  // per-round p50(ORT) / p50(ORT-null)
  int iters = 0;      // trials per round
  int rounds = 0;
};

CaseResult run_case(const std::string& name, const CaseModel& model, int threads, const RunConfig& config);

}  // namespace ember::bench
