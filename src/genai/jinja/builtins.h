#pragma once
// Filters, tests, attribute/item access and methods of str/dict, as jinja2's
// ImmutableSandboxedEnvironment exposes them (with Hugging Face's tojson).
#include <string>

#include "genai/jinja/value.h"

namespace ember::genai::jinja {

bool has_filter(const std::string& name);
bool has_test(const std::string& name);
Value apply_filter(const std::string& name, const Value& operand, const Args& args);
bool apply_test(const std::string& name, const Value& operand, const Args& args);

// `obj.name`: a str/dict method, else the dict item or namespace attribute; undefined when absent.
Value get_attribute(const Value& obj, const std::string& name);
// `obj[key]`: list/str index (negative from the end), dict item, else get_attribute.
Value get_item(const Value& obj, const Value& key);
// `obj[start:stop:step]` over lists and strings (code points), Python rules.
Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step);

}  // namespace ember::genai::jinja
