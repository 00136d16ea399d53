#include "server/tool_calls.h"

#include <algorithm>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/json.h"

namespace ember::server {
namespace {

using nlohmann::json;

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kSpace = " \t\n\r";
// json::dump() recurses once per nesting level; deeper JSON stays content rather than
// risking the stack. Real arguments nest a handful of levels.
constexpr int kMaxJsonDepth = 128;

bool is_identifier_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// `word` as a whole identifier: "tools" but not "xml_tools" or "tools_in_user_message".
bool contains_word(std::string_view text, std::string_view word) {
  for (size_t at = text.find(word); at != std::string_view::npos; at = text.find(word, at + 1)) {
    const bool starts = at == 0 || !is_identifier_char(text[at - 1]);
    const size_t end = at + word.size();
    const bool ends = end == text.size() || !is_identifier_char(text[end]);
    if (starts && ends) return true;
  }
  return false;
}

// Where a tail of `text` that is a proper prefix of `tag` begins (text.size() if none):
// the part that the next piece could still complete into the tag.
size_t partial_tag_start(std::string_view text, std::string_view tag) {
  const size_t longest = std::min(text.size(), tag.size() - 1);
  for (size_t n = longest; n > 0; --n) {
    if (tag.starts_with(text.substr(text.size() - n))) return text.size() - n;
  }
  return text.size();
}

// One past the end of the object or array that starts at text[begin], strings and
// escapes respected; npos when it does not close or nests deeper than kMaxJsonDepth.
// Brackets only: whether the JSON is valid is json::parse's to say.
size_t json_value_end(std::string_view text, size_t begin) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = begin; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxJsonDepth) return std::string_view::npos;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

struct ParsedCall {
  std::string name;
  std::string arguments;
};

// A call's JSON object: {"name": "...", "arguments" or "parameters": object or string}.
// Missing arguments mean none ("{}") unless require_arguments.
std::optional<ParsedCall> parse_call_object(std::string_view text, bool require_arguments) {
  if (text.empty() || text.front() != '{' || json_value_end(text, 0) != text.size()) return std::nullopt;
  const json object = parse_json<json>(text);
  if (!object.is_object()) return std::nullopt;
  const auto name = object.find("name");
  if (name == object.end() || !name->is_string() || name->get_ref<const std::string&>().empty()) {
    return std::nullopt;
  }
  auto args = object.find("arguments");
  if (args == object.end()) args = object.find("parameters");
  ParsedCall call{name->get<std::string>(), "{}"};
  if (args == object.end()) {
    if (require_arguments) return std::nullopt;
  } else if (args->is_object()) {
    call.arguments = args->dump(-1, ' ', false, json::error_handler_t::replace);
  } else if (args->is_string()) {
    call.arguments = args->get<std::string>();
  } else if (!args->is_null()) {
    return std::nullopt;
  }
  return call;
}

std::string_view trim(std::string_view text) {
  const size_t first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(kSpace) + 1 - first);
}

// Llama 3.x: the whole message is one or more call objects, separated by ";" or
// whitespace, after an optional <|python_tag|>. All of them calls, or nullopt.
std::optional<std::vector<ParsedCall>> parse_llama3_calls(std::string_view text) {
  text = trim(text);
  if (text.starts_with(kPythonTag)) text = trim(text.substr(kPythonTag.size()));
  std::vector<ParsedCall> calls;
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = text[at] == '{' ? json_value_end(text, at) : std::string_view::npos;
    if (end == std::string_view::npos) return std::nullopt;
    auto call = parse_call_object(text.substr(at, end - at), /*require_arguments=*/true);
    if (!call) return std::nullopt;
    calls.push_back(std::move(*call));
    at = text.find_first_not_of(kSpace, end);
    if (at != std::string_view::npos && text[at] == ';') at = text.find_first_not_of(kSpace, at + 1);
    if (at == std::string_view::npos) break;
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

}  // namespace

ToolCallFormat detect_tool_call_format(std::string_view chat_template) {
  if (chat_template.find(kHermesOpen) != std::string_view::npos) return ToolCallFormat::kHermes;
  if (chat_template.find(kPythonTag) != std::string_view::npos) return ToolCallFormat::kLlama3Json;
  // Llama 3.2 drops <|python_tag|> (no built-in tools) but keeps 3.1's instruction
  // 'Respond in the format {"name": function name, "parameters": dictionary of argument name ...}'.
  for (std::string_view instruction : {R"("parameters": dictionary of argument name)",
                                       R"(\"parameters\": dictionary of argument name)"}) {
    if (chat_template.find(instruction) != std::string_view::npos) return ToolCallFormat::kLlama3Json;
  }
  if (contains_word(chat_template, "tools")) return ToolCallFormat::kHermes;
  return ToolCallFormat::kNone;
}

const char* tool_call_format_name(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kNone: return "none";
    case ToolCallFormat::kHermes: return "hermes";
    case ToolCallFormat::kLlama3Json: return "llama3_json";
  }
  return "unknown";
}

