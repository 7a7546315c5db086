#include "engine/tokenizer/pre_tokenizers.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "engine/tokenizer/byte_level_alphabet.h"
#include "engine/tokenizer/json_fields.h"
#include "engine/tokenizer/text_pattern.h"

namespace ember::engine {
namespace {

using json_fields::Json;

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

// Splits each split on the characters `is_match` holds for.
template <class Predicate>
void SplitOnChars(PreTokenizedString& text, Predicate is_match, SplitBehavior behavior) {
  text.SplitEach([&](NormalizedString&& s, std::vector<NormalizedString>& out) {
    thread_local Pieces pieces;
    FindCharMatches(s.get(), is_match, pieces);
    s.Split(pieces, behavior, out);
  });
}

class BertPreTokenizer final : public PreTokenizer {
 public:
  void PreTokenize(PreTokenizedString& text) const override {
    SplitOnChars(text, hf::IsWhitespace, SplitBehavior::kRemoved);
    SplitOnChars(text, hf::IsBertPunctuation, SplitBehavior::kIsolated);
  }
};

// Runs of word characters and runs of other non-space characters (\w+|[^\w\s]+, Rust's regex).
class WhitespacePreTokenizer final : public PreTokenizer {
 public:
  WhitespacePreTokenizer() : regex_("\\w+|[^\\w\\s]+") {}
  void PreTokenize(PreTokenizedString& text) const override {
    text.SplitEach([&](NormalizedString&& s, std::vector<NormalizedString>& out) {
      thread_local Pieces pieces;
      FindRegexMatches(s.get(), regex_, pieces);
      InvertMatches(pieces);
      s.Split(pieces, SplitBehavior::kRemoved, out);
    });
  }

 private:
  Regex regex_;
};

class WhitespaceSplitPreTokenizer final : public PreTokenizer {
 public:
  void PreTokenize(PreTokenizedString& text) const override {
    SplitOnChars(text, hf::IsWhitespace, SplitBehavior::kRemoved);
  }
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
    text.SplitEach([&](NormalizedString&& s, std::vector<NormalizedString>& out) {
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
        out.push_back(std::move(s));
        return;
      }
      FindCharMatches(
          s.get(), [&](char32_t c) { return c == replacement_; }, pieces);
      s.Split(pieces, SplitBehavior::kMergedWithNext, out);
    });
  }
  bool NeedsOriginalOffsets() const override { return scheme_ == Scheme::kFirst; }

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
    text.SplitEach([&](NormalizedString&& s, std::vector<NormalizedString>& out) {
      if (add_prefix_space_ && !s.get().starts_with(' ')) s.Prepend(" ");
      if (!use_regex_) {
        out.push_back(std::move(s));
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

  static const Regex& Gpt2Regex() {
    static const Regex regex(
        R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)");
    return regex;
  }

 private:
  bool add_prefix_space_, use_regex_;
};

class SplitPreTokenizer final : public PreTokenizer {
 public:
  explicit SplitPreTokenizer(const Json& spec)
      : pattern_(json_fields::Required(spec, "pattern", "Split"), "Split"),
        behavior_(ParseBehavior(spec, "Split")),
        invert_(json_fields::Bool(spec, "invert", false, "Split")) {}

  void PreTokenize(PreTokenizedString& text) const override {
    text.SplitEach([&](NormalizedString&& s, std::vector<NormalizedString>& out) {
      thread_local Pieces pieces;
      pattern_.Find(s.get(), pieces);
      if (invert_) InvertMatches(pieces);
      s.Split(pieces, behavior_, out);
    });
  }

 private:
  TextPattern pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

class DigitsPreTokenizer final : public PreTokenizer {
 public:
  explicit DigitsPreTokenizer(const Json& spec)
      : individual_(json_fields::Bool(spec, "individual_digits", false, "Digits")) {}
  void PreTokenize(PreTokenizedString& text) const override {
    SplitOnChars(text, hf::IsNumeric,
                 individual_ ? SplitBehavior::kIsolated : SplitBehavior::kContiguous);
  }

 private:
  bool individual_;
};

class PunctuationPreTokenizer final : public PreTokenizer {
 public:
  explicit PunctuationPreTokenizer(const Json& spec)
      : behavior_(ParseBehavior(spec, "Punctuation")) {}
  void PreTokenize(PreTokenizedString& text) const override {
    SplitOnChars(text, hf::IsBertPunctuation, behavior_);
  }

 private:
  SplitBehavior behavior_;
};

class CharDelimiterPreTokenizer final : public PreTokenizer {
 public:
  explicit CharDelimiterPreTokenizer(const Json& spec)
      : delimiter_(json_fields::OneChar(spec, "delimiter", "CharDelimiterSplit")) {}
  void PreTokenize(PreTokenizedString& text) const override {
    SplitOnChars(
        text, [&](char32_t c) { return c == delimiter_; }, SplitBehavior::kRemoved);
  }

 private:
  char32_t delimiter_;
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

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

}  // namespace

std::unique_ptr<PreTokenizer> MakePreTokenizer(const Json& spec) {
  if (spec.is_null()) return nullptr;
  const std::string type = json_fields::TypeOf(spec, "pre_tokenizer");
  if (type == "BertPreTokenizer") return std::make_unique<BertPreTokenizer>();
  if (type == "Whitespace") return std::make_unique<WhitespacePreTokenizer>();
  if (type == "WhitespaceSplit") return std::make_unique<WhitespaceSplitPreTokenizer>();
  if (type == "Metaspace") return std::make_unique<MetaspacePreTokenizer>(spec);
  if (type == "ByteLevel") return std::make_unique<ByteLevelPreTokenizer>(spec);
  if (type == "Split") return std::make_unique<SplitPreTokenizer>(spec);
  if (type == "Digits") return std::make_unique<DigitsPreTokenizer>(spec);
  if (type == "Punctuation") return std::make_unique<PunctuationPreTokenizer>(spec);
  if (type == "CharDelimiterSplit") return std::make_unique<CharDelimiterPreTokenizer>(spec);
  if (type == "Sequence") return std::make_unique<SequencePreTokenizer>(spec);
  BadConfig("pre_tokenizer type \"" + type +
            "\" is not supported (ember reads BertPreTokenizer, Whitespace, WhitespaceSplit, "
            "Metaspace, ByteLevel, Split, Digits, Punctuation, CharDelimiterSplit, Sequence)");
}

}  // namespace ember::engine
