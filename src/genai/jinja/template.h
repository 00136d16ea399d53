#pragma once
// A parsed Jinja template, rendered as jinja2's ImmutableSandboxedEnvironment
// with Hugging Face's settings (trim_blocks, lstrip_blocks, loop controls) would.
#include <functional>
#include <memory>
#include <string>

#include "base/status.h"
#include "genai/jinja/ast.h"
#include "genai/jinja/value.h"

namespace ember::genai::jinja {

struct RenderOptions {
  // strftime_now(format); defaults to the local time.
  std::function<std::string(const std::string&)> strftime_now;
};

class Template {
 public:
  // Errors name the line and column: "template line 3, column 7: unknown tag 'foo'".
  static Result<Template> parse(const std::string& source);
  // `globals` are the template's variables (besides range, namespace, dict,
  // raise_exception and strftime_now).
  Result<std::string> render(const Dict& globals, const RenderOptions& options = {}) const;

 private:
  std::shared_ptr<const Body> body_;
};

}  // namespace ember::genai::jinja
