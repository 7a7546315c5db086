#include "engine/tokenizer/decoders.h"

#include <nlohmann/json.hpp>

#include "engine/tokenizer/byte_level_alphabet.h"
#include "engine/tokenizer/json_fields.h"
#include "engine/tokenizer/text_pattern.h"
#include "engine/tokenizer/unicode_text.h"

namespace ember::engine {
namespace {

using json_fields::Json;

// Every occurrence of `from` (non-empty) replaced by `to`, left to right (Rust's str::replace).
std::string ReplaceAll(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  std::size_t at = 0;
  for (std::size_t hit = s.find(from); hit != std::string_view::npos; hit = s.find(from, at)) {
    out.append(s.substr(at, hit - at));
    out.append(to);
    at = hit + from.size();
  }
  out.append(s.substr(at));
  return out;
}

std::vector<char32_t> Chars(std::string_view s) {
  std::vector<char32_t> out;
  for (std::size_t i = 0; i < s.size();) out.push_back(unicode::DecodeValid(s, i));
  return out;
}

std::string FromChars(const std::vector<char32_t>& chars, std::size_t begin, std::size_t end) {
  std::string out;
  for (std::size_t i = begin; i < end; ++i) unicode::AppendUtf8(out, chars[i]);
  return out;
}

// HF's WordPiece clean-up of the spaces a detokenization leaves before punctuation.
std::string Cleanup(std::string s) {
  static constexpr std::pair<std::string_view, std::string_view> kRules[] = {
      {" .", "."},   {" ?", "?"},     {" !", "!"},    {" ,", ","},
      {" ' ", "'"},  {" n't", "n't"}, {" 'm", "'m"},  {" do not", " don't"},
      {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kRules) s = ReplaceAll(s, from, to);
  return s;
}

class ByteLevelDecoder final : public Decoder {
 public:
  void DecodeChain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const std::string& t : tokens) {
      std::string mapped;
      bool all = true;
      for (std::size_t i = 0; i < t.size() && all;) {
        const auto b = ByteOfByteLevelChar(unicode::DecodeValid(t, i));
        if (b) {
          mapped.push_back(static_cast<char>(*b));
        } else {
          all = false;
        }
      }
      bytes += all ? mapped : t;
    }
    tokens.assign(1, Utf8Lossy(bytes));
  }
};

class WordPieceDecoder final : public Decoder {
 public:
  explicit WordPieceDecoder(const Json& spec)
      : prefix_(json_fields::OptionalString(spec, "prefix", "WordPiece decoder").value_or("##")),
        cleanup_(json_fields::Bool(spec, "cleanup", true, "WordPiece decoder")) {}
  void DecodeChain(std::vector<std::string>& tokens) const override {
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      if (i != 0) {
        if (t.starts_with(prefix_)) {
          t.erase(0, prefix_.size());
        } else {
          t.insert(0, " ");
        }
      }
      if (cleanup_) t = Cleanup(std::move(t));
    }
  }

 private:
  std::string prefix_;
  bool cleanup_;
};

class MetaspaceDecoder final : public Decoder {
 public:
  explicit MetaspaceDecoder(const Json& spec)
      : replacement_(json_fields::OneChar(spec, "replacement", "Metaspace decoder")) {
    // Older files say add_prefix_space instead of prepend_scheme.
    const auto scheme = json_fields::OptionalString(spec, "prepend_scheme", "Metaspace decoder");
    const auto add = json_fields::OptionalBool(spec, "add_prefix_space", "Metaspace decoder");
    never_ = scheme ? *scheme == "never" : (add && !*add);
  }
  void DecodeChain(std::vector<std::string>& tokens) const override {
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      std::string out;
      for (std::size_t k = 0; k < tokens[i].size();) {
        const char32_t c = unicode::DecodeValid(tokens[i], k);
        if (c != replacement_) {
          unicode::AppendUtf8(out, c);
        } else if (i != 0 || never_) {
          out.push_back(' ');
        }
      }
      tokens[i] = std::move(out);
    }
  }

 private:
  char32_t replacement_;
  bool never_ = false;
};

class BpeDecoder final : public Decoder {
 public:
  explicit BpeDecoder(const Json& spec)
      : suffix_(json_fields::OptionalString(spec, "suffix", "BPEDecoder").value_or("</w>")) {}
  void DecodeChain(std::vector<std::string>& tokens) const override {
    if (suffix_.empty()) return;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      tokens[i] = ReplaceAll(tokens[i], suffix_, i + 1 == tokens.size() ? "" : " ");
    }
  }

 private:
  std::string suffix_;
};

class ByteFallbackDecoder final : public Decoder {
 public:
  void DecodeChain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string pending;
    const auto flush = [&] {
      if (pending.empty()) return;
      try {
        unicode::ValidateUtf8(pending);
        out.push_back(pending);
      } catch (const std::exception&) {
        for (std::size_t i = 0; i < pending.size(); ++i) out.emplace_back("\xEF\xBF\xBD");
      }
      pending.clear();
    };
    for (std::string& t : tokens) {
      if (const auto b = ByteToken(t)) {
        pending.push_back(static_cast<char>(*b));
        continue;
      }
      flush();
      out.push_back(std::move(t));
    }
    flush();
    tokens = std::move(out);
  }

 private:
  // "<0xAB>" -> 0xAB.
  static std::optional<unsigned> ByteToken(const std::string& t) {
    if (t.size() != 6 || !t.starts_with("<0x") || t[5] != '>') return std::nullopt;
    unsigned value = 0;
    for (std::size_t i = 3; i < 5; ++i) {
      const char c = t[i];
      const int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
      if (d < 0) return std::nullopt;
      value = value * 16 + static_cast<unsigned>(d);
    }
    return value;
  }
};

