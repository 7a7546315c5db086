// How a WordPiece tokenizer is built, whatever file it came from (internal to
// engine/tokenizer/: the loaders in tokenizer_files.cpp fill it, wordpiece_tokenizer.cpp
// builds the tokenizer from it).
#ifndef EMBER_ENGINE_TOKENIZER_WORDPIECE_SPEC_H_
#define EMBER_ENGINE_TOKENIZER_WORDPIECE_SPEC_H_

#include <cstddef>
#include <string>
#include <vector>

#include "engine/tokenizer/wordpiece_tokenizer.h"

namespace ember::engine {

inline constexpr std::size_t kMaxInputCharsPerWord = 100;  // HF WordpieceTokenizer default.

// Everything needed to build a tokenizer, independent of where it came from.
struct WordPieceSpec {
  std::vector<std::string> tokens;  // index = id; empty strings are holes.
  TokenizerOptions options;
  std::string unk = "[UNK]", cls = "[CLS]", sep = "[SEP]", pad = "[PAD]";
  std::string continuing_prefix = "##";
  std::size_t max_input_chars_per_word = kMaxInputCharsPerWord;
  // Tokens recognised verbatim in the input text (HF's special tokens).
  std::vector<std::string> specials = {"[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]"};
};

}  // namespace ember::engine

#endif  // EMBER_ENGINE_TOKENIZER_WORDPIECE_SPEC_H_
