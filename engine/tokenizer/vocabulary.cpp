#include "engine/tokenizer/vocabulary.h"

#include <nlohmann/json.hpp>

#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/unicode_text.h"

namespace ember::engine {

Vocabulary Vocabulary::FromJson(const nlohmann::json& object, const std::string& where) {
  if (!object.is_object()) BadConfig(where + ": \"vocab\" must be an object of token: id");
  Vocabulary v;
  v.ids_.reserve(object.size());
  for (const auto& [token, id] : object.items()) {
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 ||
        id.get<std::int64_t>() > INT32_MAX) {
      BadConfig(where + ": token '" + token + "' has id " + id.dump());
    }
    v.Add(token, static_cast<std::int32_t>(id.get<std::int64_t>()));
  }
  return v;
}

void Vocabulary::Add(std::string token, std::int32_t id) {
  try {
    unicode::ValidateUtf8(token);
  } catch (const TokenizerError&) {
    BadConfig("vocabulary token " + std::to_string(id) + " is not UTF-8");
  }
  const auto at = static_cast<std::size_t>(id);
  if (at >= tokens_.size()) tokens_.resize(at + 1);
  tokens_[at] = token;
  longest_ = std::max(longest_, token.size());
  ids_.insert_or_assign(std::move(token), id);
}

}  // namespace ember::engine
