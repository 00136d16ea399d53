#pragma once
// Python str semantics over UTF-8 text, for the string methods and filters.
#include <string>
#include <vector>

#include "genai/jinja/value.h"

namespace ember::genai::jinja::str {

// strip/lstrip/rstrip: Python whitespace, or any code point of `chars` when given.
std::string strip(const std::string& s, const Value* chars, bool left, bool right);
// split(sep=None, maxsplit=-1): whitespace runs when sep is none.
List split(const std::string& s, const Value* sep, int64_t maxsplit);
std::string replace(const std::string& s, const std::string& old, const std::string& with, int64_t count);
// Case mapping of ASCII letters (other code points are kept).
std::string upper(std::string s);
std::string lower(std::string s);
std::string capitalize(const std::string& s);
// Python's str.title() (title_filter=false) or jinja2's title filter (words split at -, whitespace, ( { [ <).
std::string title(const std::string& s, bool title_filter);
// markupsafe.escape: & < > " ' as HTML entities.
std::string escape_html(const std::string& s);
// str.format with {} / {0} / {name} fields.
std::string format(const std::string& fmt, const Args& args);

}  // namespace ember::genai::jinja::str
