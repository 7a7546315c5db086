#include "engine/tokenizer/normalizers.h"

#include <array>
#include <optional>
#include <vector>

#include "engine/tokenizer/byte_level_alphabet.h"
#include "engine/tokenizer/json_fields.h"
#include "engine/tokenizer/precompiled_charsmap.h"
#include "engine/tokenizer/text_pattern.h"

namespace ember::engine {
namespace {

using json_fields::Json;

class BertNormalizer final : public Normalizer {
 public:
  explicit BertNormalizer(const Json& spec)
      : clean_text_(json_fields::Bool(spec, "clean_text", true, "BertNormalizer")),
        chinese_chars_(json_fields::Bool(spec, "handle_chinese_chars", true, "BertNormalizer")),
        lowercase_(json_fields::Bool(spec, "lowercase", true, "BertNormalizer")),
        final_sigma_(json_fields::Bool(spec, "final_sigma", false, "BertNormalizer")),
        strip_accents_(json_fields::OptionalBool(spec, "strip_accents", "BertNormalizer")
                           .value_or(lowercase_)) {}

  void Normalize(NormalizedString& text) const override {
    if (AsciiInPlace(text)) return;
    const bool ascii = unicode::IsAscii(text.get());
    if (clean_text_) CleanText(text);
    if (chinese_chars_ && !ascii) HandleChineseChars(text);
    if (strip_accents_ && !ascii) {
      text.Normalize(hf::NormalForm::kNfd);
      text.Filter([](char32_t c) { return !hf::IsMarkNonspacing(c); });
    }
    if (lowercase_ && final_sigma_) {
      LowercaseFinalSigma(text);
    } else if (lowercase_) {
      text.Lowercase();
    }
  }

 private:
  // ASCII text without controls to remove: its whitespace becomes ' ' and its capitals small
  // letters, byte for byte, which leaves every alignment as it is (what the transformations
  // would make). Returns false, changing nothing, for a text that needs them.
  bool AsciiInPlace(NormalizedString& text) const {
    std::string& t = text.mutable_bytes();
    unsigned char high = 0, control = 0;
    for (const char c : t) {
      const auto b = static_cast<unsigned char>(c);
      high |= b;
      control |= static_cast<unsigned char>(b < 0x20 || b == 0x7F);
    }
    if (high >= 0x80) return false;
    const bool clean = clean_text_, lower = lowercase_;
    if (control != 0 && clean) {
      for (const char c : t) {
        const auto b = static_cast<unsigned char>(c);
        if ((b < 0x20 && b != '\t' && b != '\n' && b != '\r') || b == 0x7F) return false;
      }
      for (char& c : t) c = (c == '\t' || c == '\n' || c == '\r') ? ' ' : c;
    }
    if (lower) {
      char* p = t.data();
      const std::size_t n = t.size();
      for (std::size_t i = 0; i < n; ++i) {
        p[i] = static_cast<char>(p[i] + ((p[i] >= 'A' && p[i] <= 'Z') ? 32 : 0));
      }
    }
    return true;
  }

  // Removes NUL, U+FFFD and the "other" characters but \t \n \r; whitespace becomes ' '.
  static void CleanText(NormalizedString& text) {
    const auto drop = [](char32_t c) {
      if (c == '\t' || c == '\n' || c == '\r') return false;
      return c == 0 || c == 0xFFFD || hf::IsOther(c);
    };
    const auto space = [](char32_t c) {
      return c == '\t' || c == '\n' || c == '\r' || hf::IsWhitespace(c);
    };
    bool any_drop = false, any_space = false;
    for (std::size_t i = 0; i < text.get().size();) {
      const char32_t c = unicode::DecodeValid(text.get(), i);
      any_drop = any_drop || drop(c);
      any_space = any_space || (c != ' ' && space(c));
    }
    if (any_drop) text.Filter([&](char32_t c) { return !drop(c); });
    if (any_space) text.Map([&](char32_t c) { return space(c) ? U' ' : c; });
  }

