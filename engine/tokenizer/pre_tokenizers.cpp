#include "engine/tokenizer/pre_tokenizers.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <string>
#include <vector>

#include "engine/tokenizer/byte_level_alphabet.h"
#include "engine/tokenizer/json_fields.h"
#include "engine/tokenizer/text_pattern.h"

namespace ember::engine {
namespace {

using json_fields::Json;

struct Range {
  std::size_t begin, end;
};

SplitBehavior ParseBehavior(const Json& spec, const std::string& where,
                            SplitBehavior fallback = SplitBehavior::kIsolated) {
  const Json* j = json_fields::Find(spec, "behavior");
  if (j == nullptr) return fallback;
  if (!j->is_string()) BadConfig(where + ": \"behavior\" must be a string");
  std::string b = j->get<std::string>();
  std::erase(b, '_');
  std::transform(b.begin(), b.end(), b.begin(), [](unsigned char c) { return std::tolower(c); });
  if (b == "removed") return SplitBehavior::kRemoved;
  if (b == "isolated") return SplitBehavior::kIsolated;
  if (b == "mergedwithprevious") return SplitBehavior::kMergedWithPrevious;
  if (b == "mergedwithnext") return SplitBehavior::kMergedWithNext;
  if (b == "contiguous") return SplitBehavior::kContiguous;
  BadConfig(where + ": behavior \"" + j->get<std::string>() +
            "\" is not Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous");
}

// A pre-tokenizer that only cuts: the ranges it keeps are computed once (Ranges), and made
// into splits (PreTokenize) or given as views (EachPiece).
class Splitter : public PreTokenizer {
 public:
  // Appends the ranges of `text` the pieces are to `out`, in order (empty ones too).
  virtual void Ranges(std::string_view text, std::vector<Range>& out) const = 0;

  void PreTokenize(PreTokenizedString& text) const final {
    text.SplitEach([&](NormalizedString&& s, auto& out) {
      std::vector<Range>& ranges = RangePool();
      const std::size_t first = ranges.size();
      Ranges(s.get(), ranges);
      for (std::size_t i = first; i < ranges.size(); ++i) {
        std::optional<NormalizedString> piece = s.Slice(ranges[i].begin, ranges[i].end);
        if (!piece) BadConfig("a split falls inside a character");
        out(std::move(*piece));
      }
      ranges.resize(first);
    });
  }
  bool EachPiece(std::string_view text, const PieceSink& sink) const final {
    // The ranges of nested calls (a Sequence's) stack up in one per-thread pool: each call uses
    // indices past its caller's and gives them back when it returns.
    std::vector<Range>& ranges = RangePool();
    const std::size_t first = ranges.size();
    Ranges(text, ranges);
    bool go_on = true;
    for (std::size_t i = first; i < ranges.size() && go_on; ++i) {
      const Range r = ranges[i];
      if (r.end > r.begin) go_on = sink(text.substr(r.begin, r.end - r.begin));
    }
    ranges.resize(first);
    return go_on;
  }

 private:
  static std::vector<Range>& RangePool() {
    thread_local std::vector<Range> pool;
    return pool;
  }
};

// A string buffer of the calling thread for as long as it lives, another for each one alive
// at once (a Sequence nests EachPiece calls).
class Buffer {
 public:
  Buffer() : depth_(Depth()++) {
    if (Pool().size() <= depth_) Pool().resize(depth_ + 1);
    Pool()[depth_].clear();
  }
  ~Buffer() { --Depth(); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  std::string& get() { return Pool()[depth_]; }

 private:
  static std::vector<std::string>& Pool() {
    thread_local std::vector<std::string> pool;
    return pool;
  }
  static std::size_t& Depth() {
    thread_local std::size_t depth = 0;
    return depth;
  }
  std::size_t depth_;
};

// The kept cuts of `pieces` under `behavior`, appended to `out`.
void AppendCuts(const Pieces& pieces, SplitBehavior behavior, std::vector<Range>& out) {
  for (const NormalizedString::Cut& c : NormalizedString::Cuts(pieces, behavior)) {
    if (!c.remove) out.push_back({c.begin, c.end});
  }
}

// Cuts on the characters `is_match` holds for.
template <class Predicate>
class CharSplitter : public Splitter {
 public:
  CharSplitter(Predicate is_match, SplitBehavior behavior)
      : is_match_(std::move(is_match)), behavior_(behavior) {}
  void Ranges(std::string_view text, std::vector<Range>& out) const override {
    thread_local Pieces pieces;
    FindCharMatches(text, is_match_, pieces);
    AppendCuts(pieces, behavior_, out);
  }

