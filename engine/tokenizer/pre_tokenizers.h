// The pre-tokenizers of a tokenizer.json (internal to engine/tokenizer/), each as HF tokenizers
// defines it: BertPreTokenizer, Whitespace, WhitespaceSplit, Metaspace, ByteLevel (GPT-2's regex
// and byte alphabet), Split (string or regex, five behaviours, inverted), Digits, Punctuation,
// CharDelimiterSplit and Sequence. Immutable once made; PreTokenize is const and thread-safe.
#ifndef EMBER_ENGINE_TOKENIZER_PRE_TOKENIZERS_H_
#define EMBER_ENGINE_TOKENIZER_PRE_TOKENIZERS_H_

#include <memory>
#include <nlohmann/json_fwd.hpp>

#include "engine/tokenizer/pre_tokenized_string.h"

namespace ember::engine {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  virtual void PreTokenize(PreTokenizedString& text) const = 0;
  // Whether its splits depend on where in the original text a split starts (Metaspace's
  // prepend_scheme "first"): the tokenizer then tracks alignments even for ids alone.
  virtual bool NeedsOriginalOffsets() const { return false; }
};

// The pre-tokenizer `spec` describes (null for JSON null). Throws TokenizerError (kBadConfig)
// naming an unknown type or a bad field.
std::unique_ptr<PreTokenizer> MakePreTokenizer(const nlohmann::json& spec);

}  // namespace ember::engine

#endif  // EMBER_ENGINE_TOKENIZER_PRE_TOKENIZERS_H_
