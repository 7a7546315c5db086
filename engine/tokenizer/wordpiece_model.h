// HF's WordPiece model (internal to engine/tokenizer/): greedy longest match from the start of
// the word, each later piece looked up with the continuing-subword prefix ("##"); a word longer
// than max_input_chars_per_word, or one a piece cannot be found for, is the unknown token whole.
#ifndef EMBER_ENGINE_TOKENIZER_WORDPIECE_MODEL_H_
#define EMBER_ENGINE_TOKENIZER_WORDPIECE_MODEL_H_

#include <string>

#include "engine/tokenizer/token_model.h"
#include "engine/tokenizer/vocabulary.h"

namespace ember::engine {

class WordPieceModel final : public TokenModel {
 public:
  explicit WordPieceModel(const nlohmann::json& spec);

  void Tokenize(std::string_view word, std::vector<Token>& out) const override;
  std::optional<std::int32_t> TokenToId(std::string_view token) const override {
    return vocab_.Find(token);
  }
  std::string_view IdToToken(std::int32_t id) const override { return vocab_.Token(id); }
  std::size_t vocab_size() const override { return vocab_.size(); }
  std::size_t id_limit() const override { return vocab_.id_limit(); }

 private:
  void Unknown(std::string_view word, std::vector<Token>& out) const;

  Vocabulary vocab_;
  // The tokens that start with the prefix, without it: a later piece's lookup.
  tsl::hopscotch_map<std::string, std::int32_t, StringViewHash, std::equal_to<>> continuation_;
  std::size_t longest_continuation_ = 0;
  std::string unk_;
  std::string prefix_;
  std::size_t max_chars_;
};

}  // namespace ember::engine

#endif  // EMBER_ENGINE_TOKENIZER_WORDPIECE_MODEL_H_
