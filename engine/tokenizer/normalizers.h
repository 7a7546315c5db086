// The normalizers of a tokenizer.json (internal to engine/tokenizer/), each as HF tokenizers
// defines it: BertNormalizer, NFC, NFD, NFKC, NFKD, Lowercase, Strip, StripAccents, Replace
// (string or regex), Prepend, Precompiled (SentencePiece's rules), Nmt, ByteLevel and Sequence.
// Immutable once made; Normalize is const and thread-safe.
#ifndef EMBER_ENGINE_TOKENIZER_NORMALIZERS_H_
#define EMBER_ENGINE_TOKENIZER_NORMALIZERS_H_

#include <memory>
#include <nlohmann/json_fwd.hpp>

#include "engine/tokenizer/normalized_string.h"

namespace ember::engine {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void Normalize(NormalizedString& text) const = 0;
};

// The normalizer `spec` (a tokenizer.json "normalizer" object) describes; null for JSON null.
// Throws TokenizerError (kBadConfig) naming an unknown type or a bad field.
std::unique_ptr<Normalizer> MakeNormalizer(const nlohmann::json& spec);

}  // namespace ember::engine

#endif  // EMBER_ENGINE_TOKENIZER_NORMALIZERS_H_