ToolCallParser::ToolCallParser(ToolCallFormat format, std::string id_prefix)
    : format_(format), id_prefix_(std::move(id_prefix)) {
  switch (format) {
    case ToolCallFormat::kHermes: state_ = State::kText; break;
    case ToolCallFormat::kLlama3Json: state_ = State::kUndecided; break;
    default: state_ = State::kPassthrough; break;
  }
}

ToolCallParser::Output ToolCallParser::put(std::string_view text) {
  Output out;
  if (state_ == State::kPassthrough) {
    out.content.assign(text);
    return out;
  }
  pending_.append(text);
  if (format_ == ToolCallFormat::kHermes) {
    run_hermes(out, /*final=*/false);
  } else {
    run_llama3(out, /*final=*/false);
  }
  return out;
}

ToolCallParser::Output ToolCallParser::finish() {
  Output out;
  if (format_ == ToolCallFormat::kHermes) {
    run_hermes(out, /*final=*/true);
  } else if (format_ == ToolCallFormat::kLlama3Json) {
    run_llama3(out, /*final=*/true);
  }
  pending_.clear();
  return out;
}

void ToolCallParser::add_call(std::string name, std::string arguments, Output& out) {
  const int index = static_cast<int>(calls_.size());
  std::string id = id_prefix_ + std::to_string(index);
  out.tool_calls.push_back({index, id, name, arguments});
  calls_.push_back({std::move(id), std::move(name), std::move(arguments)});
}

// pending_ is consumed from the front; what is left is held for the next piece.
// Searches never rescan: outside a call only a tail shorter than "<tool_call>" is
// held (and whitespace, in held_ws_); inside a call scanned_ marks the progress.
void ToolCallParser::run_hermes(Output& out, bool final) {
  size_t at = 0;
  while (at < pending_.size()) {
    const std::string_view rest = std::string_view(pending_).substr(at);
    if (state_ == State::kInCall) {
      const size_t close = rest.find(kHermesClose, scanned_);
      if (close == std::string_view::npos) {
        scanned_ = rest.size() >= kHermesClose.size() ? rest.size() - kHermesClose.size() + 1 : 0;
        break;
      }
      close_hermes_call(rest.substr(0, close), out);
      at += close + kHermesClose.size();
      state_ = State::kText;
      continue;
    }
    const size_t open = rest.find(kHermesOpen);
    if (open == std::string_view::npos) {
      const size_t keep = final ? rest.size() : partial_tag_start(rest, kHermesOpen);
      take_hermes_text(rest.substr(0, keep), out);
      at += keep;
      break;
    }
    take_hermes_text(rest.substr(0, open), out);
    ws_before_call_ = std::move(held_ws_);
    held_ws_.clear();
    at += open + kHermesOpen.size();
    state_ = State::kInCall;
    scanned_ = 0;
  }
  pending_.erase(0, at);
  if (!final) return;
  if (state_ == State::kInCall) {
    // Never closed (generation stopped inside it): the text as generated.
    out.content += ws_before_call_;
    out.content += kHermesOpen;
    out.content += pending_;
  } else if (!after_call_) {
    out.content += held_ws_;  // all the text there is: no call, nothing to separate
  }
  held_ws_.clear();
  ws_before_call_.clear();
  state_ = State::kText;
}

// Text outside calls is content, except a run of whitespace between two calls or
// between a call and the start or end of the message: held while it is all the text
// since the last call, dropped if a call or the end comes next.
void ToolCallParser::take_hermes_text(std::string_view text, Output& out) {
  if (!segment_has_text_) {
    if (text.find_first_not_of(kSpace) == std::string_view::npos) {
      held_ws_.append(text);
      return;
    }
    out.content += held_ws_;
    held_ws_.clear();
    segment_has_text_ = true;
  }
  out.content.append(text);
}

void ToolCallParser::close_hermes_call(std::string_view body, Output& out) {
  if (auto call = parse_call_object(trim(body), /*require_arguments=*/false)) {
    add_call(std::move(call->name), std::move(call->arguments), out);
    after_call_ = true;
    segment_has_text_ = false;
  } else {
    out.content += ws_before_call_;
    out.content += kHermesOpen;
    out.content += body;
    out.content += kHermesClose;
    segment_has_text_ = true;
  }
  ws_before_call_.clear();
}

void ToolCallParser::run_llama3(Output& out, bool final) {
  if (state_ == State::kUndecided) {
    const size_t first = pending_.find_first_not_of(kSpace, scanned_);
    scanned_ = first == std::string::npos ? pending_.size() : first;
    if (first != std::string::npos) {
      const std::string_view head = std::string_view(pending_).substr(first);
      if (head.front() == '{' || head.starts_with(kPythonTag)) {
        state_ = State::kHoldAll;
      } else if (final || !kPythonTag.starts_with(head)) {
        state_ = State::kPassthrough;
      }
    }
  }
  if (state_ == State::kPassthrough || (final && state_ == State::kUndecided)) {
    out.content += pending_;
    pending_.clear();
    return;
  }
  if (!final) return;
  if (auto calls = parse_llama3_calls(pending_)) {
    for (ParsedCall& call : *calls) add_call(std::move(call.name), std::move(call.arguments), out);
  } else {
    out.content += pending_;
  }
  pending_.clear();
  state_ = State::kUndecided;
  scanned_ = 0;
}

}  // namespace ember::server