  static void HandleChineseChars(NormalizedString& text) {
    bool any = false;
    for (std::size_t i = 0; i < text.get().size() && !any;) {
      any = hf::IsChineseChar(unicode::DecodeValid(text.get(), i));
    }
    if (!any) return;
    std::vector<hf::Change>& changes = NormalizedString::Scratch();
    for (std::size_t i = 0; i < text.get().size();) {
      const char32_t c = unicode::DecodeValid(text.get(), i);
      if (hf::IsChineseChar(c)) {
        changes.push_back({U' ', 0});
        changes.push_back({c, 1});
        changes.push_back({U' ', 1});
      } else {
        changes.push_back({c, 0});
      }
    }
    text.Transform(changes, 0);
  }

  // Lowercasing with Python's Final_Sigma (HfTokenizer::Options::final_sigma_per_word): a
  // capital sigma preceded by a cased letter and not followed by one (case-ignorable
  // characters skipped both ways; whitespace stops the search, so each word is its own
  // context) becomes "ς" rather than "σ".
  static void LowercaseFinalSigma(NormalizedString& text) {
    std::vector<char32_t> chars;
    for (std::size_t i = 0; i < text.get().size();) {
      chars.push_back(unicode::DecodeValid(text.get(), i));
    }
    const auto final_sigma = [&](std::size_t k) {
      std::size_t j = k;
      bool after_cased = false;
      while (j > 0) {
        if (!unicode::CaseIgnorable(chars[--j])) {
          after_cased = unicode::Cased(chars[j]);
          break;
        }
      }
      if (!after_cased) return false;
      for (j = k + 1; j < chars.size() && unicode::CaseIgnorable(chars[j]); ++j) {
      }
      return j == chars.size() || !unicode::Cased(chars[j]);
    };
    std::vector<hf::Change>& changes = NormalizedString::Scratch();
    std::u32string lower;
    for (std::size_t k = 0; k < chars.size(); ++k) {
      if (chars[k] == 0x3A3 && final_sigma(k)) {
        changes.push_back({0x3C2, 0});
        continue;
      }
      lower.clear();
      hf::AppendLowercase(chars[k], lower);
      for (std::size_t m = 0; m < lower.size(); ++m) changes.push_back({lower[m], m > 0 ? 1 : 0});
    }
    text.Transform(changes, 0);
  }

  bool clean_text_, chinese_chars_, lowercase_, final_sigma_, strip_accents_;
};

class UnicodeNormalizer final : public Normalizer {
 public:
  explicit UnicodeNormalizer(hf::NormalForm form) : form_(form) {}
  void Normalize(NormalizedString& text) const override { text.Normalize(form_); }

 private:
  hf::NormalForm form_;
};

class LowercaseNormalizer final : public Normalizer {
 public:
  void Normalize(NormalizedString& text) const override { text.Lowercase(); }
};

class StripNormalizer final : public Normalizer {
 public:
  explicit StripNormalizer(const Json& spec)
      : left_(json_fields::Bool(spec, "strip_left", true, "Strip")),
        right_(json_fields::Bool(spec, "strip_right", true, "Strip")) {}
  void Normalize(NormalizedString& text) const override {
    if (left_ && right_) {
      text.Strip(true, true);
    } else {
      if (left_) text.Strip(true, false);
      if (right_) text.Strip(false, true);
    }
  }

 private:
  bool left_, right_;
};

class StripAccentsNormalizer final : public Normalizer {
 public:
  void Normalize(NormalizedString& text) const override {
    if (unicode::IsAscii(text.get())) return;
    text.Filter([](char32_t c) { return !hf::IsCombiningMark(c); });
  }
};

class ReplaceNormalizer final : public Normalizer {
 public:
  explicit ReplaceNormalizer(const Json& spec)
      : pattern_(json_fields::Required(spec, "pattern", "Replace"), "Replace"),
        content_(json_fields::String(spec, "content", "Replace")) {}
  void Normalize(NormalizedString& text) const override {
    thread_local Pieces pieces;
    pattern_.Find(text.get(), pieces);
    text.Replace(pieces, content_);
  }

