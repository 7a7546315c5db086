#include "engine/tokenizer/text_pattern.h"

#include "engine/tokenizer/json_fields.h"

namespace ember::engine {

TextPattern::TextPattern(const nlohmann::json& spec, const std::string& where) {
  if (!spec.is_object() || spec.size() != 1) {
    BadConfig(where + ": pattern must be {\"String\": ...} or {\"Regex\": ...}, got " +
              spec.dump());
  }
  if (const auto it = spec.find("String"); it != spec.end() && it->is_string()) {
    literal_ = it->get<std::string>();
    // An empty string would match between every two characters; no tokenizer uses one.
    if (literal_.empty()) BadConfig(where + ": an empty String pattern is not supported");
    return;
  }
  if (const auto it = spec.find("Regex"); it != spec.end() && it->is_string()) {
    regex_.emplace(it->get<std::string>());
    return;
  }
  BadConfig(where + ": pattern must be {\"String\": ...} or {\"Regex\": ...}, got " + spec.dump());
}

void TextPattern::Find(std::string_view text, Pieces& out) const {
  if (regex_) {
    FindRegexMatches(text, *regex_, out);
  } else {
    FindLiteralMatches(text, literal_, out);
  }
}

namespace json_fields {

char32_t OneChar(const Json& spec, const char* key, const std::string& where) {
  const std::string s = String(spec, key, where);
  std::size_t i = 0;
  try {
    unicode::ValidateUtf8(s);
  } catch (const TokenizerError&) {
    BadConfig(where + ": \"" + key + "\" is not UTF-8");
  }
  if (s.empty()) BadConfig(where + ": \"" + key + "\" must be one character");
  const char32_t c = unicode::DecodeValid(s, i);
  if (i != s.size()) BadConfig(where + ": \"" + key + "\" must be one character, got '" + s + "'");
  return c;
}

}  // namespace json_fields

}  // namespace ember::engine
