// SentencePiece's normalization rules as a tokenizer.json carries them (the "Precompiled"
// normalizer's precompiled_charsmap: XLM-RoBERTa, multilingual-e5, bge-m3, T5, ...), read as HF's
// spm_precompiled crate reads them: a 32-bit length, a double-array trie (darts-clone) of input
// byte strings, then the NUL-terminated replacements its values point into. Internal to
// engine/tokenizer/; immutable once made.
#ifndef EMBER_ENGINE_TOKENIZER_PRECOMPILED_CHARSMAP_H_
#define EMBER_ENGINE_TOKENIZER_PRECOMPILED_CHARSMAP_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ember::engine {

class PrecompiledCharsmap {
 public:
  // `blob`: the decoded precompiled_charsmap. Throws TokenizerError (kBadConfig) when it is
  // truncated or its replacements are not UTF-8.
  explicit PrecompiledCharsmap(std::string_view blob);

  // The replacement of the shortest prefix of `chunk` that the rules name (spm_precompiled's
  // transform: the first result of the trie's common prefix search); nullopt when none does.
  // A trie that points outside itself names nothing.
  std::optional<std::string_view> Transform(std::string_view chunk) const;

 private:
  std::vector<std::uint32_t> trie_;
  std::string normalized_;
};

}  // namespace ember::engine

#endif  // EMBER_ENGINE_TOKENIZER_PRECOMPILED_CHARSMAP_H_
