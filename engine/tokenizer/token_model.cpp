#include "engine/tokenizer/token_model.h"

#include <nlohmann/json.hpp>

#include "engine/tokenizer/bpe_model.h"
#include "engine/tokenizer/json_fields.h"
#include "engine/tokenizer/unigram_model.h"
#include "engine/tokenizer/vocabulary.h"
#include "engine/tokenizer/wordpiece_model.h"

namespace ember::engine {
namespace {

// HF's WordLevel: a word is its token, or the unknown token.
class WordLevelModel final : public TokenModel {
 public:
  explicit WordLevelModel(const nlohmann::json& spec)
      : vocab_(
            Vocabulary::FromJson(json_fields::Required(spec, "vocab", "WordLevel"), "WordLevel")),
        unk_(json_fields::OptionalString(spec, "unk_token", "WordLevel").value_or("<unk>")) {}

  void Tokenize(std::string_view word, std::vector<Token>& out) const override {
    auto id = vocab_.Find(word);
    if (!id) id = vocab_.Find(unk_);
    if (!id) BadConfig("WordLevel: the unknown token '" + unk_ + "' is not in the vocabulary");
    out.push_back({*id, 0, static_cast<std::uint32_t>(word.size())});
  }
  std::optional<std::int32_t> TokenToId(std::string_view token) const override {
    return vocab_.Find(token);
  }
  std::string_view IdToToken(std::int32_t id) const override { return vocab_.Token(id); }
  std::size_t vocab_size() const override { return vocab_.size(); }
  std::size_t id_limit() const override { return vocab_.id_limit(); }

 private:
  Vocabulary vocab_;
  std::string unk_;
};

}  // namespace

std::unique_ptr<TokenModel> MakeTokenModel(const nlohmann::json& spec) {
  std::string type;
  if (spec.is_object() && spec.contains("type")) {
    type = json_fields::TypeOf(spec, "model");
  } else if (spec.is_object()) {
    // Files older than the "type" field: told apart by their fields, as HF does.
    if (spec.contains("merges")) {
      type = "BPE";
    } else if (spec.contains("continuing_subword_prefix") ||
               spec.contains("max_input_chars_per_word")) {
      type = "WordPiece";
    } else if (spec.contains("vocab") && spec["vocab"].is_array()) {
      type = "Unigram";
    } else {
      type = "WordLevel";
    }
  } else {
    BadConfig("model must be a JSON object");
  }
  if (type == "WordPiece") return std::make_unique<WordPieceModel>(spec);
  if (type == "BPE") return std::make_unique<BpeModel>(spec);
  if (type == "Unigram") return std::make_unique<UnigramModel>(spec);
  if (type == "WordLevel") return std::make_unique<WordLevelModel>(spec);
  BadConfig("model type \"" + type +
            "\" is not supported (ember reads WordPiece, BPE, Unigram, WordLevel)");
}

}  // namespace ember::engine
