// BERT WordPiece tokenizer (HuggingFace BertTokenizer semantics), for the ember worker.
//
// Turns one UTF-8 text into BERT input ids: [CLS] word pieces... [SEP].
//
// Semantics follow the pure-Python HuggingFace `BertTokenizer` (transformers 4.3x), which is
// also what scripts/reference_tokenizer.py implements and tests/wordpiece_tokenizer_test.cpp
// checks against id-for-id:
//   * special tokens ([CLS], [SEP], [MASK], ...) written verbatim in the text are kept as
//     single tokens (HF default; see TokenizerOptions::split_special_tokens);
//   * clean text: U+0000, U+FFFD and every general category C* character except \t \n \r are
//     dropped; Unicode space separators (Zs, \t \n \r, U+2028, U+2029) separate words;
//   * every CJK ideograph becomes its own word;
//   * optional lowercasing with the full Unicode mapping (U+0130 -> "i\u0307"), one character
//     at a time as HF transformers and tokenizers do (so "ΣΑΣ" -> "σασ"), or per word with
//     Python str.lower()'s Final_Sigma rule ("ΣΑΣ" -> "σας"; TokenizerOptions::lowercase_rule);
//   * optional accent stripping (NFD, then drop Mn), otherwise NFC;
//   * split on punctuation (ASCII non-alphanumerics plus Unicode P*);
//   * greedy longest-match-first WordPiece with a "##" continuation prefix; [UNK] for words
//     with no segmentation and for words longer than 100 code points.
//
// Invalid UTF-8 is rejected with TokenizerError{kBadUtf8}; the tokenizer never guesses.
//
// Thread safety: a WordPieceTokenizer is immutable after construction. Encode() is const and
// may be called concurrently from any number of threads. Copies are cheap (shared state).
//
// Unicode tables come from libutf8proc; the version it was built with (see
// utf8proc_unicode_version()) decides the category of code points that were unassigned in
// older Unicode versions. For all code points assigned in both, results are identical.

#ifndef EMBER_ENGINE_WORDPIECE_TOKENIZER_H_
#define EMBER_ENGINE_WORDPIECE_TOKENIZER_H_

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/tokenizer.h"

namespace ember::engine {

// How lowercasing treats the one context-dependent rule of Unicode's full lowercase mapping,
// Final_Sigma (capital sigma at the end of a word becomes "ς", elsewhere "σ").
enum class LowercaseRule {
  // Each character on its own, as HF transformers (BertTokenizer's per-character pre-pass)
  // and HF tokenizers (BertNormalizer: Rust char::to_lowercase) do: "ΣΑΣ" -> "σασ". This is
  // what a model's own tokenizer.json produces, so it is the default.
  kPerCharacter,
  // Python str.lower() on each whitespace-separated word, as Google's original BERT
  // BasicTokenizer does under Python 3: Final_Sigma applies, "ΣΑΣ" -> "σας".
  kPerWord,
};

struct TokenizerOptions {
  // Lowercase the text (bert-base-uncased: true, bert-base-cased: false).
  bool lowercase = true;
  LowercaseRule lowercase_rule = LowercaseRule::kPerCharacter;
  // Strip accents (NFD, drop Mn). Unset means "same as lowercase", like HF.
  std::optional<bool> strip_accents;
  // Put every CJK ideograph in its own word.
  bool tokenize_chinese_chars = true;
  // Maximum number of ids, including [CLS] and [SEP]. Must be >= 2.
  size_t max_length = 512;
  // HF `split_special_tokens`: when false (HF default), "[SEP]" typed in the text becomes the
  // [SEP] id; when true it is tokenized as ordinary text ("[", "sep", "]").
  bool split_special_tokens = false;
};

// A pair of texts as BERT takes it (a cross-encoder's query and passage):
// [CLS] first [SEP] second [SEP], the second segment from `second_start` on (token type 1).
struct PairEncoding {
  std::vector<int32_t> ids;
  size_t second_start = 0;  // index of the second text's first piece
  bool truncated = false;   // word pieces were dropped to fit
};

// Encode's ids with each one's span; spans.size() == ids.size().
struct OffsetEncoding {
  std::vector<int32_t> ids;
  std::vector<TokenSpan> spans;
  bool truncated = false;
};

struct WordPieceSpec;

class WordPieceTokenizer {
 public:
  // vocab.txt: one token per line, line number = id. Requires [UNK], [CLS], [SEP], [PAD].
  static WordPieceTokenizer FromVocabFile(const std::filesystem::path& vocab_txt,
                                          const TokenizerOptions& options = {});