 private:
  TextPattern pattern_;
  std::string content_;
};

class PrependNormalizer final : public Normalizer {
 public:
  explicit PrependNormalizer(const Json& spec)
      : prepend_(json_fields::String(spec, "prepend", "Prepend")) {}
  void Normalize(NormalizedString& text) const override { text.Prepend(prepend_); }

 private:
  std::string prepend_;
};

std::string DecodeBase64(const std::string& in, const std::string& where) {
  std::array<int, 256> value;
  value.fill(-1);
  const std::string_view alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (std::size_t i = 0; i < alphabet.size(); ++i) {
    value[static_cast<unsigned char>(alphabet[i])] = static_cast<int>(i);
  }
  std::string out;
  out.reserve(in.size() / 4 * 3);
  unsigned bits = 0;
  int count = 0;
  std::size_t i = 0;
  for (; i < in.size() && in[i] != '='; ++i) {
    const int v = value[static_cast<unsigned char>(in[i])];
    if (v < 0) BadConfig(where + " is not base64");
    bits = (bits << 6) | static_cast<unsigned>(v);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out.push_back(static_cast<char>((bits >> count) & 0xFF));
    }
  }
  for (; i < in.size(); ++i) {
    if (in[i] != '=') BadConfig(where + " is not base64");
  }
  return out;
}

// SentencePiece's rules, applied per extended grapheme cluster as HF applies them: a cluster of
// under 6 bytes is replaced whole when a rule names a prefix of it, else each of its
// characters by its own rule.
class PrecompiledNormalizer final : public Normalizer {
 public:
  explicit PrecompiledNormalizer(const Json& spec)
      : map_(DecodeBase64(json_fields::String(spec, "precompiled_charsmap", "Precompiled"),
                          "Precompiled: precompiled_charsmap")) {
    for (int b = 0; b < 0x80; ++b) {
      const char c = static_cast<char>(b);
      ascii_rule_[static_cast<std::size_t>(b)] =
          map_.Transform(std::string_view(&c, 1)).has_value();
    }
    crlf_rule_ = map_.Transform("\r\n").has_value();
  }

  void Normalize(NormalizedString& text) const override {
    const std::string& s = text.get();
    if (unicode::IsAscii(s)) {
      bool any = crlf_rule_ && s.find("\r\n") != std::string::npos;
      for (const char c : s) any = any || ascii_rule_[static_cast<unsigned char>(c)];
      if (!any) return;
    }
    thread_local std::vector<std::size_t> ends;
    hf::GraphemeEnds(s, ends);
    std::vector<hf::Change>& changes = NormalizedString::Scratch();
    bool modified = false;
    std::size_t begin = 0;
    for (const std::size_t end : ends) {
      const std::string_view grapheme = std::string_view(s).substr(begin, end - begin);
      begin = end;
      if (grapheme.size() < 6) {
        if (const auto rule = map_.Transform(grapheme)) {
          modified = true;
          Replace(changes, grapheme, *rule);
          continue;
        }
      }
      for (std::size_t i = 0; i < grapheme.size();) {
        const std::size_t start = i;
        const char32_t c = unicode::DecodeValid(grapheme, i);
        const std::string_view part = grapheme.substr(start, i - start);
        if (const auto rule = map_.Transform(part)) {
          modified = true;
          Replace(changes, part, *rule);
        } else {
          changes.push_back({c, 0});
        }
      }
    }
    if (modified) text.Transform(changes, 0);
  }

 private:
  static std::size_t Chars(std::string_view s) {
    std::size_t n = 0;
    for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
    return n;
  }
  // HF precompiled.rs replace(): the new characters replace the old ones; extra ones are
  // added (1), and fewer ones make the last change so far remove the rest.
  static void Replace(std::vector<hf::Change>& changes, std::string_view old_part,
                      std::string_view new_part) {
    const auto diff = static_cast<long>(Chars(new_part)) - static_cast<long>(Chars(old_part));
    for (std::size_t i = 0; i < new_part.size();) {
      changes.push_back({unicode::DecodeValid(new_part, i), 0});
    }
    if (diff > 0) {
      for (long k = 0; k < diff; ++k)
        changes[changes.size() - 1 - static_cast<std::size_t>(k)].change = 1;
    } else if (diff < 0 && !changes.empty()) {
      changes.back().change += static_cast<int>(diff);
    }
  }

