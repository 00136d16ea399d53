#include "ab_report.h"

#include <fmt/format.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <set>
#include <utility>

#include "base/cpu_features.h"
#include "base/isa.h"
#include "ort_reference.h"

namespace ember::bench {
namespace {

// The first line of `command`'s standard output, or "" when it fails.
std::string first_line_of(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return "";
  std::array<char, 256> buf{};
  std::string line = fgets(buf.data(), buf.size(), pipe) ? buf.data() : "";
  const int rc = pclose(pipe);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  return rc == 0 ? line : "";
}

// Asked of the tree the executable sits in (build-*/ember_ab is inside the
// checkout), so the answer does not depend on the working directory.
std::string git_commit() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::string dir = ec ? "." : exe.parent_path().string();
  const std::string git = fmt::format("git -C '{}' ", dir);
  const std::string head = first_line_of(git + "rev-parse --short=12 HEAD 2>/dev/null");
  if (head.empty()) return "unknown";
  const std::string changes = first_line_of(git + "status --porcelain --untracked-files=no 2>/dev/null");
  return changes.empty() ? head : head + "+dirty";
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::array<char, 32> buf{};
  std::strftime(buf.data(), buf.size(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf.data();
}

// Three significant digits or more: 0.671, 87.3, 1204.
std::string format_us(double us) {
  if (us < 10) return fmt::format("{:.3f}", us);
  if (us < 1000) return fmt::format("{:.1f}", us);
  return fmt::format("{:.0f}", us);
}

std::string format_spread(const Spread& s) { return fmt::format("{:.3f} ({:.3f}–{:.3f})", s.p50, s.min, s.max); }

std::string first_line(const std::string& s, size_t max_chars = 200) {
  std::string line = s.substr(0, s.find('\n'));
  return line.size() > max_chars ? line.substr(0, max_chars) + "…" : line;
}

std::string iters_setting(const RunConfig& c) {
  return c.iters > 0 ? fmt::format("{}", c.iters) : fmt::format("auto (~{:g} ms per round)", c.round_ms);
}

std::string markdown(const RunHeader& h, const std::vector<CaseResult>& results) {
  std::string out = "# ember_ab: Ember vs ONNX Runtime\n\n";
  out += fmt::format("- commit: {}\n- cpu: {}\n- isa: {}\n- onnxruntime: {}\n- date: {}\n", h.commit, h.cpu, h.isa,
                     h.ort_version, h.date);
  const char* spinning = !h.config.via_ort_ep   ? ""
                         : h.config.ep_spinning ? " (ORT's intra-op spinning on)"
                                                : " (session.intra_op.allow_spinning=0)";
  out += fmt::format("- ours: {}{}\n", ours_name(h.config), spinning);
  out += fmt::format("- threads: {}; rounds: {}; trials per round: {}; warm-up: {:g} ms\n\n", fmt::join(h.threads, ","),
                     h.config.rounds, iters_setting(h.config), h.config.warmup_ms);
  out += "| case | threads | ours p50 µs | ORT p50 µs | ours/ORT p50 (min–max) | ORT/ORT-null p50 (min–max) | status |\n";
  out += "|---|---:|---:|---:|---|---|---|\n";
  for (const CaseResult& r : results) {
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", r.name, r.threads,
                       r.timed ? format_us(r.ours_p50_us) : "–", r.has_ort ? format_us(r.ort_p50_us) : "–",
                       r.has_ort ? format_spread(r.ratio) : "–", r.has_ort ? format_spread(r.null_ratio) : "–",
                       status_name(r.status));
  }
  std::set<std::pair<std::string, std::string>> noted;
  std::string notes;
  for (const CaseResult& r : results) {
    if (r.status == CaseStatus::kOk || !noted.insert({r.name, r.detail}).second) continue;
    notes += fmt::format("- {} ({} thread{}): {}: {}\n", r.name, r.threads, r.threads == 1 ? "" : "s",
                         status_name(r.status), first_line(r.detail));
  }
  if (!notes.empty()) out += "\n" + notes;
  return out;
}

nlohmann::json spread_json(const Spread& s) { return {{"p50", s.p50}, {"min", s.min}, {"max", s.max}}; }

std::string json(const RunHeader& h, const std::vector<CaseResult>& results) {
  nlohmann::json doc;
  doc["header"] = {{"commit", h.commit},
                   {"cpu", h.cpu},
                   {"isa", h.isa},
                   {"onnxruntime", h.ort_version},
                   {"date", h.date},
                   {"threads", h.threads},
                   {"rounds", h.config.rounds},
                   {"iters", h.config.iters > 0 ? nlohmann::json(h.config.iters) : nlohmann::json()},
                   {"round_ms", h.config.round_ms},
                   {"warmup_ms", h.config.warmup_ms},
                   {"warmup_trials", h.config.warmup_trials},
                   {"ours", ours_name(h.config)},
                   {"ep_spinning", h.config.ep_spinning}};
  nlohmann::json rows = nlohmann::json::array();
  for (const CaseResult& r : results) {
    nlohmann::json row = {{"case", r.name},     {"threads", r.threads}, {"status", status_name(r.status)},
                          {"detail", r.detail}, {"iters", r.iters},     {"rounds", r.rounds}};
    row["ours_p50_us"] = r.timed ? nlohmann::json(r.ours_p50_us) : nlohmann::json();
    row["ort_p50_us"] = r.has_ort ? nlohmann::json(r.ort_p50_us) : nlohmann::json();
    row["ort_null_p50_us"] = r.has_ort ? nlohmann::json(r.null_p50_us) : nlohmann::json();
    row["ratio"] = r.has_ort ? spread_json(r.ratio) : nlohmann::json();
    row["null_ratio"] = r.has_ort ? spread_json(r.null_ratio) : nlohmann::json();
    rows.push_back(std::move(row));
  }
  doc["results"] = std::move(rows);
  return doc.dump(2) + "\n";
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string quoted = "\"";
  for (char c : s) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

// Run metadata as leading "# key: value" lines (pandas: read_csv(comment='#')).
std::string csv(const RunHeader& h, const std::vector<CaseResult>& results) {
  std::string out = fmt::format("# commit: {}\n# cpu: {}\n# isa: {}\n# onnxruntime: {}\n# date: {}\n",
                                csv_field(h.commit), csv_field(h.cpu), csv_field(h.isa), h.ort_version, h.date);
  out += "case,threads,status,ours_p50_us,ort_p50_us,ort_null_p50_us,ratio_p50,ratio_min,ratio_max,"
         "null_p50,null_min,null_max,iters,rounds,detail\n";
  auto num = [](bool valid, double v) { return valid ? fmt::format("{:.6g}", v) : std::string(); };
  for (const CaseResult& r : results) {
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", csv_field(r.name), r.threads,
                       csv_field(status_name(r.status)), num(r.timed, r.ours_p50_us), num(r.has_ort, r.ort_p50_us),
                       num(r.has_ort, r.null_p50_us), num(r.has_ort, r.ratio.p50), num(r.has_ort, r.ratio.min),
                       num(r.has_ort, r.ratio.max), num(r.has_ort, r.null_ratio.p50), num(r.has_ort, r.null_ratio.min),
                       num(r.has_ort, r.null_ratio.max), r.iters, r.rounds, csv_field(first_line(r.detail, 1000)));
  }
  return out;
}

}  // namespace

RunHeader collect_header(const std::vector<int>& threads, const RunConfig& config) {
  auto version = ortref::ort_version();
  const std::string& brand = cpu_features().brand;
  return {git_commit(),
          brand.empty() ? "unknown" : brand,
          isa_description(),
          version.is_ok() ? *version : "unavailable (" + version.status().message() + ")",
          utc_now(),
          threads,
          config};
}

std::string format_report(Format format, const RunHeader& header, const std::vector<CaseResult>& results) {
  switch (format) {
    case Format::kJson: return json(header, results);
    case Format::kCsv: return csv(header, results);
    case Format::kMarkdown: break;
  }
  return markdown(header, results);
}

}  // namespace ember::bench
