#pragma once
// Tool calls in a model's generated text, turned into OpenAI `tool_calls` as the
// text streams. Two formats cover the chat templates in use:
//   kHermes     <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>, any number,
//               after optional content (Qwen2/2.5/3, Hermes, and most templates since);
//   kLlama3Json the whole message is {"name": "f", "parameters": {...}}, several separated
//               by ";" or newlines, optionally after <|python_tag|> (Llama 3.1/3.2/3.3).
// Text that may still turn out to be a tool call is held back; text that turns out not
// to be one (never closed, JSON that does not parse or lacks "name") comes back as
// content unchanged, never dropped. The only text that is neither content nor a call is
// whitespace that separates calls from each other or from the message's start or end
// (the newlines around <tool_call> blocks), so a message of only calls has empty content;
// text around calls is content as written ("Let me check.\n" before a <tool_call>).
// Whatever the split of the text into put() pieces, content and calls come out the same.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ember::server {

enum class ToolCallFormat { kNone, kHermes, kLlama3Json };

// The format a chat template's model emits, from the template's source text:
// "<tool_call>" -> kHermes; "<|python_tag|>" or Llama 3.1/3.2's instruction
// `{"name": function name, "parameters": dictionary ...}` -> kLlama3Json; a template that
// otherwise uses the `tools` variable -> kHermes (the common convention); else kNone.
ToolCallFormat detect_tool_call_format(std::string_view chat_template);
// "none", "hermes", "llama3_json".
const char* tool_call_format_name(ToolCallFormat format);

struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // a JSON object's text
};

// One OpenAI streaming `tool_calls` element. A call is reported once, complete.
struct ToolCallDelta {
  int index = 0;
  std::string id;
  std::string name;
  std::string arguments;
};

class ToolCallParser {
 public:
  // Call ids are id_prefix + index ("call_<request>_0", ...), indices from 0 per parser.
  ToolCallParser(ToolCallFormat format, std::string id_prefix);

  struct Output {
    std::string content;
    std::vector<ToolCallDelta> tool_calls;
  };
  // A piece of generated text: the content that can be shown now and the calls completed by it.
  Output put(std::string_view text);
  // Generation ended: everything still held back, as content or calls.
  Output finish();
  // Every call found so far.
  const std::vector<ToolCall>& calls() const { return calls_; }

 private:
  enum class State {
    kText,         // kHermes: outside a call (pending_ is a tail that may start "<tool_call>")
    kInCall,       // kHermes: after "<tool_call>" (pending_ is the call's body so far)
    kUndecided,    // kLlama3Json: only whitespace or a prefix of "<|python_tag|>" so far
    kHoldAll,      // kLlama3Json: the message starts like a call; parsed at finish()
    kPassthrough,  // kNone, or kLlama3Json once the message starts otherwise
  };

  void run_hermes(Output& out, bool final);
  void take_hermes_text(std::string_view text, Output& out);
  void close_hermes_call(std::string_view body, Output& out);
  void run_llama3(Output& out, bool final);
  void add_call(std::string name, std::string arguments, Output& out);

  ToolCallFormat format_;
  std::string id_prefix_;
  State state_;
  std::string pending_;  // not yet returned nor settled
  // kInCall: "</tool_call>" starts at or after this; kUndecided: pending_ is whitespace before it.
  std::size_t scanned_ = 0;
  // kHermes. A segment is the text since the start or the last call.
  std::string held_ws_;            // the segment so far, while it is only whitespace
  std::string ws_before_call_;     // held_ws_ when the open call began
  bool segment_has_text_ = false;  // the segment has more than whitespace (all returned)
  bool after_call_ = false;        // the segment follows a call
  std::vector<ToolCall> calls_;
};

}  // namespace ember::server
