// The pre-tokenizers of a tokenizer.json (internal to engine/tokenizer/), each as HF tokenizers
// defines it: BertPreTokenizer, Whitespace, WhitespaceSplit, Metaspace, ByteLevel (GPT-2's regex
// and byte alphabet), Split (string or regex, five behaviours, inverted), Digits, Punctuation,
// CharDelimiterSplit and Sequence. Immutable once made; PreTokenize is const and thread-safe.
//
// The serving path, which needs ids and no offsets, takes each pre-tokenizer's pieces as plain
// strings (EachPiece: views of the text where a pre-tokenizer only cuts it, per-thread buffers
// where it rewrites it) instead of making a NormalizedString of each. Both paths make the same
// pieces: the parity tests run each against HF.
#ifndef EMBER_ENGINE_TOKENIZER_PRE_TOKENIZERS_H_
#define EMBER_ENGINE_TOKENIZER_PRE_TOKENIZERS_H_

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string_view>
#include <type_traits>

#include "engine/tokenizer/pre_tokenized_string.h"

namespace ember::engine {

// A callable bool(std::string_view) by reference, without std::function's allocation: what
// EachPiece gives each piece to (false stops it).
class PieceSink {
 public:
  template <class F>
  explicit PieceSink(F& f)
      : object_(&f),
        call_([](void* o, std::string_view piece) { return (*static_cast<F*>(o))(piece); }) {}
  bool operator()(std::string_view piece) const { return call_(object_, piece); }

 private:
  void* object_;
  bool (*call_)(void*, std::string_view);
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  virtual void PreTokenize(PreTokenizedString& text) const = 0;
  // Whether its splits depend on where in the original text a split starts (Metaspace's
  // prepend_scheme "first"): the tokenizer then tracks alignments even for ids alone.
  virtual bool NeedsOriginalOffsets() const { return false; }
  // The non-empty pieces PreTokenize would make of a split whose text is `text`, in order,
  // each given to `sink` (a view valid during the call) until it returns false. Returns false
  // if stopped. Not for a pre-tokenizer that NeedsOriginalOffsets().
  virtual bool EachPiece(std::string_view text, const PieceSink& sink) const = 0;
};

// The pre-tokenizer `spec` describes (null for JSON null). Throws TokenizerError (kBadConfig)
// naming an unknown type or a bad field.
std::unique_ptr<PreTokenizer> MakePreTokenizer(const nlohmann::json& spec);

}  // namespace ember::engine

#endif  // EMBER_ENGINE_TOKENIZER_PRE_TOKENIZERS_H_
