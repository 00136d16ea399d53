#include "genai/text_stream.h"

#include <algorithm>
#include <string_view>

#include "genai/tokenizer_internal.h"

namespace ember::genai {

TextStream::TextStream(const Tokenizer& tokenizer, std::vector<std::string> stop_strings, bool skip_special)
    : detokenizer_(tokenizer, skip_special), stops_(std::move(stop_strings)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

std::string TextStream::release(size_t n) {
  std::string out = pending_.substr(0, n);
  pending_.erase(0, n);
  text_ += out;
  return out;
}

std::string TextStream::put(int32_t token) {
  if (stopped_) return {};
  pending_ += detokenizer_.put(token);
  // The earliest stop string wins: text before it is the last text returned.
  size_t first = std::string::npos;
  for (const std::string& stop : stops_) first = std::min(first, pending_.find(stop));
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = release(first);
    pending_.clear();
    return out;
  }
  // Hold back the longest tail that a stop string starts with.
  size_t keep = 0;
  for (const std::string& stop : stops_) {
    for (size_t n = std::min(stop.size() - 1, pending_.size()); n > keep; --n) {
      if (std::string_view(pending_).substr(pending_.size() - n) == std::string_view(stop).substr(0, n)) {
        keep = n;
        break;
      }
    }
  }
  return release(pending_.size() - keep);
}

std::string TextStream::finish() {
  if (stopped_) return {};
  pending_ += detokenizer_.finish();
  // The end of text may complete a stop string only in the held-back tail.
  size_t first = std::string::npos;
  for (const std::string& stop : stops_) first = std::min(first, pending_.find(stop));
  if (first != std::string::npos) stopped_ = true;
  std::string out = release(first == std::string::npos ? pending_.size() : first);
  pending_.clear();
  return out;
}

Status validate_stop_strings(const std::vector<std::string>& stop_strings) {
  for (size_t i = 0; i < stop_strings.size(); ++i) {
    if (stop_strings[i].empty()) return invalid_argument("stop string {} is empty", i + 1);
    if (!detail::utf8_valid(stop_strings[i])) return invalid_argument("stop string {} is not valid UTF-8", i + 1);
  }
  return Status::ok();
}

}  // namespace ember::genai