  // HF tokenizer.json with model.type "WordPiece", a BertNormalizer, a BertPreTokenizer and a
  // BertProcessing/TemplateProcessing post-processor. Anything else is rejected (kBadConfig)
  // rather than silently tokenized differently. max_length comes from "truncation" (or 512).
  static WordPieceTokenizer FromTokenizerJson(const std::filesystem::path& tokenizer_json);

  // A HF model directory: tokenizer.json if present, else vocab.txt with the options from
  // tokenizer_config.json (do_lower_case, strip_accents, tokenize_chinese_chars,
  // model_max_length) when that file exists.
  static WordPieceTokenizer FromDirectory(const std::filesystem::path& dir);

  // This tokenizer with another lowercasing rule (a model's configuration may ask for
  // Python's per-word rule, which no HF tokenizer file can express).
  WordPieceTokenizer WithLowercaseRule(LowercaseRule rule) const;

  // Same as FromVocabFile, from in-memory tokens (index = id).
  static WordPieceTokenizer FromTokens(std::vector<std::string> tokens,
                                       const TokenizerOptions& options = {});

  // Tokenizes `text` into [CLS] pieces... [SEP]. If more than max_length ids would result
  // (0: the options' max_length; never above it), keeps the first max_length-2 pieces when
  // `truncate`, else throws kTooLong. Throws kBadUtf8 for malformed UTF-8 (even when the bad
  // bytes lie past the cut).
  Encoding Encode(std::string_view text, bool truncate, size_t max_length = 0) const;

  // Encode's ids (at most max_length: 0 is the options' max_length, never above it) with the
  // bytes of `text` each came from, as HF tokenizers' offsets give them (in bytes rather than
  // characters): a word piece spans the characters it was normalized from (an accented or
  // lowercased character whole), an [UNK] its whole word, a special token written in the text
  // itself. Slower than Encode; for /tokenize, not for serving.
  OffsetEncoding EncodeWithOffsets(std::string_view text, bool truncate,
                                   size_t max_length = 0) const;

  // Tokenizes a pair into [CLS] first [SEP] second [SEP], at most max_length ids (0: the
  // options' max_length; never above it). Over it, with `truncate`, pieces are cut as HF
  // tokenizers' "longest_first" cuts them: the shorter text keeps up to half of what is left
  // after the 3 special tokens (the first text when both are as long), the longer one the rest;
  // without, throws kTooLong. Throws kBadUtf8 for malformed UTF-8 in either text.
  PairEncoding EncodePair(std::string_view first, std::string_view second, bool truncate,
                          size_t max_length = 0) const;

  // The text of `ids` as HF tokenizers' WordPiece decoder writes it (TEI's /decode): pieces
  // joined by spaces, a "##" continuation glued to the piece before, each piece's " ." " ,"
  // " ?" " !" (and the other contractions of its clean-up) closed up; special tokens
  // left out when `skip_special`. Throws kBadConfig for an id outside the vocabulary.
  std::string Decode(std::span<const int32_t> ids, bool skip_special) const;

  size_t vocab_size() const;  // Number of ids (= lines of vocab.txt).
  int32_t pad_id() const;
  int32_t unk_id() const;
  int32_t cls_id() const;
  int32_t sep_id() const;
  const TokenizerOptions& options() const;

  std::optional<int32_t> TokenToId(std::string_view token) const;
  std::string_view IdToToken(int32_t id) const;  // Empty for unknown ids.

 private:
  struct Impl;
  explicit WordPieceTokenizer(std::shared_ptr<const Impl> impl);
  static WordPieceTokenizer FromSpec(WordPieceSpec spec);  // engine/tokenizer/wordpiece_spec.h
  WordPieceTokenizer WithMaxLength(size_t max_length) const;

  std::shared_ptr<const Impl> impl_;
};

}  // namespace ember::engine

#endif  // EMBER_ENGINE_WORDPIECE_TOKENIZER_H_
