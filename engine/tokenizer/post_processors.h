// The post-processors of a tokenizer.json (internal to engine/tokenizer/), which put the model's
// special tokens around a text or a pair: BertProcessing, RobertaProcessing, TemplateProcessing,
// ByteLevel (offsets only) and Sequence, each as HF tokenizers defines it, with the type ids and
// the offsets it gives. Immutable once made.
#ifndef EMBER_ENGINE_TOKENIZER_POST_PROCESSORS_H_
#define EMBER_ENGINE_TOKENIZER_POST_PROCESSORS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string_view>
#include <vector>

namespace ember::engine {

// The tokens of one text (or, once processed, of the model's input): HF's Encoding, as far as
// ember uses it. Offsets (original bytes) and token texts only when offsets are asked for.
struct TokenSequence {
  std::vector<std::int32_t> ids;
  std::vector<std::uint32_t> type_ids;
  std::vector<std::pair<std::size_t, std::size_t>> offsets;
  std::vector<std::string_view> texts;  // each token's text (for ByteLevel's trimmed offsets)
  std::string_view original;            // the text the offsets point into
  bool with_offsets = false;

  std::size_t size() const { return ids.size(); }
  void Clear() {
    ids.clear();
    type_ids.clear();
    offsets.clear();
    texts.clear();
    original = {};
    with_offsets = false;
  }
  void Truncate(std::size_t n);  // keeps the first n tokens
  void Append(const TokenSequence& other);
  void SetTypes(std::uint32_t type) { type_ids.assign(ids.size(), type); }
};

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // How many special tokens Process adds to a single text or a pair.
  virtual std::size_t AddedTokens(bool pair) const = 0;
  // `sequences`: the text (type ids 0), or the pair (the second's type ids 1), processed in
  // place (HF process_encodings); the caller joins what is left.
  virtual void Process(std::vector<TokenSequence>& sequences) const = 0;
};

// The post-processor `spec` describes (null for JSON null). `token_id` resolves a template's
// special token where its ids are not given. Throws TokenizerError (kBadConfig).
std::unique_ptr<PostProcessor> MakePostProcessor(
    const nlohmann::json& spec,
    const std::function<std::optional<std::int32_t>(std::string_view)>& token_id);

}  // namespace ember::engine

#endif  // EMBER_ENGINE_TOKENIZER_POST_PROCESSORS_H_
