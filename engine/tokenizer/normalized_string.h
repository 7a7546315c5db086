// A piece of text as a tokenizer.json pipeline transforms it (internal to engine/tokenizer/): HF
// tokenizers' NormalizedString, with the same operations and the same bookkeeping, so that the
// ids and the byte offsets ember reports are HF's (docs/tokenizers.md).
//
// It holds the normalized text and, when it tracks alignments, where each of its bytes came
// from in the original text: a range [start, stop) relative to this piece's own original, which
// begins at byte shift() of the whole text. Every transformation is HF's transform(): a list of
// output characters, each with what it did to the input (hf::Change), from which the new
// alignments follow. Without tracking (serving, where only the ids matter) the same operations
// make the same text and skip the alignments.
#ifndef EMBER_ENGINE_TOKENIZER_NORMALIZED_STRING_H_
#define EMBER_ENGINE_TOKENIZER_NORMALIZED_STRING_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/tokenizer/hf_unicode.h"
#include "engine/tokenizer/regex.h"
#include "engine/tokenizer/unicode_text.h"

namespace ember::engine {

// A pattern's verdict on a text: consecutive pieces that cover it, each a match or not (HF's
// Pattern::find_matches). An empty text is one piece {0, 0, false}.
struct Piece {
  std::size_t begin, end;
  bool match;
};
using Pieces = std::vector<Piece>;

// Every character for which `is_match` holds is a match of its own.
template <class Predicate>
void FindCharMatches(std::string_view text, Predicate is_match, Pieces& out) {
  out.clear();
  if (text.empty()) {
    out.push_back({0, 0, false});
    return;
  }
  std::size_t last = 0;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t start = i;
    const char32_t c = unicode::DecodeValid(text, i);
    if (!is_match(c)) continue;
    if (last < start) out.push_back({last, start, false});
    out.push_back({start, i, true});
    last = i;
  }
  if (last < text.size()) out.push_back({last, text.size(), false});
}
// Every occurrence of `literal` (non-empty), left to right, without overlaps.
void FindLiteralMatches(std::string_view text, std::string_view literal, Pieces& out);
// Every match of `regex` (Regex::FindAll's).
void FindRegexMatches(std::string_view text, const Regex& regex, Pieces& out);
// Matches become non-matches and back (HF's Invert).
void InvertMatches(Pieces& pieces);

// What Split does with the matched pieces (HF's SplitDelimiterBehavior).
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

class NormalizedString {
 public:
  struct Align {
    std::uint32_t start = 0, stop = 0;
  };

  NormalizedString() = default;
  // `text` (valid UTF-8) as both original and normalized, starting at byte `shift` of the
  // whole text; with `track`, each byte's alignment.
  NormalizedString(std::string_view text, bool track, std::size_t shift = 0);

  const std::string& get() const { return normalized_; }
  // The normalized bytes, for a change that maps each byte to one byte in place (the
  // alignments stay as they are); anything else goes through a transformation.
  std::string& mutable_bytes() { return normalized_; }
  std::size_t len() const { return normalized_.size(); }
  bool empty() const { return normalized_.empty(); }
  bool tracks() const { return track_; }
  // This piece's original: bytes [shift(), shift() + len_original()) of the whole text.
  std::size_t shift() const { return shift_; }
  std::size_t len_original() const { return original_len_; }

  // HF transform_range over the normalized bytes [begin, end): `dest` replaces them; its
  // first `initial_offset` input characters are removed before it.
  void TransformRange(std::size_t begin, std::size_t end, std::span<const hf::Change> dest,
                      std::size_t initial_offset);
  // HF transform(): over the whole original.
  void Transform(std::span<const hf::Change> dest, std::size_t initial_offset);

  void Normalize(hf::NormalForm form);
  void Lowercase();
  // Prepends `s` before the first character (nothing when empty).
  void Prepend(std::string_view s);
  // Replaces each matched piece by `content`.
  void Replace(const Pieces& pieces, std::string_view content);
  // Removes leading / trailing whitespace (Rust's char::is_whitespace).
  void Strip(bool left, bool right);

  // Keeps the characters for which `keep` holds (HF filter).
  template <class Keep>
  void Filter(Keep keep) {
    std::vector<hf::Change>& changes = Scratch();
    int removed = 0;
    std::size_t removed_start = 0;
    std::optional<char32_t> last;
    for (std::size_t i = 0; i < normalized_.size();) {
      const char32_t c = unicode::DecodeValid(normalized_, i);
      if (keep(c)) {
        if (last) {
          changes.push_back({*last, -removed});
        } else {
          removed_start = static_cast<std::size_t>(removed);
        }
        last = c;
        removed = 0;
      } else {
        ++removed;
      }
    }
    if (last) changes.push_back({*last, -removed});
    Transform(changes, removed_start);
  }
  // Replaces each character c by f(c) (HF map).
  template <class F>
  void Map(F f) {
    std::vector<hf::Change>& changes = Scratch();
    for (std::size_t i = 0; i < normalized_.size();) {
      changes.push_back({f(unicode::DecodeValid(normalized_, i)), 0});
    }
    Transform(changes, 0);
  }

  // The piece of normalized bytes [begin, end), as a string of its own (HF slice); nullopt when
  // the range does not fall on character boundaries.
  std::optional<NormalizedString> Slice(std::size_t begin, std::size_t end) const;
  // The original bytes, relative to this piece's original, that normalized bytes [begin, end)
  // came from (HF convert_offsets of a normalized range); nullopt when out of range. Needs
  // tracking.
  std::optional<std::pair<std::size_t, std::size_t>> ToOriginal(std::size_t begin,
                                                                std::size_t end) const;
  // The pieces HF's split() makes of this string, each given to emit(NormalizedString&&)
  // (empty ones included).
  template <class Emit>
  void Split(const Pieces& pieces, SplitBehavior behavior, Emit&& emit) const {
    for (const Cut& c : Cuts(pieces, behavior)) {
      if (c.remove) continue;
      std::optional<NormalizedString> piece = Slice(c.begin, c.end);
      if (!piece) SplitInsideCharacter();
      emit(std::move(*piece));
    }
  }

  struct Cut {
    std::size_t begin, end;
    bool remove;
  };
  // The ranges HF's split() cuts a string into, by its pieces and the behaviour (a per-thread
  // buffer, valid until the next call).
  static const std::vector<Cut>& Cuts(const Pieces& pieces, SplitBehavior behavior);
  // A per-thread buffer for building a transformation (cleared).
  static std::vector<hf::Change>& Scratch();

 private:
  [[noreturn]] static void SplitInsideCharacter();
  // HF convert_offsets of the whole original: the normalized range it covers.
  std::optional<std::pair<std::size_t, std::size_t>> WholeRange() const;

  std::string normalized_;
  std::vector<Align> align_;  // one per normalized byte; empty unless tracking
  std::size_t shift_ = 0;
  std::size_t original_len_ = 0;
  bool track_ = false;
};

}  // namespace ember::engine

#endif  // EMBER_ENGINE_TOKENIZER_NORMALIZED_STRING_H_