 private:
  Predicate is_match_;
  SplitBehavior behavior_;
};
template <class Predicate>
std::unique_ptr<PreTokenizer> MakeCharSplitter(Predicate is_match, SplitBehavior behavior) {
  return std::make_unique<CharSplitter<Predicate>>(std::move(is_match), behavior);
}

// Whitespace removed, then each punctuation character on its own (HF's two splits, in one
// pass: the same pieces).
class BertPreTokenizer final : public Splitter {
  enum Kind : unsigned char { kWord, kSpace, kPunct };
  static constexpr std::array<unsigned char, 128> kAscii = [] {
    std::array<unsigned char, 128> t{};
    for (char32_t c = 0; c < 128; ++c) {
      t[c] = hf::IsWhitespace(c) ? kSpace : hf::IsBertPunctuation(c) ? kPunct : kWord;
    }
    return t;
  }();

 public:
  void Ranges(std::string_view t, std::vector<Range>& out) const override {
    std::size_t i = 0;
    while (i < t.size()) {
      std::size_t next = i;
      const Kind kind = Classify(t, next);
      if (kind == kSpace) {
        i = next;
      } else if (kind == kPunct) {
        out.push_back({i, next});
        i = next;
      } else {
        // A run of word characters: ASCII letters in a tight loop, others classified.
        std::size_t j = next;
        while (j < t.size()) {
          const auto b = static_cast<unsigned char>(t[j]);
          if (b < 0x80) {
            if (kAscii[b] != kWord) break;
            ++j;
            continue;
          }
          std::size_t after = j;
          if (Classify(t, after) != kWord) break;
          j = after;
        }
        out.push_back({i, j});
        i = j;
      }
    }
  }

 private:
  // The class of the character at `i`, which moves past it.
  static Kind Classify(std::string_view t, std::size_t& i) {
    const auto b = static_cast<unsigned char>(t[i]);
    if (b < 0x80) {
      ++i;
      return static_cast<Kind>(kAscii[b]);
    }
    const char32_t c = unicode::DecodeValid(t, i);
    if (hf::IsWhitespace(c)) return kSpace;
    return hf::IsBertPunctuation(c) ? kPunct : kWord;
  }
};

// Runs of word characters and runs of other non-space characters (\w+|[^\w\s]+, Rust's regex).
class WhitespacePreTokenizer final : public Splitter {
 public:
  WhitespacePreTokenizer() : regex_("\\w+|[^\\w\\s]+") {}
  void Ranges(std::string_view text, std::vector<Range>& out) const override {
    thread_local Pieces pieces;
    FindRegexMatches(text, regex_, pieces);
    InvertMatches(pieces);
    AppendCuts(pieces, SplitBehavior::kRemoved, out);
  }

 private:
  Regex regex_;
};

// SentencePiece's whitespace: ' ' becomes the replacement (U+2581), which starts each word.
class MetaspacePreTokenizer final : public PreTokenizer {
 public:
  explicit MetaspacePreTokenizer(const Json& spec)
      : replacement_(json_fields::OneChar(spec, "replacement", "Metaspace")),
        split_(json_fields::Bool(spec, "split", true, "Metaspace")) {
    unicode::AppendUtf8(replacement_text_, replacement_);
    const std::string scheme =
        json_fields::OptionalString(spec, "prepend_scheme", "Metaspace").value_or("always");
    if (scheme == "always") {
      scheme_ = Scheme::kAlways;
    } else if (scheme == "first") {
      scheme_ = Scheme::kFirst;
    } else if (scheme == "never") {
      scheme_ = Scheme::kNever;
    } else {
      BadConfig("Metaspace: prepend_scheme \"" + scheme + "\" is not always, first or never");
    }
    if (const auto add = json_fields::OptionalBool(spec, "add_prefix_space", "Metaspace");
        add && !*add) {
      if (scheme_ != Scheme::kNever && json_fields::Find(spec, "prepend_scheme") != nullptr) {
        BadConfig("Metaspace: add_prefix_space false does not match prepend_scheme " + scheme);
      }
      scheme_ = Scheme::kNever;
    }
  }

