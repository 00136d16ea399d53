#pragma once
// A logits processor that fails on the token after the first `after`, as a
// grammar matcher past its step budget does: the generation loops must end
// the sequence there with StopReason::kError and its message, that token
// left out. It leaves the logits alone, so the `after` tokens kept are the
// plain run's.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "genai/logits_processors.h"

namespace ember::test {

class FailsAfter final : public genai::LogitsProcessor {
 public:
  explicit FailsAfter(int after) : after_(after) {}
  std::string_view name() const override { return "fails_after"; }
  void apply(genai::SamplingStep&) override {}
  void accept(int64_t) override { ++taken_; }
  std::string failure() override { return taken_ > after_ ? message(after_) : std::string(); }
  static std::string message(int after) { return "failed after " + std::to_string(after) + " tokens"; }

 private:
  int after_;
  int taken_ = 0;
};

inline std::function<std::unique_ptr<genai::LogitsProcessor>()> fails_after(int after) {
  return [after] { return std::make_unique<FailsAfter>(after); };
}

}  // namespace ember::test
