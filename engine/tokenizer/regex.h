// A regular expression of a tokenizer.json (Split and Replace patterns), on PCRE2 (Debian's
// libpcre2: maintained, JIT-compiled, Unicode classes) with the options and the iteration of
// the Oniguruma binding HF tokenizers uses: UTF-8, \d \s \w \b and POSIX classes by Unicode
// properties, and an empty match right where the previous match ended skipped
// (docs/tokenizers.md "Regular expressions"). Internal to engine/tokenizer/.
//
// Immutable once compiled and safe to use from any number of threads.
#ifndef EMBER_ENGINE_TOKENIZER_REGEX_H_
#define EMBER_ENGINE_TOKENIZER_REGEX_H_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ember::engine {

class Regex {
 public:
  // Throws TokenizerError (kBadConfig) naming the pattern and PCRE2's reason.
  explicit Regex(std::string pattern);
  ~Regex();
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;

  struct Match {
    std::size_t begin, end;
  };
  // Every match in `text` (valid UTF-8), left to right, as the onig crate's find_iter gives
  // them, into `out` (cleared first).
  void FindAll(std::string_view text, std::vector<Match>& out) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Code;
  std::string pattern_;
  std::unique_ptr<Code> code_;
};

}  // namespace ember::engine

#endif  // EMBER_ENGINE_TOKENIZER_REGEX_H_
