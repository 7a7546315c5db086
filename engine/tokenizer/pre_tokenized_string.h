// A text on its way through a tokenizer.json pipeline once its added tokens are found (internal
// to engine/tokenizer/): HF's PreTokenizedString, the text as a list of splits, each a
// NormalizedString of its own. Pre-tokenizers split the splits that have no tokens yet; the
// model gives each of those its tokens; an added token's split has its one token from the start.
#ifndef EMBER_ENGINE_TOKENIZER_PRE_TOKENIZED_STRING_H_
#define EMBER_ENGINE_TOKENIZER_PRE_TOKENIZED_STRING_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "engine/tokenizer/normalized_string.h"

namespace ember::engine {

// One token of a split: its id and the bytes of the split's normalized text it covers.
// `literal`: its text is those bytes rather than its vocabulary entry (a fused unknown piece).
struct Token {
  std::int32_t id;
  std::uint32_t begin, end;
  bool literal = false;
};

// A split and, once it has them, its tokens: [first, first + count) of its string's token pool
// (one pool for all splits, so that no split allocates for its tokens).
struct Split {
  NormalizedString text;
  bool tokenized = false;  // tokens are final (an added token's, or the model's)
  std::uint32_t first = 0, count = 0;
};

class PreTokenizedString {
 public:
  std::vector<Split>& splits() { return splits_; }
  const std::vector<Split>& splits() const { return splits_; }
  std::vector<Token>& tokens() { return tokens_; }
  const std::vector<Token>& tokens() const { return tokens_; }
  void Clear() {
    splits_.clear();
    tokens_.clear();
  }

  // Replaces each split without tokens by the pieces fn(NormalizedString&&, emit) gives
  // emit(NormalizedString&&), dropping empty ones (HF split()).
  template <class Fn>
  void SplitEach(Fn fn) {
    next_.clear();
    const auto emit = [this](NormalizedString&& piece) {
      if (!piece.empty()) next_.push_back(Split{std::move(piece), false, 0, 0});
    };
    for (Split& s : splits_) {
      if (s.tokenized) {
        next_.push_back(std::move(s));
      } else {
        fn(std::move(s.text), emit);
      }
    }
    splits_.swap(next_);
  }
  // Applies fn(NormalizedString&) to each split without tokens (HF normalize()).
  template <class Fn>
  void NormalizeEach(Fn fn) {
    for (Split& s : splits_) {
      if (!s.tokenized) fn(s.text);
    }
  }

 private:
  std::vector<Split> splits_;
  std::vector<Split> next_;
  std::vector<Token> tokens_;
};

}  // namespace ember::engine

#endif  // EMBER_ENGINE_TOKENIZER_PRE_TOKENIZED_STRING_H_
