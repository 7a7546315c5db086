// A model's vocabulary both ways (internal to engine/tokenizer/): token -> id in an
// open-addressing map looked up by string_view (no key string is built; a lookup is about one
// cache line), and id -> token. Immutable once built.
#ifndef EMBER_ENGINE_TOKENIZER_VOCABULARY_H_
#define EMBER_ENGINE_TOKENIZER_VOCABULARY_H_

#include <tsl/hopscotch_map.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ember::engine {

struct StringViewHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept {
    return std::hash<std::string_view>{}(s);
  }
};

class Vocabulary {
 public:
  // {token: id, ...} (WordPiece, BPE, WordLevel). Throws TokenizerError (kBadConfig) naming
  // `where` for a token that is not UTF-8 or an id that is negative or repeated.
  static Vocabulary FromJson(const nlohmann::json& object, const std::string& where);

  // Adds `token` as `id`; a token given twice keeps its last id, as HF's map does.
  void Add(std::string token, std::int32_t id);

  std::optional<std::int32_t> Find(std::string_view token) const {
    const auto it = ids_.find(token);
    if (it == ids_.end()) return std::nullopt;
    return it->second;
  }
  std::string_view Token(std::int32_t id) const {
    if (id < 0 || static_cast<std::size_t>(id) >= tokens_.size()) return {};
    return tokens_[static_cast<std::size_t>(id)];
  }
  std::size_t size() const { return ids_.size(); }
  std::size_t id_limit() const { return tokens_.size(); }
  std::size_t longest() const { return longest_; }  // bytes of the longest token
  // Every token and its id, in no order.
  const tsl::hopscotch_map<std::string, std::int32_t, StringViewHash, std::equal_to<>>& ids()
      const {
    return ids_;
  }

 private:
  tsl::hopscotch_map<std::string, std::int32_t, StringViewHash, std::equal_to<>> ids_;
  std::vector<std::string> tokens_;  // by id; holes are empty
  std::size_t longest_ = 0;
};

}  // namespace ember::engine

#endif  // EMBER_ENGINE_TOKENIZER_VOCABULARY_H_
