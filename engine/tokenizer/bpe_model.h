// HF's BPE model (internal to engine/tokenizer/): a word's characters (each with the
// continuing-subword prefix after the first and the end-of-word suffix on the last; an unknown
// one as its bytes' <0xXX> tokens with byte_fallback, else the unknown token, runs of them fused
// with fuse_unk) merged pair by pair, the lowest-ranked merge first and the leftmost of equals;
// with ignore_merges a word that is a token is that token. GPT-2, RoBERTa, ModernBERT, Qwen (the
// byte-level alphabet comes from the pre-tokenizer), Llama and Mistral (SentencePiece BPE with
// byte fallback). Dropout, which makes tokenization random, is refused.
//
// Words seen before come from a per-thread cache (at most 10,000 words of under 256 bytes, as
// HF's), so that repeated words cost one lookup.
#ifndef EMBER_ENGINE_TOKENIZER_BPE_MODEL_H_
#define EMBER_ENGINE_TOKENIZER_BPE_MODEL_H_

#include <tsl/hopscotch_map.h>

#include <optional>
#include <string>

#include "engine/tokenizer/token_model.h"
#include "engine/tokenizer/vocabulary.h"

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
  struct Merge {
    std::uint32_t rank;
    std::int32_t id;
  };
  static std::uint64_t Key(std::int32_t a, std::int32_t b) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) |
           static_cast<std::uint32_t>(b);
  }
  std::optional<Merge> FindMerge(std::int32_t a, std::int32_t b) const {
    const auto it = merges_.find(Key(a, b));
    if (it == merges_.end()) return std::nullopt;
    return it->second;
  }
  // The word's symbols before any merge (HF merge_word's first half).
  void Initial(std::string_view word, std::vector<Symbol>& symbols) const;
  // Merges `symbols` in place (HF Word::merge_all without dropout).
  void MergeAll(std::vector<Symbol>& symbols) const;

  // The key of a pair mixed (std::hash of an integer is the integer itself, whose low bits,
  // the right token alone, would crowd the map's buckets).
  struct PairHash {
    std::size_t operator()(std::uint64_t k) const noexcept {
      k ^= k >> 33;
      k *= 0xff51afd7ed558ccdULL;
      k ^= k >> 33;
      return static_cast<std::size_t>(k);
    }
  };

  Vocabulary vocab_;
  tsl::hopscotch_map<std::uint64_t, Merge, PairHash> merges_;
  std::optional<std::int32_t> unk_;
  std::string unk_token_;  // named but maybe not in the vocabulary (an error when needed)
  bool has_unk_ = false;
  std::string prefix_, suffix_;
  bool fuse_unk_, byte_fallback_, ignore_merges_;
  std::optional<std::int32_t> byte_ids_[256];  // <0x00> .. <0xFF>, with byte_fallback
  std::uint64_t cache_key_;                    // this model's key in the per-thread word caches
};

}  // namespace ember::engine

#endif  // EMBER_ENGINE_TOKENIZER_BPE_MODEL_H_