class FuseDecoder final : public Decoder {
 public:
  void DecodeChain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const std::string& t : tokens) all += t;
    tokens.assign(1, std::move(all));
  }
};

class StripDecoder final : public Decoder {
 public:
  explicit StripDecoder(const Json& spec)
      : content_(json_fields::OneChar(spec, "content", "Strip decoder")),
        start_(json_fields::Unsigned(spec, "start", 0, "Strip decoder")),
        stop_(json_fields::Unsigned(spec, "stop", 0, "Strip decoder")) {}
  void DecodeChain(std::vector<std::string>& tokens) const override {
    for (std::string& t : tokens) {
      const std::vector<char32_t> chars = Chars(t);
      std::size_t begin = 0;
      for (std::size_t i = 0; i < start_ && i < chars.size() && chars[i] == content_; ++i) {
        begin = i + 1;
      }
      std::size_t end = chars.size();
      for (std::size_t i = 0; i < stop_ && i < chars.size(); ++i) {
        const std::size_t index = chars.size() - i - 1;
        if (chars[index] != content_) break;
        end = index;
      }
      t = FromChars(chars, begin, std::max(begin, end));
    }
  }

 private:
  char32_t content_;
  std::size_t start_, stop_;
};

class ReplaceDecoder final : public Decoder {
 public:
  explicit ReplaceDecoder(const Json& spec)
      : pattern_(json_fields::Required(spec, "pattern", "Replace decoder"), "Replace decoder"),
        content_(json_fields::String(spec, "content", "Replace decoder")) {}
  void DecodeChain(std::vector<std::string>& tokens) const override {
    Pieces pieces;
    for (std::string& t : tokens) {
      pattern_.Find(t, pieces);
      std::string out;
      for (const Piece& p : pieces) {
        if (p.match) {
          out += content_;
        } else {
          out.append(t, p.begin, p.end - p.begin);
        }
      }
      t = std::move(out);
    }
  }

 private:
  TextPattern pattern_;
  std::string content_;
};

class CtcDecoder final : public Decoder {
 public:
  explicit CtcDecoder(const Json& spec)
      : pad_(json_fields::OptionalString(spec, "pad_token", "CTC").value_or("<pad>")),
        delimiter_(json_fields::OptionalString(spec, "word_delimiter_token", "CTC").value_or("|")),
        cleanup_(json_fields::Bool(spec, "cleanup", true, "CTC")) {}
  void DecodeChain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      if (i > 0 && tokens[i] == tokens[i - 1]) continue;  // consecutive repeats once
      std::string t = pad_.empty() ? tokens[i] : ReplaceAll(tokens[i], pad_, "");
      if (cleanup_) {
        t = Cleanup(std::move(t));
        if (!delimiter_.empty()) t = ReplaceAll(t, delimiter_, " ");
      }
      if (!t.empty()) out.push_back(std::move(t));
    }
    tokens = std::move(out);
  }

 private:
  std::string pad_, delimiter_;
  bool cleanup_;
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(const Json& spec) {
    const Json& list = json_fields::Required(spec, "decoders", "Sequence decoder");
    if (!list.is_array()) BadConfig("Sequence decoder: \"decoders\" must be a list");
    for (const Json& item : list) {
      if (auto d = MakeDecoder(item)) parts_.push_back(std::move(d));
    }
  }
  void DecodeChain(std::vector<std::string>& tokens) const override {
    for (const auto& d : parts_) d->DecodeChain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

}  // namespace

std::string Utf8Lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t n = bytes.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned char b = p[i];
    if (b < 0x80) {
      out.push_back(static_cast<char>(b));
      ++i;
      continue;
    }
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) {
      len = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
      len = 3;
      if (b == 0xE0) lo = 0xA0;
      if (b == 0xED) hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
      len = 4;
      if (b == 0xF0) lo = 0x90;
      if (b == 0xF4) hi = 0x8F;
    }
    // The longest prefix of a well-formed sequence: whole, it is copied; cut short, it is one
    // U+FFFD (a lone invalid byte too).
    std::size_t k = 1;
    if (len > 0 && k < n - i && p[i + k] >= lo && p[i + k] <= hi) {
      ++k;
      while (k < len && k < n - i && (p[i + k] & 0xC0) == 0x80) ++k;
    }
    if (len > 0 && k == len) {
      out.append(bytes.substr(i, len));
    } else {
      out += "\xEF\xBF\xBD";
    }
    i += k;
  }
  return out;
}

std::unique_ptr<Decoder> MakeDecoder(const Json& spec) {
  if (spec.is_null()) return nullptr;
  const std::string type = json_fields::TypeOf(spec, "decoder");
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "WordPiece") return std::make_unique<WordPieceDecoder>(spec);
  if (type == "Metaspace") return std::make_unique<MetaspaceDecoder>(spec);
  if (type == "BPEDecoder") return std::make_unique<BpeDecoder>(spec);
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") return std::make_unique<StripDecoder>(spec);
  if (type == "Replace") return std::make_unique<ReplaceDecoder>(spec);
  if (type == "CTC") return std::make_unique<CtcDecoder>(spec);
  if (type == "Sequence") return std::make_unique<SequenceDecoder>(spec);
  BadConfig("decoder type \"" + type +
            "\" is not supported (ember reads ByteLevel, WordPiece, Metaspace, BPEDecoder, "
            "ByteFallback, Fuse, Strip, Replace, CTC, Sequence)");
}

}  // namespace ember::engine
