// The added tokens of a tokenizer.json (internal to engine/tokenizer/): [CLS], <s>, <mask>,
// <|endoftext|>, ... HF's AddedVocabulary. They are found in the text before anything else
// (leftmost, longest first): the ones marked "normalized": false in the raw text, the others in
// each piece of text between those once it is normalized; each becomes its own token, with its
// single_word, lstrip and rstrip rules. Ids come as HF assigns them: a token the model has keeps
// the model's id, the others are numbered after the model's vocabulary. Immutable once made.
#ifndef EMBER_ENGINE_TOKENIZER_ADDED_VOCABULARY_H_
#define EMBER_ENGINE_TOKENIZER_ADDED_VOCABULARY_H_

#include <tsl/hopscotch_map.h>

#include <array>
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/normalizers.h"
#include "engine/tokenizer/pre_tokenized_string.h"
#include "engine/tokenizer/token_model.h"
#include "engine/tokenizer/vocabulary.h"

namespace ember::engine {

struct AddedToken {
  std::string content;
  bool single_word = false, lstrip = false, rstrip = false, normalized = true, special = false;
  bool operator==(const AddedToken&) const = default;
};

class AddedVocabulary {
 public:
  AddedVocabulary() = default;
  // tokenizer.json's "added_tokens" (null: none), added as HF adds them.
  AddedVocabulary(const nlohmann::json& spec, const TokenModel& model,
                  const Normalizer* normalizer);

  // `text` (valid UTF-8) as splits: each added token a split with its one token, and the text
  // around them normalized by `normalizer` (HF extract_and_normalize). `track`: with alignments.
  void ExtractAndNormalize(std::string_view text, const Normalizer* normalizer, bool track,
                           PreTokenizedString& out) const;

  std::optional<std::int32_t> TokenToId(std::string_view content) const;
  // The token's text (its normalized form where normalizing changes it, as HF shows it).
  std::optional<std::string_view> IdToToken(std::int32_t id) const;
  // Whether `token` is the content of a special added token.
  bool IsSpecialContent(std::string_view token) const { return specials_.contains(token); }
  std::size_t id_limit() const { return id_limit_; }

 private:
  // A byte trie of patterns for leftmost-longest matching.
  class Matcher {
   public:
    void Add(std::string_view pattern, std::int32_t id);
    bool empty() const { return nodes_.size() <= 1; }
    // The longest pattern that starts at `at`: (end, id).
    std::optional<std::pair<std::size_t, std::int32_t>> LongestAt(std::string_view text,
                                                                  std::size_t at) const;
    bool MayStart(unsigned char b) const { return first_[b]; }
    // Where the next byte that may start a pattern is, from `at` (text.size(): none).
    std::size_t NextStart(std::string_view text, std::size_t at) const;

   private:
    struct Node {
      std::map<unsigned char, std::uint32_t> next;
      std::int32_t id = -1;
    };
    std::vector<Node> nodes_{Node{}};
    std::array<bool, 256> first_{};
    int only_first_ = -1;  // the one byte all patterns start with (memchr finds it); -1: none
  };
  // Splits `s` on the matches of `matcher` into `out` (HF split_with_indices), the added
  // tokens' tokens into `tokens`.
  void SplitOnMatches(NormalizedString&& s, const Matcher& matcher, std::vector<Split>& out,
                      std::vector<Token>& tokens) const;

  tsl::hopscotch_map<std::string, std::int32_t, StringViewHash, std::equal_to<>> ids_;
  std::map<std::int32_t, AddedToken> tokens_;             // by id
  std::map<std::int32_t, std::string> normalized_forms_;  // where normalizing changes one
  std::set<std::string, std::less<>> specials_;
  Matcher raw_, normalized_;
  std::size_t id_limit_ = 0;
};

}  // namespace ember::engine

#endif  // EMBER_ENGINE_TOKENIZER_ADDED_VOCABULARY_H_
