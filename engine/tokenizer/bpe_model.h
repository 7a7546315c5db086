// HF's BPE model (internal to engine/tokenizer/): a word's characters (each with the
// continuing-subword prefix after the first and the end-of-word suffix on the last; an unknown
// one as its bytes' <0xXX> tokens with byte_fallback, else the unknown token, runs of them fused
// with fuse_unk) merged pair by pair, the lowest-ranked merge first and the leftmost of equals;
// with ignore_merges a word that is a token is that token. GPT-2, RoBERTa, ModernBERT, Qwen (the
// byte-level alphabet comes from the pre-tokenizer), Llama and Mistral (SentencePiece BPE with
// byte fallback). Dropout, which makes tokenization random, is refused.
//
// Words seen before come from the model's word cache (word_cache.h), so that repeated words
// cost one lookup.
#ifndef EMBER_ENGINE_TOKENIZER_BPE_MODEL_H_
#define EMBER_ENGINE_TOKENIZER_BPE_MODEL_H_

#include <tsl/hopscotch_map.h>

#include <optional>
#include <string>

#include "engine/tokenizer/pair_table.h"
#include "engine/tokenizer/token_model.h"
#include "engine/tokenizer/vocabulary.h"
#include "engine/tokenizer/word_cache.h"

namespace ember::engine {

class BpeModel final : public TokenModel {
 public:
  explicit BpeModel(const nlohmann::json& spec);

  void Tokenize(std::string_view word, std::vector<Token>& out) const override;
  std::optional<std::int32_t> TokenToId(std::string_view token) const override {
    return vocab_.Find(token);
  }
  std::string_view IdToToken(std::int32_t id) const override { return vocab_.Token(id); }
  std::size_t vocab_size() const override { return vocab_.size(); }
  std::size_t id_limit() const override { return vocab_.id_limit(); }

  // A symbol of a word being merged: its token and how many bytes of the word it covers.
  struct Symbol {
    std::int32_t id;
    std::uint32_t bytes;
  };

 private:
  using Merge = PairTable::Value;
  std::optional<Merge> FindMerge(std::int32_t a, std::int32_t b) const {
    const Merge* m = merges_.Find(a, b);
    if (m == nullptr) return std::nullopt;
    return *m;
  }
  // The tokens of `word`, which starts at byte `base` of the word being tokenized.
  void TokenizeRun(std::string_view word, std::uint32_t base, std::vector<Token>& out) const;
  // The word's symbols before any merge (HF merge_word's first half).
  void Initial(std::string_view word, std::vector<Symbol>& symbols) const;
  // Merges `symbols` in place (HF Word::merge_all without dropout).
  void MergeAll(std::vector<Symbol>& symbols) const;

  Vocabulary vocab_;
  PairTable merges_;
  std::optional<std::int32_t> unk_;
  std::string unk_token_;  // named but maybe not in the vocabulary (an error when needed)
  bool has_unk_ = false;
  std::string prefix_, suffix_;
  bool fuse_unk_, byte_fallback_, ignore_merges_;
  std::optional<std::int32_t> byte_ids_[256];  // <0x00> .. <0xFF>, with byte_fallback
  // The ids of the one-character tokens of one or two UTF-8 bytes, by code point (-1: none):
  // the byte-level alphabet and ASCII, looked up without hashing.
  std::vector<std::int32_t> short_chars_;
  static constexpr std::string_view kMetaspace = "\u2581";  // "▁", SentencePiece's space
  bool cut_before_metaspace_ = false;  // Tokenize merges the runs between "▁"s alone
  mutable WordCache<Symbol> cache_{kWordCacheCapacity};
};

}  // namespace ember::engine

#endif  // EMBER_ENGINE_TOKENIZER_BPE_MODEL_H_