  void PreTokenize(PreTokenizedString& text) const override {
    text.SplitEach([&](NormalizedString&& s, auto& out) {
      thread_local Pieces pieces;
      FindCharMatches(
          s.get(), [](char32_t c) { return c == U' '; }, pieces);
      s.Replace(pieces, replacement_text_);
      const bool starts = s.get().starts_with(replacement_text_);
      if ((scheme_ == Scheme::kAlways && !starts) ||
          (scheme_ == Scheme::kFirst && !starts && s.shift() == 0)) {
        s.Prepend(replacement_text_);
      }
      if (!split_) {
        out(std::move(s));
        return;
      }
      FindCharMatches(
          s.get(), [&](char32_t c) { return c == replacement_; }, pieces);
      s.Split(pieces, SplitBehavior::kMergedWithNext, out);
    });
  }
  bool NeedsOriginalOffsets() const override { return scheme_ == Scheme::kFirst; }

  bool EachPiece(std::string_view text, const PieceSink& sink) const override {
    Buffer buffer;
    std::string& s = buffer.get();
    for (const char c : text) {
      if (c == ' ') {
        s += replacement_text_;
      } else {
        s.push_back(c);
      }
    }
    if (scheme_ == Scheme::kAlways && !s.starts_with(replacement_text_)) {
      s.insert(0, replacement_text_);
    }
    if (!split_) return s.empty() || sink(s);
    // Each piece starts at a replacement (merged with what follows it).
    std::size_t begin = 0;
    for (std::size_t at = s.find(replacement_text_, 1); at != std::string::npos;
         at = s.find(replacement_text_, at + replacement_text_.size())) {
      if (!sink(std::string_view(s).substr(begin, at - begin))) return false;
      begin = at;
    }
    return begin == s.size() || sink(std::string_view(s).substr(begin));
  }

 private:
  enum class Scheme { kAlways, kFirst, kNever };
  char32_t replacement_;
  std::string replacement_text_;
  Scheme scheme_ = Scheme::kAlways;
  bool split_;
};

// GPT-2's pre-tokenizer: an optional leading space, its regex, then every byte as a character
// of the byte-level alphabet.
class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  explicit ByteLevelPreTokenizer(const Json& spec)
      : add_prefix_space_(json_fields::Bool(spec, "add_prefix_space", true, "ByteLevel")),
        use_regex_(json_fields::Bool(spec, "use_regex", true, "ByteLevel")) {}

  void PreTokenize(PreTokenizedString& text) const override {
    text.SplitEach([&](NormalizedString&& s, auto& out) {
      if (add_prefix_space_ && !s.get().starts_with(' ')) s.Prepend(" ");
      if (!use_regex_) {
        out(std::move(s));
        return;
      }
      thread_local Pieces pieces;
      FindRegexMatches(s.get(), Gpt2Regex(), pieces);
      s.Split(pieces, SplitBehavior::kIsolated, out);
    });
    text.NormalizeEach([](NormalizedString& s) {
      std::vector<hf::Change>& changes = NormalizedString::Scratch();
      AppendByteLevel(s.get(), changes);
      s.Transform(changes, 0);
    });
  }

  bool EachPiece(std::string_view text, const PieceSink& sink) const override {
    Buffer prefixed, mapped;
    std::string_view t = text;
    if (add_prefix_space_ && !text.starts_with(' ')) {
      prefixed.get().reserve(text.size() + 1);
      prefixed.get().push_back(' ');
      prefixed.get().append(text);
      t = prefixed.get();
    }
    const auto emit = [&](std::string_view piece) {
      std::string& out = mapped.get();
      out.clear();
      for (const char c : piece) {
        const auto& [bytes, length] = ByteChars()[static_cast<unsigned char>(c)];
        out.append(bytes.data(), length);
      }
      return sink(out);
    };
    if (!use_regex_) return t.empty() || emit(t);
    thread_local std::vector<Regex::Match> matches;
    Gpt2Regex().FindAll(t, matches);
    // Isolated: the matches and the text between them, in order.
    std::size_t prev = 0;
    for (const Regex::Match& m : matches) {
      if (prev < m.begin && !emit(t.substr(prev, m.begin - prev))) return false;
      if (m.end > m.begin && !emit(t.substr(m.begin, m.end - m.begin))) return false;
      prev = m.end;
    }
    return prev == t.size() || emit(t.substr(prev));
  }

  static const Regex& Gpt2Regex() {
    static const Regex regex(
        R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)");
    return regex;
  }

