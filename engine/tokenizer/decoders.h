// The decoders of a tokenizer.json (internal to engine/tokenizer/): how tokens become text again
// (TEI's /decode). ByteLevel, WordPiece, Metaspace, BPEDecoder, ByteFallback, Fuse, Strip,
// Replace, CTC and Sequence, each as HF tokenizers defines it. Immutable once made.
#ifndef EMBER_ENGINE_TOKENIZER_DECODERS_H_
#define EMBER_ENGINE_TOKENIZER_DECODERS_H_

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace ember::engine {

class Decoder {
 public:
  virtual ~Decoder() = default;
  // Rewrites the tokens' texts in place (HF decode_chain); the decoding is their concatenation.
  virtual void DecodeChain(std::vector<std::string>& tokens) const = 0;
};

// The decoder `spec` describes (null for JSON null). Throws TokenizerError (kBadConfig).
std::unique_ptr<Decoder> MakeDecoder(const nlohmann::json& spec);

// `bytes` as UTF-8 with every ill-formed subsequence replaced by U+FFFD, as Rust's
// String::from_utf8_lossy does (one U+FFFD per maximal ill-formed subpart).
std::string Utf8Lossy(std::string_view bytes);

}  // namespace ember::engine

#endif  // EMBER_ENGINE_TOKENIZER_DECODERS_H_
