// The model of a tokenizer.json (internal to engine/tokenizer/): what turns one pre-tokenized
// word into tokens. WordPiece (wordpiece_model.h), BPE (bpe_model.h), Unigram (unigram_model.h)
// and WordLevel (here), each with HF tokenizers' rules. Immutable once made; Tokenize is const
// and thread-safe.
#ifndef EMBER_ENGINE_TOKENIZER_TOKEN_MODEL_H_
#define EMBER_ENGINE_TOKENIZER_TOKEN_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string_view>
#include <vector>

#include "engine/tokenizer/pre_tokenized_string.h"

namespace ember::engine {

class TokenModel {
 public:
  virtual ~TokenModel() = default;
  // Appends the tokens of `word` (non-empty, valid UTF-8) to `out`, their offsets into `word`.
  // Throws TokenizerError (kBadConfig) where HF fails too (an unknown piece and no unknown
  // token to stand for it).
  virtual void Tokenize(std::string_view word, std::vector<Token>& out) const = 0;
  virtual std::optional<std::int32_t> TokenToId(std::string_view token) const = 0;
  virtual std::string_view IdToToken(std::int32_t id) const = 0;  // "" when none
  // HF's get_vocab_size: how many tokens the vocabulary has (added tokens not in it are
  // numbered from here).
  virtual std::size_t vocab_size() const = 0;
  // One above the largest id.
  virtual std::size_t id_limit() const = 0;
};

// The model `spec` (a tokenizer.json "model" object) describes. Throws TokenizerError
// (kBadConfig) naming an unknown type or a bad field.
std::unique_ptr<TokenModel> MakeTokenModel(const nlohmann::json& spec);

}  // namespace ember::engine

#endif  // EMBER_ENGINE_TOKENIZER_TOKEN_MODEL_H_
