#pragma once
// Parsing JSON that comes from outside Ember: request bodies, model folders'
// files, schemas, tool-call text.
#include <string>
#include <string_view>

namespace ember {

// Arrays and objects nest at most this deep in the JSON Ember reads. nlohmann's
// parser is iterative, but copying, printing and comparing a document recurse,
// as do Ember's own walks of one (a chat template's values, a schema), so a
// deeper document is refused where it is parsed rather than overflowing the
// stack later.
inline constexpr int kMaxJsonDepth = 128;

// Empty when `text` nests at most kMaxJsonDepth deep (brackets inside strings do
// not count; text past where it stops being JSON may be miscounted, and the
// parse refuses it anyway); else what is wrong, as a predicate naming the byte:
// "nests arrays and objects more than 128 deep (at byte 812)".
std::string json_depth_error(std::string_view text);

// nlohmann's parse(text, nullptr, false) that also refuses what json_depth_error
// names: a discarded value (is_discarded()) when the text is not JSON or nests
// too deep, with the reason in *why as a predicate ("is not valid JSON", or the
// depth), so that a caller writes "{file} {why}".
template <typename Json>
Json parse_json(std::string_view text, std::string* why = nullptr) {
  if (std::string deep = json_depth_error(text); !deep.empty()) {
    if (why) *why = std::move(deep);
    return Json(Json::value_t::discarded);
  }
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() && why) *why = "is not valid JSON";
  return json;
}

}  // namespace ember
