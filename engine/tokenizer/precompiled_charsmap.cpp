#include "engine/tokenizer/precompiled_charsmap.h"

#include <cstring>

#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/unicode_text.h"

namespace ember::engine {
namespace {

// darts-clone's unit layout.
bool HasLeaf(std::uint32_t unit) { return ((unit >> 8) & 1u) == 1u; }
std::uint32_t Value(std::uint32_t unit) { return unit & ((1u << 31) - 1); }
std::uint32_t Label(std::uint32_t unit) { return unit & ((1u << 31) | 0xFFu); }
std::uint32_t Offset(std::uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }

}  // namespace

PrecompiledCharsmap::PrecompiledCharsmap(std::string_view blob) {
  std::uint32_t trie_bytes = 0;
  if (blob.size() < 4) BadConfig("Precompiled: precompiled_charsmap is shorter than its header");
  std::memcpy(&trie_bytes, blob.data(), 4);  // little-endian, as ember's hosts
  const std::size_t units = trie_bytes / 4;
  if (units == 0 || blob.size() - 4 < units * 4) {
    BadConfig("Precompiled: precompiled_charsmap's trie (" + std::to_string(trie_bytes) +
              " bytes) is empty or longer than the charsmap");
  }
  trie_.resize(units);
  std::memcpy(trie_.data(), blob.data() + 4, units * 4);
  normalized_.assign(blob.substr(4 + units * 4));
  try {
    unicode::ValidateUtf8(normalized_);
  } catch (const TokenizerError&) {
    BadConfig("Precompiled: precompiled_charsmap's replacements are not UTF-8");
  }
}

std::optional<std::string_view> PrecompiledCharsmap::Transform(std::string_view chunk) const {
  std::size_t node = Offset(trie_[0]);
  for (const char ch : chunk) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == 0) break;
    node ^= c;
    if (node >= trie_.size()) return std::nullopt;
    const std::uint32_t unit = trie_[node];
    if (Label(unit) != c) return std::nullopt;
    node ^= Offset(unit);
    if (HasLeaf(unit)) {
      if (node >= trie_.size()) return std::nullopt;
      // The first (shortest) match decides.
      const std::size_t begin = Value(trie_[node]);
      if (begin > normalized_.size()) return std::nullopt;
      std::size_t end = normalized_.find('\0', begin);
      if (end == std::string::npos) end = normalized_.size();
      return std::string_view(normalized_).substr(begin, end - begin);
    }
  }
  return std::nullopt;
}

}  // namespace ember::engine
