// A tokenizer.json pattern, {"String": "..."} or {"Regex": "..."} (Split, Replace), and what it
// finds in a text (internal to engine/tokenizer/). A string is matched as it is, without a
// regex engine. Immutable once made.
#ifndef EMBER_ENGINE_TOKENIZER_TEXT_PATTERN_H_
#define EMBER_ENGINE_TOKENIZER_TEXT_PATTERN_H_

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "engine/tokenizer/normalized_string.h"
#include "engine/tokenizer/regex.h"

namespace ember::engine {

class TextPattern {
 public:
  // Throws TokenizerError (kBadConfig) for anything but one non-empty String or one Regex.
  TextPattern(const nlohmann::json& spec, const std::string& where);

  // The pieces of `text` (matches and the text between them).
  void Find(std::string_view text, Pieces& out) const;

 private:
  std::string literal_;
  std::optional<Regex> regex_;
};

}  // namespace ember::engine

#endif  // EMBER_ENGINE_TOKENIZER_TEXT_PATTERN_H_
