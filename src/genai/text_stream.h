#pragma once
// The text of a generation as it streams, cut at the first stop string. Each
// put() returns the text that can no longer turn out to be the start of a stop
// string: a tail that matches a stop string's beginning is held back until the
// next token settles it, so a stop string that arrives split over several
// tokens is never printed, and nothing after it is. Never a broken UTF-8
// character (StreamingDetokenizer), and stop strings are valid UTF-8, so the
// held-back tail starts on a character boundary.
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "genai/tokenizer.h"

namespace ember::genai {

class TextStream {
 public:
  // Empty stop strings are refused by validate_stop_strings; here they are ignored.
  TextStream(const Tokenizer& tokenizer, std::vector<std::string> stop_strings, bool skip_special = true);

  std::string put(int32_t token);
  // The rest once generation has ended: the held-back tail (nothing after a stop string).
  std::string finish();
  bool stopped() const { return stopped_; }
  // Everything returned so far.
  const std::string& text() const { return text_; }

 private:
  std::string release(size_t n);

  StreamingDetokenizer detokenizer_;
  std::vector<std::string> stops_;
  std::string pending_;  // decoded, not yet returned
  std::string text_;
  bool stopped_ = false;
};

// An error naming the first stop string that is empty or not valid UTF-8.
Status validate_stop_strings(const std::vector<std::string>& stop_strings);

}  // namespace ember::genai
