#pragma once
#include <string>

#include "genai/jinja/ast.h"
#include "genai/jinja/lexer.h"

namespace ember::genai::jinja {

// Parses a template into statements; throws Error naming the line and column.
Body parse(const std::string& source, const LexOptions& options);

}  // namespace ember::genai::jinja
