#include "engine/tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <array>

#include "engine/tokenizer/tokenizer.h"

namespace ember::engine {

struct Regex::Code {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Code() { pcre2_code_free(code); }
};

namespace {

// Match data of the calling thread, big enough for the whole match (no groups are read).
pcre2_match_data* ThreadMatchData() {
  struct Holder {
    pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
    ~Holder() { pcre2_match_data_free(data); }
  };
  thread_local Holder holder;
  return holder.data;
}

std::size_t CharLength(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

// Oniguruma's Unicode word characters (UTS #18's \w), which PCRE2's \w (letters, numbers, _)
// is not.
constexpr std::string_view kWord = "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}";

// The escapes whose meaning differs between Oniguruma's default syntax and PCRE2's, written as
// PCRE2 reads Oniguruma's: \s \S (White_Space, which PCRE2's \s lacks U+0085 of), \w \W (above)
// and \h \H (hexadecimal digits in Oniguruma, horizontal space in PCRE2). Everything else is
// the same in both and copied as it is.
std::string FromOniguruma(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 16);
  bool in_class = false;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char d = p[++i];
      switch (d) {
        case 's':
          out += "\\p{White_Space}";
          break;
        case 'S':
          out += "\\P{White_Space}";
          break;
        case 'w':
          out += in_class ? std::string(kWord) : "[" + std::string(kWord) + "]";
          break;
        case 'W':
          out += in_class ? std::string("\\W") : "[^" + std::string(kWord) + "]";
          break;
        case 'h':
          out += in_class ? "0-9a-fA-F" : "[0-9a-fA-F]";
          break;
        case 'H':
          out += in_class ? std::string("\\H") : std::string("[^0-9a-fA-F]");
          break;
        case 'Q': {  // quoted up to \E, copied whole
          const std::size_t stop = p.find("\\E", i + 1);
          const std::size_t end = stop == std::string_view::npos ? p.size() : stop + 2;
          out += "\\Q";
          out.append(p.substr(i + 1, end - (i + 1)));
          i = end - 1;
          break;
        }
        default:
          out += c;
          out += d;
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];  // a literal ']' first
      continue;
    }
    if (in_class && c == '[' && i + 1 < p.size() && p[i + 1] == ':') {  // [:alpha:]
      const std::size_t stop = p.find(":]", i + 2);
      const std::size_t end = stop == std::string_view::npos ? p.size() : stop + 2;
      out.append(p.substr(i, end - i));
      i = end - 1;
      continue;
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

}  // namespace

Regex::Regex(std::string pattern) : pattern_(std::move(pattern)), code_(std::make_unique<Code>()) {
  int error = 0;
  PCRE2_SIZE at = 0;
  // UCP: \d \b and [[:alpha:]] by Unicode properties, as Oniguruma's default syntax has them.
  const std::string translated = FromOniguruma(pattern_);
  code_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                              PCRE2_UTF | PCRE2_UCP, &error, &at, nullptr);
  if (code_->code == nullptr) {
    std::array<PCRE2_UCHAR, 256> why{};
    pcre2_get_error_message(error, why.data(), why.size());
    BadConfig("regular expression '" + pattern_ + "' at offset " + std::to_string(at) + ": " +
              reinterpret_cast<const char*>(why.data()));
  }
  // Without the JIT (a kernel refusing executable memory) the interpreter matches the same.
  code_->jit = pcre2_jit_compile(code_->code, PCRE2_JIT_COMPLETE) == 0;
}

Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;

void Regex::FindAll(std::string_view text, std::vector<Match>& out) const {
  out.clear();
  pcre2_match_data* data = ThreadMatchData();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t start = 0;
  std::size_t last_match_end = static_cast<std::size_t>(-1);
  while (start <= text.size()) {
    const int rc = code_->jit
                       ? pcre2_jit_match(code_->code, subject, text.size(), start, 0, data, nullptr)
                       : pcre2_match(code_->code, subject, text.size(), start, PCRE2_NO_UTF_CHECK,
                                     data, nullptr);
    if (rc < 0) break;  // no match (or a resource limit: nothing more is matched)
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data);
    const std::size_t begin = ovector[0], end = ovector[1];
    // An empty match right where the previous match ended is skipped: the search goes on one
    // character further (onig's FindMatches).
    if (begin == end && end == last_match_end) {
      start += start < text.size() ? CharLength(static_cast<unsigned char>(text[start])) : 1;
      continue;
    }
    out.push_back({begin, end});
    start = end;
    last_match_end = end;
  }
}

}  // namespace ember::engine
