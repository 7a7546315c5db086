// GPT-2's byte-level alphabet (internal to engine/tokenizer/): each of the 256 byte values as a
// printable character ('!'..'~', '¡'..'¬', '®'..'ÿ' as themselves, the other 68 from U+0100 on),
// so that a byte-level BPE sees every text as printable characters (HF's bytes_char).
#ifndef EMBER_ENGINE_TOKENIZER_BYTE_LEVEL_ALPHABET_H_
#define EMBER_ENGINE_TOKENIZER_BYTE_LEVEL_ALPHABET_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "engine/tokenizer/hf_unicode.h"

namespace ember::engine {

constexpr std::array<char32_t, 256> MakeByteLevelAlphabet() {
  std::array<char32_t, 256> table{};
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    table[static_cast<std::size_t>(b)] = printable ? static_cast<char32_t>(b) : next++;
  }
  return table;
}
inline constexpr std::array<char32_t, 256> kByteLevelChar = MakeByteLevelAlphabet();

// The byte a byte-level character stands for; nullopt for a character outside the alphabet.
inline std::optional<std::uint8_t> ByteOfByteLevelChar(char32_t c) {
  if (c < 256 && kByteLevelChar[c] == c) return static_cast<std::uint8_t>(c);
  if (c >= 256 && c < 256 + 68) {
    for (int b = 0; b < 256; ++b) {
      if (kByteLevelChar[static_cast<std::size_t>(b)] == c) return static_cast<std::uint8_t>(b);
    }
  }
  return std::nullopt;
}

// Each byte of `text` as its character: the first byte of each character replaces it (0), the
// others are added after it (1), as HF's ByteLevel transformations are.
inline void AppendByteLevel(std::string_view text, std::vector<hf::Change>& out) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto b = static_cast<unsigned char>(text[i]);
    out.push_back({kByteLevelChar[b], (b & 0xC0) == 0x80 ? 1 : 0});
  }
}

}  // namespace ember::engine

#endif  // EMBER_ENGINE_TOKENIZER_BYTE_LEVEL_ALPHABET_H_