  PrecompiledCharsmap map_;
  std::array<bool, 0x80> ascii_rule_{};
  bool crlf_rule_ = false;
};

// SentencePiece's NMT rules: controls removed, several spaces and separators made ' '.
class NmtNormalizer final : public Normalizer {
 public:
  void Normalize(NormalizedString& text) const override {
    text.Filter([](char32_t c) {
      return !((c >= 0x1 && c <= 0x8) || c == 0xB || (c >= 0xE && c <= 0x1F) || c == 0x7F ||
               c == 0x8F || c == 0x9F);
    });
    text.Map([](char32_t c) -> char32_t {
      switch (c) {
        case 0x9:
        case 0xA:
        case 0xC:
        case 0xD:
        case 0x1680:
        case 0x200B:
        case 0x200C:
        case 0x200D:
        case 0x200E:
        case 0x200F:
        case 0x2028:
        case 0x2029:
        case 0x2581:
        case 0xFEFF:
        case 0xFFFD:
          return U' ';
        default:
          return c;
      }
    });
  }
};

// Each byte of the text as GPT-2's byte-level alphabet writes it.
class ByteLevelNormalizer final : public Normalizer {
 public:
  void Normalize(NormalizedString& text) const override {
    if (text.empty()) return;
    std::vector<hf::Change>& changes = NormalizedString::Scratch();
    AppendByteLevel(text.get(), changes);
    text.Transform(changes, 0);
  }
};

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(const Json& spec) {
    const Json& list = json_fields::Required(spec, "normalizers", "Sequence normalizer");
    if (!list.is_array()) BadConfig("Sequence normalizer: \"normalizers\" must be a list");
    for (const Json& item : list) {
      if (auto n = MakeNormalizer(item)) parts_.push_back(std::move(n));
    }
  }
  void Normalize(NormalizedString& text) const override {
    for (const auto& n : parts_) n->Normalize(text);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

}  // namespace

std::unique_ptr<Normalizer> MakeNormalizer(const Json& spec) {
  if (spec.is_null()) return nullptr;
  const std::string type = json_fields::TypeOf(spec, "normalizer");
  if (type == "BertNormalizer") return std::make_unique<BertNormalizer>(spec);
  if (type == "NFC") return std::make_unique<UnicodeNormalizer>(hf::NormalForm::kNfc);
  if (type == "NFD") return std::make_unique<UnicodeNormalizer>(hf::NormalForm::kNfd);
  if (type == "NFKC") return std::make_unique<UnicodeNormalizer>(hf::NormalForm::kNfkc);
  if (type == "NFKD") return std::make_unique<UnicodeNormalizer>(hf::NormalForm::kNfkd);
  if (type == "Lowercase") return std::make_unique<LowercaseNormalizer>();
  if (type == "Strip") return std::make_unique<StripNormalizer>(spec);
  if (type == "StripAccents") return std::make_unique<StripAccentsNormalizer>();
  if (type == "Replace") return std::make_unique<ReplaceNormalizer>(spec);
  if (type == "Prepend") return std::make_unique<PrependNormalizer>(spec);
  if (type == "Precompiled") return std::make_unique<PrecompiledNormalizer>(spec);
  if (type == "Nmt") return std::make_unique<NmtNormalizer>();
  if (type == "ByteLevel") return std::make_unique<ByteLevelNormalizer>();
  if (type == "Sequence") return std::make_unique<SequenceNormalizer>(spec);
  BadConfig("normalizer type \"" + type +
            "\" is not supported (ember reads BertNormalizer, NFC, NFD, NFKC, NFKD, Lowercase, "
            "Strip, StripAccents, Replace, Prepend, Precompiled, Nmt, ByteLevel, Sequence)");
}

}  // namespace ember::engine
