// ember_ab: Ember against ONNX Runtime on one model, in one process, interleaved.
//
//   ember_ab MODEL.onnx [--threads N] [--iters N] [--warmup N] [--rounds N] [--dim NAME=VALUE]...
//
// Both load the model and get the same random inputs (declared shapes; symbolic
// dims from --dim, else 1). Outputs are compared first. Each round then times
// `iters` Ember runs, `iters` ONNX Runtime runs, and `iters` more ONNX Runtime
// runs as a null control: the ORT/ORT ratio shows how much of an Ember/ORT ratio
// is noise on this machine. Exit status: 0, 1 on an error, 2 when the outputs
// disagree (the timings are still printed).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "compare.h"
#include "ort_reference.h"
#include "runtime/session.h"

namespace ember::bench {
namespace {

struct Args {
  std::string model;
  int threads = 1;
  int iters = 100;
  int warmup = 10;
  int rounds = 5;
  std::vector<std::string> dims;
};

struct Percentiles {
  double p50 = 0, p90 = 0, min = 0;
};

Percentiles percentiles(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  auto at = [&](double q) {
    return us[std::min(us.size() - 1, static_cast<size_t>(q * static_cast<double>(us.size())))];
  };
  return {at(0.5), at(0.9), us.front()};
}

Result<std::vector<std::pair<std::string, int64_t>>> parse_dims(const std::vector<std::string>& specs) {
  std::vector<std::pair<std::string, int64_t>> dims;
  for (const std::string& spec : specs) {
    size_t eq = spec.find('=');
    int64_t value = -1;
    const char* begin = spec.data() + (eq == std::string::npos ? spec.size() : eq + 1);
    const char* end = spec.data() + spec.size();
    auto [ptr, ec] = std::from_chars(begin, end, value);
    if (eq == std::string::npos || eq == 0 || ec != std::errc() || ptr != end || value < 0)
      return invalid_argument("--dim '{}': expected NAME=VALUE with a non-negative integer VALUE", spec);
    dims.emplace_back(spec.substr(0, eq), value);
  }
  return dims;
}

// Random values of the declared shape. Integer inputs get 0..3, which is a valid
// token id, position or index for any model.
Result<Tensor> random_input(const runtime::IoInfo& info, const std::vector<std::pair<std::string, int64_t>>& dims,
                            std::mt19937& rng) {
  if (!info.has_shape) return invalid_argument("input '{}' has no declared shape", info.name);
  Shape shape;
  for (const ir::Dim& d : info.shape) {
    auto it = std::find_if(dims.begin(), dims.end(), [&](const auto& p) { return p.first == d.symbol; });
    shape.push_back(d.known() ? d.value : it != dims.end() ? it->second : 1);
  }
  Tensor t = Tensor::allocate(info.dtype, shape);
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  std::uniform_int_distribution<int> small(0, 3);
  EMBER_SWITCH_ALL(info.dtype, T, {
    for (int64_t i = 0; i < t.numel(); ++i) {
      if constexpr (std::is_floating_point_v<compute_t<T>>) {
        t.data_as<T>()[i] = static_cast<T>(real(rng));
      } else {
        t.data_as<T>()[i] = static_cast<T>(small(rng));
      }
    }
  }, return not_implemented("input '{}' has dtype {}, which ember_ab cannot fill", info.name, dtype_name(info.dtype)));
  return t;
}

template <typename Fn>
Status time_runs(int n, std::vector<double>& us, Fn&& run) {
  for (int i = 0; i < n; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    Status s = run();
    auto t1 = std::chrono::steady_clock::now();
    if (!s.is_ok()) return s;
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  return Status::ok();
}

// Runs both once on the same inputs and prints whether every output agrees.
bool check_outputs(const runtime::Session& ember, const ortref::OrtSession& ort,
                   const std::vector<runtime::NamedInput>& named, const std::vector<ortref::OrtInput>& ort_inputs) {
  auto mine = ember.run(named);
  auto theirs = ort.run(ort_inputs);
  if (!mine.is_ok() || !theirs.is_ok()) {
    fmt::print("outputs: cannot compare: {}\n", (mine.is_ok() ? theirs.status() : mine.status()).to_string());
    return false;
  }
  bool all_ok = mine->size() == theirs->size();
  if (!all_ok) fmt::print("outputs: Ember gives {}, ONNX Runtime {}\n", mine->size(), theirs->size());
  for (size_t i = 0; all_ok && i < mine->size(); ++i) {
    Status s = ortref::compare((*mine)[i], (*theirs)[i]);
    fmt::print("output {} {}: {}\n", ember.outputs()[i].name, (*theirs)[i].describe(),
               s.is_ok() ? "agree" : s.message());
    all_ok = all_ok && s.is_ok();
  }
  return all_ok;
}

int run_ab(const Args& args) {
  auto fail = [](const Status& s) {
    fmt::print(stderr, "ember_ab: {}\n", s.to_string());
    return 1;
  };
  auto dims = parse_dims(args.dims);
  if (!dims.is_ok()) return fail(dims.status());
  // Read by Ember's thread pool; the ORT session gets the same number below.
  setenv("EMBER_NUM_THREADS", std::to_string(args.threads).c_str(), 1);
  auto ember = runtime::Session::load(args.model);
  if (!ember.is_ok()) return fail(ember.status());
  auto ort = ortref::OrtSession::load(args.model, {args.threads, ortref::OrtOptLevel::kAll});
  if (!ort.is_ok()) return fail(ort.status());

  std::mt19937 rng(1234);
  std::vector<Tensor> values;
  values.reserve((*ember)->inputs().size());
  std::vector<const Tensor*> positional;
  std::vector<runtime::NamedInput> named;
  std::vector<ortref::OrtInput> ort_inputs;
  for (const runtime::IoInfo& info : (*ember)->inputs()) {
    auto t = random_input(info, *dims, rng);
    if (!t.is_ok()) return fail(t.status());
    values.push_back(std::move(*t));
    positional.push_back(&values.back());
    named.push_back({info.name, &values.back()});
    ort_inputs.push_back({info.name, &values.back()});
    fmt::print("input {} {}\n", info.name, values.back().describe());
  }
  auto version = ortref::ort_version();
  fmt::print("model {}  onnxruntime {}  threads {}  iters {}  warmup {}  rounds {}\n", args.model,
             version.is_ok() ? *version : "?", args.threads, args.iters, args.warmup, args.rounds);
  const bool agree = check_outputs(**ember, **ort, named, ort_inputs);

  auto prepared = (*ort)->prepare(ort_inputs);
  if (!prepared.is_ok()) return fail(prepared.status());
  std::vector<Tensor> outputs;
  auto run_ember = [&] { return (*ember)->run(positional, outputs); };
  auto run_ort = [&] { return (*ort)->run_prepared(*prepared); };
  std::vector<double> warm;
  if (Status s = time_runs(args.warmup, warm, run_ember); !s.is_ok()) return fail(s);
  if (Status s = time_runs(args.warmup, warm, run_ort); !s.is_ok()) return fail(s);

  std::vector<double> ember_us, ort_us, null_us;
  std::vector<double> round_ratio, round_null;
  for (int r = 0; r < args.rounds; ++r) {
    std::vector<double> e, o, n;
    if (Status s = time_runs(args.iters, e, run_ember); !s.is_ok()) return fail(s);
    if (Status s = time_runs(args.iters, o, run_ort); !s.is_ok()) return fail(s);
    if (Status s = time_runs(args.iters, n, run_ort); !s.is_ok()) return fail(s);
    round_ratio.push_back(percentiles(e).p50 / percentiles(o).p50);
    round_null.push_back(percentiles(o).p50 / percentiles(n).p50);
    ember_us.insert(ember_us.end(), e.begin(), e.end());
    ort_us.insert(ort_us.end(), o.begin(), o.end());
    null_us.insert(null_us.end(), n.begin(), n.end());
  }
  const Percentiles pe = percentiles(ember_us), po = percentiles(ort_us), pn = percentiles(null_us);
  for (const auto& [name, p] : {std::pair{"ember", pe}, std::pair{"ort", po}, std::pair{"ort_null", pn}})
    fmt::print("{:<9} p50_us={:.3f} p90_us={:.3f} min_us={:.3f}\n", name, p.p50, p.p90, p.min);
  auto [rmin, rmax] = std::minmax_element(round_ratio.begin(), round_ratio.end());
  auto [nmin, nmax] = std::minmax_element(round_null.begin(), round_null.end());
  fmt::print("ember/ort p50 ratio {:.3f} (rounds {:.3f}..{:.3f});  "
             "ort/ort null control {:.3f} (rounds {:.3f}..{:.3f})\n",
             pe.p50 / po.p50, *rmin, *rmax, po.p50 / pn.p50, *nmin, *nmax);
  return agree ? 0 : 2;
}

}  // namespace
}  // namespace ember::bench

int main(int argc, char** argv) {
  ember::bench::Args args;
  CLI::App app{"Times Ember against ONNX Runtime on one model, interleaved, with an ORT-vs-ORT null control"};
  app.add_option("model", args.model, "Path of the .onnx file")->required()->check(CLI::ExistingFile);
  app.add_option("--threads", args.threads, "Intra-op threads for both (sets EMBER_NUM_THREADS)")
      ->check(CLI::PositiveNumber);
  app.add_option("--iters", args.iters, "Timed runs per system per round")->check(CLI::PositiveNumber);
  app.add_option("--warmup", args.warmup, "Untimed runs per system before the first round")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--rounds", args.rounds, "Interleaved rounds")->check(CLI::PositiveNumber);
  app.add_option("--dim", args.dims, "Value of a symbolic input dimension, NAME=VALUE (default 1)");
  CLI11_PARSE(app, argc, argv);
  return ember::bench::run_ab(args);
}
