// HF's Unigram model (internal to engine/tokenizer/): SentencePiece's unigram language model, as
// XLM-RoBERTa, multilingual-e5, bge-m3, T5 and ALBERT use it. The tokens of a word are the
// segmentation of highest total score (Viterbi over every piece that starts at each character,
// found by walking a byte trie of the vocabulary); a character no piece starts with is the
// unknown token, scored 10 below the lowest piece, and a run of them is fused into one; with
// byte_fallback an unknown run becomes its bytes' <0xXX> tokens. Ties keep the first path
// found, as HF's encode_optimized does.
//
// Words seen before come from the model's word cache (word_cache.h).
#ifndef EMBER_ENGINE_TOKENIZER_UNIGRAM_MODEL_H_
#define EMBER_ENGINE_TOKENIZER_UNIGRAM_MODEL_H_

#include <string>

#include "engine/tokenizer/token_model.h"
#include "engine/tokenizer/vocabulary.h"
#include "engine/tokenizer/word_cache.h"

namespace ember::engine {

class UnigramModel final : public TokenModel {
 public:
  explicit UnigramModel(const nlohmann::json& spec);

  void Tokenize(std::string_view word, std::vector<Token>& out) const override;
  std::optional<std::int32_t> TokenToId(std::string_view token) const override {
    return vocab_.Find(token);
  }
  std::string_view IdToToken(std::int32_t id) const override { return vocab_.Token(id); }
  std::size_t vocab_size() const override { return scores_.size(); }
  std::size_t id_limit() const override { return scores_.size(); }

  // A piece of the best segmentation: bytes [begin, end) of the word, its piece (-1: unknown).
  struct Piece {
    std::uint32_t begin, end;
    std::int32_t id;
  };

 private:
  // The best segmentation of `word` (HF encode_optimized), unknown runs fused.
  void Segment(std::string_view word, std::vector<Piece>& pieces) const;

  Vocabulary vocab_;
  std::vector<double> scores_;  // by id
  std::optional<std::int32_t> unk_id_;
  bool byte_fallback_;
  double unk_score_;
  std::optional<std::int32_t> byte_ids_[256];

  // The vocabulary as a byte trie: node 0 is the root; node n's children are
  // edges_[first_[n], first_[n + 1]), sorted by label; value_[n] is the id of the piece that
  // ends there, or -1.
  std::vector<std::uint32_t> first_;
  std::vector<unsigned char> labels_;
  std::vector<std::uint32_t> targets_;
  std::vector<std::int32_t> value_;
  mutable WordCache<Piece> cache_{kWordCacheCapacity};
};

}  // namespace ember::engine

#endif  // EMBER_ENGINE_TOKENIZER_UNIGRAM_MODEL_H_
