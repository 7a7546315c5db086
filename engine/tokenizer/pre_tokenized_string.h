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

struct Split {
  NormalizedString text;
  bool tokenized = false;  // tokens are final (an added token's, or the model's)
  std::vector<Token> tokens;
};

class PreTokenizedString {
 public:
  std::vector<Split>& splits() { return splits_; }
  const std::vector<Split>& splits() const { return splits_; }
  void Clear() { splits_.clear(); }

  // Replaces each split without tokens by the pieces fn(NormalizedString&&, out) appends to
  // `out` (a std::vector<NormalizedString>&), dropping empty ones (HF split()).
  template <class Fn>
  void SplitEach(Fn fn) {
    thread_local std::vector<NormalizedString> pieces;
    next_.clear();
    for (Split& s : splits_) {
      if (s.tokenized) {
        next_.push_back(std::move(s));
        continue;
      }
      pieces.clear();
      fn(std::move(s.text), pieces);
      for (NormalizedString& piece : pieces) {
        if (!piece.empty()) next_.push_back(Split{std::move(piece), false, {}});
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
};

}  // namespace ember::engine

#endif  // EMBER_ENGINE_TOKENIZER_PRE_TOKENIZED_STRING_H_
