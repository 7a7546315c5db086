// The seam between a model's serving code and its tokenizer: text in, the ids the model takes
// out (special tokens added, cut to a length), and back. The worker owns one per model version
// (engine/backend_factory.h opens it beside the Backend); the backends never tokenize.
//
// Implementations: HfTokenizer (hf_tokenizer.h: any HF tokenizer.json, or a BERT vocab.txt)
// and the TorchScript runtime's adapter for a module that tokenizes itself. All are immutable
// once made: every method is const and safe to call from any number of threads at once.
//
// Errors are TokenizerError: kBadUtf8 for text that is not UTF-8, kTooLong for a text over
// the limit when truncation is off, kBadConfig for an id outside the vocabulary (Decode) and
// for files a tokenizer cannot be made from, kIo for files it cannot read.
#ifndef EMBER_ENGINE_TOKENIZER_TOKENIZER_H_
#define EMBER_ENGINE_TOKENIZER_TOKENIZER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ember::engine {

enum class TokenizerErrorCode {
  kBadUtf8,    // the text is not well-formed UTF-8
  kTooLong,    // more than max_length ids would be produced and truncation is off
  kIo,         // a vocabulary / config file could not be read
  kBadConfig,  // a file is malformed or asks for something unsupported; an id out of range
};

// A stable name such as "kBadUtf8", for logs and error replies.
const char* TokenizerErrorCodeName(TokenizerErrorCode code);

class TokenizerError : public std::runtime_error {
 public:
  TokenizerError(TokenizerErrorCode code, const std::string& message);
  TokenizerErrorCode code() const noexcept { return code_; }

 private:
  TokenizerErrorCode code_;
};

[[noreturn]] inline void BadConfig(const std::string& message) {
  throw TokenizerError(TokenizerErrorCode::kBadConfig, message);
}

// Where a token came from: bytes [start, stop) of the text (what TEI's /tokenize reports). A
// special token the tokenizer added came from nowhere: {0, 0}.
struct TokenSpan {
  std::uint32_t start = 0, stop = 0;
};

// One text, or a pair, as the model takes it.
struct Encoding {
  std::vector<std::int32_t> ids;
  std::vector<TokenSpan> spans;  // EncodeOptions::offsets: one per id; else empty
  // A pair whose second text is a segment of its own (token type 1 from here on, as BERT's
  // template has it); 0: one segment (single texts, and pairs of models with one token type).
  std::size_t second_start = 0;
  bool truncated = false;  // tokens were cut to fit
};

struct EncodeOptions {
  // Over the limit: keep the first tokens (true), or throw kTooLong (false).
  bool truncate = true;
  // Ids at most, special tokens included; 0: the tokenizer's own limit (max_length()). Never
  // above the tokenizer's own limit.
  std::size_t max_length = 0;
  // Fill Encoding::spans (slower: for /tokenize, not for serving).
  bool offsets = false;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // The ids of `text` with the model's special tokens added.
  virtual Encoding Encode(std::string_view text, const EncodeOptions& options) const = 0;
  // The ids of a pair (a cross-encoder's query and passage), special tokens added, cut to the
  // limit as HF's "longest_first" cuts: the longer text first.
  virtual Encoding EncodePair(std::string_view first, std::string_view second,
                              const EncodeOptions& options) const = 0;
  // The text of `ids` (TEI's /decode), special tokens left out when `skip_special`. Throws
  // kBadConfig for an id outside [0, vocab_size()).
  virtual std::string Decode(std::span<const std::int32_t> ids, bool skip_special) const = 0;

  virtual std::size_t vocab_size() const = 0;                     // ids are below it
  virtual std::string_view IdToToken(std::int32_t id) const = 0;  // "" for an unknown id
  virtual std::optional<std::int32_t> TokenToId(std::string_view token) const = 0;
  // Whether `id` is a special token (added tokens marked special: [CLS], <s>, <|endoftext|>).
  virtual bool IsSpecial(std::int32_t id) const = 0;
  // The tokenizer's own limit on ids, special tokens included (tokenizer_config.json's
  // model_max_length); 0: none, the model's limit decides.
  virtual std::size_t max_length() const = 0;
};

}  // namespace ember::engine

#endif  // EMBER_ENGINE_TOKENIZER_TOKENIZER_H_
