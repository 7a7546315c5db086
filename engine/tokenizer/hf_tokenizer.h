// Any HF tokenizer, from its tokenizer.json: ember's Tokenizer for every model family
// (docs/tokenizers.md). The file's pipeline is run as HF tokenizers runs it, component for
// component, so that ids, byte offsets and decodings are HF's:
//
//   added tokens found (raw, then normalized) -> normalizer (between them) -> pre-tokenizer
//   -> model per split (WordPiece, BPE, Unigram, WordLevel) -> truncation -> post-processor
//   (special tokens, type ids) ; decode: ids -> tokens -> decoder
//
// A folder with only a BERT vocab.txt gets the tokenizer transformers converts it to
// (BertNormalizer with tokenizer_config.json's options, BertPreTokenizer, WordPiece, [CLS] $A
// [SEP]). A component ember does not know is refused at load, naming it and what is supported.
//
// Alignments (which original bytes each normalized byte came from) are tracked only when
// offsets are asked for, or when the pipeline's ids depend on them (Metaspace's "first" scheme).
//
// Immutable once made: every method is const and safe to call from any number of threads (the
// per-call buffers are per thread).
#ifndef EMBER_ENGINE_TOKENIZER_HF_TOKENIZER_H_
#define EMBER_ENGINE_TOKENIZER_HF_TOKENIZER_H_

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "engine/tokenizer/tokenizer.h"

namespace ember::engine {

class AddedVocabulary;
class Decoder;
class Normalizer;
class PostProcessor;
class PreTokenizer;
class TokenModel;
struct TokenSequence;

// Defined outside the class: GCC refuses a nested struct's default member initializers in a
// default argument of the enclosing class.
struct HfTokenizerOptions {
  // The tokenizer's own limit (0: none).
  std::size_t max_length = 0;
  // Its BertNormalizer lowercases each word as Python's str.lower() does, Final_Sigma
  // included (a capital sigma that ends a word becomes "ς"), as Google's original BERT
  // tokenizer did, where HF lowercases character by character ("ΣΑΣ" -> "σασ"). A version's
  // `lowercase = "per-word"`; refused for a tokenizer without a lowercasing BertNormalizer.
  bool final_sigma_per_word = false;
};

class HfTokenizer final : public Tokenizer {
 public:
  using Options = HfTokenizerOptions;

  // A tokenizer.json's text; `where` names it in errors. Throws TokenizerError (kBadConfig)
  // naming what in the file is wrong or unsupported.
  static std::unique_ptr<HfTokenizer> FromJsonText(std::string_view json, const std::string& where,
                                                   const Options& options = {});
  // A tokenizer.json file (kIo when it cannot be read).
  static std::unique_ptr<HfTokenizer> FromFile(const std::filesystem::path& path,
                                               const Options& options = {});
  // A model folder: its tokenizer.json, else its BERT vocab.txt; the limit is
  // tokenizer_config.json's model_max_length where plausible (2 .. 1,000,000), unless the
  // options give one.
  static std::unique_ptr<HfTokenizer> FromDirectory(const std::filesystem::path& dir,
                                                    Options options = {});

  ~HfTokenizer() override;

  Encoding Encode(std::string_view text, const EncodeOptions& options) const override;
  Encoding EncodePair(std::string_view first, std::string_view second,
                      const EncodeOptions& options) const override;
  std::string Decode(std::span<const std::int32_t> ids, bool skip_special) const override;
  std::size_t vocab_size() const override;
  std::string_view IdToToken(std::int32_t id) const override;
  std::optional<std::int32_t> TokenToId(std::string_view token) const override;
  bool IsSpecial(std::int32_t id) const override;
  std::size_t max_length() const override { return max_length_; }

 private:
  HfTokenizer();
  // One text's tokens before post-processing (HF encode_single_sequence), the model stopping
  // once `limit` tokens are reached (0: none), as HF's tokenize_with_limit does.
  void EncodeText(std::string_view text, std::uint32_t type_id, bool offsets, std::size_t limit,
                  TokenSequence& out) const;
  std::size_t Limit(std::size_t asked) const;
  Encoding Finish(std::vector<TokenSequence>& sequences, bool truncated) const;

  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<TokenModel> model_;
  std::unique_ptr<AddedVocabulary> added_;
  std::unique_ptr<PostProcessor> post_processor_;
  std::unique_ptr<Decoder> decoder_;
  std::size_t max_length_ = 0;
  bool needs_alignments_ = false;
};

}  // namespace ember::engine

#endif  // EMBER_ENGINE_TOKENIZER_HF_TOKENIZER_H_
