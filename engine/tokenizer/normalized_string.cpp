#include "engine/tokenizer/normalized_string.h"

#include <algorithm>

#include "engine/tokenizer/tokenizer.h"

namespace ember::engine {
namespace {

std::size_t CharLength(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

std::size_t Utf8Length(char32_t c) { return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4; }

bool IsCharBoundary(const std::string& s, std::size_t at) {
  return at == 0 || at >= s.size() || (static_cast<unsigned char>(s[at]) & 0xC0) != 0x80;
}

// Transform's output, built here and swapped in (the buffers keep their capacity).
struct Rebuilt {
  std::string text;
  std::vector<NormalizedString::Align> align;
};
Rebuilt& Output() {
  thread_local Rebuilt out;
  out.text.clear();
  out.align.clear();
  return out;
}

}  // namespace

void FindLiteralMatches(std::string_view text, std::string_view literal, Pieces& out) {
  out.clear();
  if (text.empty()) {
    out.push_back({0, 0, false});
    return;
  }
  std::size_t prev = 0;
  for (std::size_t at = text.find(literal); at != std::string_view::npos && !literal.empty();
       at = text.find(literal, at)) {
    if (prev != at) out.push_back({prev, at, false});
    out.push_back({at, at + literal.size(), true});
    at += literal.size();
    prev = at;
  }
  if (prev != text.size()) out.push_back({prev, text.size(), false});
}

void FindRegexMatches(std::string_view text, const Regex& regex, Pieces& out) {
  out.clear();
  if (text.empty()) {
    out.push_back({0, 0, false});
    return;
  }
  thread_local std::vector<Regex::Match> matches;
  regex.FindAll(text, matches);
  std::size_t prev = 0;
  for (const Regex::Match& m : matches) {
    if (prev != m.begin) out.push_back({prev, m.begin, false});
    out.push_back({m.begin, m.end, true});
    prev = m.end;
  }
  if (prev != text.size()) out.push_back({prev, text.size(), false});
}

void InvertMatches(Pieces& pieces) {
  for (Piece& p : pieces) p.match = !p.match;
}

std::vector<hf::Change>& NormalizedString::Scratch() {
  thread_local std::vector<hf::Change> scratch;
  scratch.clear();
  return scratch;
}

NormalizedString::NormalizedString(std::string_view text, bool track, std::size_t shift)
    : normalized_(text), shift_(shift), original_len_(text.size()), track_(track) {
  if (!track_) return;
  align_.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = CharLength(static_cast<unsigned char>(text[i]));
    const Align a{static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(i + n)};
    align_.insert(align_.end(), n, a);
    i += n;
  }
}

void NormalizedString::TransformRange(std::size_t begin, std::size_t end,
                                      std::span<const hf::Change> dest,
                                      std::size_t initial_offset) {
  // The input characters of [begin, end) are consumed in order: each change <= 0 replaces the
  // next one, and a negative change removes as many more after it.
  std::size_t cursor = begin;
  const auto next_char = [&]() -> std::size_t {
    if (cursor >= end) return 0;
    const std::size_t n = CharLength(static_cast<unsigned char>(normalized_[cursor]));
    cursor += n;
    return n;
  };
  std::size_t offset = begin;
  for (std::size_t k = 0; k < initial_offset; ++k) offset += next_char();
  Rebuilt& out = Output();
  for (const hf::Change& d : dest) {
    if (track_) {
      // An added character shares the alignment of the byte before it (none at the start);
      // any other takes the one of the character it replaces.
      Align a;
      if (d.change > 0) {
        if (offset >= 1 && offset - 1 < align_.size()) a = align_[offset - 1];
      } else if (offset < align_.size()) {
        a = align_[offset];
      } else if (!align_.empty()) {
        a = align_.back();
      }
      out.align.insert(out.align.end(), Utf8Length(d.c), a);
    }
    std::size_t consumed = d.change <= 0 ? next_char() : 0;
    for (int k = 0; k < -d.change; ++k) consumed += next_char();
    offset += consumed;
    unicode::AppendUtf8(out.text, d.c);
  }
  if (begin == 0 && end == normalized_.size()) {
    normalized_.swap(out.text);
    if (track_) align_.swap(out.align);
    return;
  }
  normalized_.replace(begin, end - begin, out.text);
  if (track_) {
    align_.erase(align_.begin() + static_cast<std::ptrdiff_t>(begin),
                 align_.begin() + static_cast<std::ptrdiff_t>(end));
    align_.insert(align_.begin() + static_cast<std::ptrdiff_t>(begin), out.align.begin(),
                  out.align.end());
  }
}

std::optional<std::pair<std::size_t, std::size_t>> NormalizedString::WholeRange() const {
  if (!track_) return std::pair<std::size_t, std::size_t>{0, normalized_.size()};
  // HF convert_offsets(Range::Original(..)): from the first byte of non-zero width that the
  // original's start reaches, to the last byte whose alignment ends inside the original.
  if (original_len_ == 0) return std::pair<std::size_t, std::size_t>{0, 0};
  std::optional<std::size_t> first, last;
  for (std::size_t i = 0; i < align_.size() && original_len_ >= align_[i].stop; ++i) {
    if (!first && align_[i].start != align_[i].stop) first = i;
    last = i + 1;
  }
  if (first && last) return std::pair{*first, *last};
  if (first) return std::pair{*first, *first};
  if (last) return std::pair{*last, *last};
  return std::nullopt;
}

void NormalizedString::Transform(std::span<const hf::Change> dest, std::size_t initial_offset) {
  const auto range = WholeRange();
  if (!range) return;
  TransformRange(range->first, range->second, dest, initial_offset);
}

void NormalizedString::Normalize(hf::NormalForm form) {
  std::vector<hf::Change>& changes = Scratch();
  if (hf::Normalize(normalized_, form, changes)) Transform(changes, 0);
}

void NormalizedString::Lowercase() {
  if (unicode::IsAscii(normalized_)) {
    // One byte for one byte: the alignments stay as they are.
    for (char& c : normalized_) {
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    }
    return;
  }
  std::vector<hf::Change>& changes = Scratch();
  std::u32string lower;
  for (std::size_t i = 0; i < normalized_.size();) {
    lower.clear();
    hf::AppendLowercase(unicode::DecodeValid(normalized_, i), lower);
    for (std::size_t k = 0; k < lower.size(); ++k) changes.push_back({lower[k], k > 0 ? 1 : 0});
  }
  Transform(changes, 0);
}

void NormalizedString::Prepend(std::string_view s) {
  if (normalized_.empty() || s.empty()) return;
  std::size_t i = 0;
  const char32_t next = unicode::DecodeValid(normalized_, i);
  std::vector<hf::Change>& changes = Scratch();
  for (std::size_t k = 0; k < s.size();) {
    changes.push_back({unicode::DecodeValid(s, k), changes.empty() ? 0 : 1});
  }
  changes.push_back({next, 1});
  TransformRange(0, i, changes, 0);
}

void NormalizedString::Replace(const Pieces& pieces, std::string_view content) {
  bool any = false;
  for (const Piece& p : pieces) any = any || p.match;
  if (!any) return;
  Rebuilt& out = Output();
  std::size_t last_end = 0;
  for (const Piece& p : pieces) {
    if (!p.match) continue;
    out.text.append(normalized_, last_end, p.begin - last_end);
    if (track_) {
      out.align.insert(out.align.end(), align_.begin() + static_cast<std::ptrdiff_t>(last_end),
                       align_.begin() + static_cast<std::ptrdiff_t>(p.begin));
      // Every character of `content` is added after the match, with the alignment of its
      // last byte (HF's replace).
      Align a;
      if (p.end >= 1 && p.end - 1 < align_.size()) a = align_[p.end - 1];
      out.align.insert(out.align.end(), content.size(), a);
    }
    out.text.append(content);
    last_end = p.end;
  }
  out.text.append(normalized_, last_end, std::string::npos);
  normalized_.swap(out.text);
  if (track_) {
    out.align.insert(out.align.end(), align_.begin() + static_cast<std::ptrdiff_t>(last_end),
                     align_.end());
    align_.swap(out.align);
  }
}

void NormalizedString::Strip(bool left, bool right) {
  std::vector<char32_t> chars;
  for (std::size_t i = 0; i < normalized_.size();) {
    chars.push_back(unicode::DecodeValid(normalized_, i));
  }
  std::size_t leading = 0, trailing = 0;
  if (left) {
    while (leading < chars.size() && hf::IsWhitespace(chars[leading])) ++leading;
  }
  if (right) {
    while (trailing < chars.size() && hf::IsWhitespace(chars[chars.size() - 1 - trailing])) {
      ++trailing;
    }
  }
  if (leading == 0 && trailing == 0) return;
  std::vector<hf::Change>& changes = Scratch();
  const std::size_t count = chars.size();
  // HF compares the character index with the byte length here: the removal of the trailing
  // whitespace is recorded only where the two agree (ASCII), as HF records it.
  const std::size_t last_kept = normalized_.size() - trailing - 1;
  for (std::size_t i = 0; i < count; ++i) {
    if (i < leading || i >= count - trailing) continue;
    changes.push_back({chars[i], i == last_kept ? -static_cast<int>(trailing) : 0});
  }
  Transform(changes, leading);
}

std::optional<std::pair<std::size_t, std::size_t>> NormalizedString::ToOriginal(
    std::size_t begin, std::size_t end) const {
  if (begin == end) return std::pair{begin, end};
  if (begin > end || end > align_.size()) return std::nullopt;
  return std::pair<std::size_t, std::size_t>{align_[begin].start, align_[end - 1].stop};
}

std::optional<NormalizedString> NormalizedString::Slice(std::size_t begin, std::size_t end) const {
  if (begin > end || end > normalized_.size() || !IsCharBoundary(normalized_, begin) ||
      !IsCharBoundary(normalized_, end)) {
    return std::nullopt;
  }
  NormalizedString out;
  out.track_ = track_;
  out.normalized_.assign(normalized_, begin, end - begin);
  if (!track_) {
    out.shift_ = shift_;
    out.original_len_ = end - begin;
    return out;
  }
  const auto original = ToOriginal(begin, end);
  if (!original) return std::nullopt;
  const auto n_shift = static_cast<std::uint32_t>(original->first);
  out.align_.reserve(end - begin);
  for (std::size_t i = begin; i < end; ++i) {
    out.align_.push_back({align_[i].start - n_shift, align_[i].stop - n_shift});
  }
  out.shift_ = shift_ + original->first;
  out.original_len_ = original->second - original->first;
  return out;
}

const std::vector<NormalizedString::Cut>& NormalizedString::Cuts(const Pieces& pieces,
                                                                 SplitBehavior behavior) {
  thread_local std::vector<Cut> cuts;
  cuts.clear();
  switch (behavior) {
    case SplitBehavior::kIsolated:
      for (const Piece& p : pieces) cuts.push_back({p.begin, p.end, false});
      break;
    case SplitBehavior::kRemoved:
      for (const Piece& p : pieces) cuts.push_back({p.begin, p.end, p.match});
      break;
    case SplitBehavior::kContiguous: {
      bool previous = false;
      for (const Piece& p : pieces) {
        if (p.match == previous && !cuts.empty()) {
          cuts.back().end = p.end;
        } else {
          cuts.push_back({p.begin, p.end, false});
        }
        previous = p.match;
      }
      break;
    }
    case SplitBehavior::kMergedWithPrevious: {
      bool previous = false;
      for (const Piece& p : pieces) {
        if (p.match && !previous && !cuts.empty()) {
          cuts.back().end = p.end;
        } else {
          cuts.push_back({p.begin, p.end, false});
        }
        previous = p.match;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      bool previous = false;
      for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) {
        if (it->match && !previous && !cuts.empty()) {
          cuts.back().begin = it->begin;
        } else {
          cuts.push_back({it->begin, it->end, false});
        }
        previous = it->match;
      }
      std::reverse(cuts.begin(), cuts.end());
      break;
    }
  }
  return cuts;
}

void NormalizedString::SplitInsideCharacter() { BadConfig("a split falls inside a character"); }

}  // namespace ember::engine