 private:
  // Each byte's character of the byte-level alphabet, as UTF-8.
  struct ByteChar {
    std::array<char, 2> bytes;
    std::size_t length;
  };
  static const std::array<ByteChar, 256>& ByteChars() {
    static const std::array<ByteChar, 256> table = [] {
      std::array<ByteChar, 256> t{};
      for (std::size_t b = 0; b < 256; ++b) {
        std::string utf8;
        unicode::AppendUtf8(utf8, kByteLevelChar[b]);
        t[b].length = utf8.size();
        std::copy(utf8.begin(), utf8.end(), t[b].bytes.begin());
      }
      return t;
    }();
    return table;
  }

  bool add_prefix_space_, use_regex_;
};

class SplitPreTokenizer final : public Splitter {
 public:
  explicit SplitPreTokenizer(const Json& spec)
      : pattern_(json_fields::Required(spec, "pattern", "Split"), "Split"),
        behavior_(ParseBehavior(spec, "Split")),
        invert_(json_fields::Bool(spec, "invert", false, "Split")) {}

  void Ranges(std::string_view text, std::vector<Range>& out) const override {
    thread_local Pieces pieces;
    pattern_.Find(text, pieces);
    if (invert_) InvertMatches(pieces);
    AppendCuts(pieces, behavior_, out);
  }

 private:
  TextPattern pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(const Json& spec) {
    const Json& list = json_fields::Required(spec, "pretokenizers", "Sequence pre-tokenizer");
    if (!list.is_array()) BadConfig("Sequence pre-tokenizer: \"pretokenizers\" must be a list");
    for (const Json& item : list) {
      if (auto p = MakePreTokenizer(item)) parts_.push_back(std::move(p));
    }
  }
  void PreTokenize(PreTokenizedString& text) const override {
    for (const auto& p : parts_) p->PreTokenize(text);
  }
  bool NeedsOriginalOffsets() const override {
    return std::ranges::any_of(parts_, [](const auto& p) { return p->NeedsOriginalOffsets(); });
  }
  bool EachPiece(std::string_view text, const PieceSink& sink) const override {
    return Each(0, text, sink);
  }

 private:
  // The pieces of parts_[i..] of `text`: each piece of part i cut again by the rest.
  bool Each(std::size_t i, std::string_view text, const PieceSink& sink) const {
    if (i == parts_.size()) return sink(text);
    auto next = [&](std::string_view piece) { return Each(i + 1, piece, sink); };
    return parts_[i]->EachPiece(text, PieceSink(next));
  }

  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

}  // namespace

std::unique_ptr<PreTokenizer> MakePreTokenizer(const Json& spec) {
  if (spec.is_null()) return nullptr;
  const std::string type = json_fields::TypeOf(spec, "pre_tokenizer");
  if (type == "BertPreTokenizer") return std::make_unique<BertPreTokenizer>();
  if (type == "Whitespace") return std::make_unique<WhitespacePreTokenizer>();
  if (type == "WhitespaceSplit") return MakeCharSplitter(hf::IsWhitespace, SplitBehavior::kRemoved);
  if (type == "Metaspace") return std::make_unique<MetaspacePreTokenizer>(spec);
  if (type == "ByteLevel") return std::make_unique<ByteLevelPreTokenizer>(spec);
  if (type == "Split") return std::make_unique<SplitPreTokenizer>(spec);
  if (type == "Digits") {
    return MakeCharSplitter(hf::IsNumeric,
                            json_fields::Bool(spec, "individual_digits", false, "Digits")
                                ? SplitBehavior::kIsolated
                                : SplitBehavior::kContiguous);
  }
  if (type == "Punctuation") {
    return MakeCharSplitter(hf::IsBertPunctuation, ParseBehavior(spec, "Punctuation"));
  }
  if (type == "CharDelimiterSplit") {
    const char32_t delimiter = json_fields::OneChar(spec, "delimiter", "CharDelimiterSplit");
    return MakeCharSplitter([delimiter](char32_t c) { return c == delimiter; },
                            SplitBehavior::kRemoved);
  }
  if (type == "Sequence") return std::make_unique<SequencePreTokenizer>(spec);
  BadConfig("pre_tokenizer type \"" + type +
            "\" is not supported (ember reads BertPreTokenizer, Whitespace, WhitespaceSplit, "
            "Metaspace, ByteLevel, Split, Digits, Punctuation, CharDelimiterSplit, Sequence)");
}

}  // namespace ember::engine
