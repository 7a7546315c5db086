// The seam between the worker and a model runtime. A Backend turns text into
// token ids and batches of token ids into vectors; everything about tensors,
// devices and vocabularies lives behind it, so the worker's socket and
// batching code never sees LibTorch. engine/backend_factory.h opens one.
//
// Tokenize and Embed are separate so that the batcher knows each text's
// length before it forms a batch, and so that tokenizing the next batch
// overlaps running the current one.
#ifndef EMBER_ENGINE_BACKEND_H_
#define EMBER_ENGINE_BACKEND_H_

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error_code.h"
#include "engine/token_batch.h"

namespace ember::engine {

class Backend {
 public:
  virtual ~Backend() = default;

  // Length of each output vector.
  virtual std::int64_t dim() const = 0;

  // Bytes of weights and buffers the model holds (on its device), for
  // operators deciding what fits; 0 if unknown.
  virtual std::uint64_t memory_bytes() const { return 0; }

  // The cost hint for batching (as TEI's is_padded): whether a batch costs its longest
  // sequence times its size (padded, true) or only the sum of its sequences' lengths (a
  // backend that packs them, false). The batcher budgets tokens accordingly.
  virtual bool pads() const { return true; }

  // How many batches the core should keep in flight at once (Embed called from that many
  // threads): 1 where one batch fills the device (a CPU); 2 on a GPU, where a batch's host
  // work and copies overlap the other's compute. The worker's `batches-in-flight` overrides.
  virtual int batches_in_flight() const { return 1; }

  // Whether the model declares Matryoshka vectors, whose first d components are an embedding
  // of their own (docs/http-api.md "dimensions"): only then does the worker serve a request's
  // `dimensions` below dim(). Whether Embed L2-normalises: a cut vector is then normalised again.
  virtual bool matryoshka() const { return false; }
  virtual bool normalizes() const { return false; }

  // The prompts the model declares (sentence-transformers' "prompts": name -> the text put
  // before each input, e.g. "query" -> "query: "), and the one for requests that name none.
  struct Prompts {
    std::map<std::string, std::string, std::less<>> texts;
    std::string default_name;  // empty: no prompt unless a request names one
  };
  virtual const Prompts& prompts() const {
    static const Prompts kNone;
    return kNone;
  }

  // A model that scores rather than embeds (a cross-encoder or text classifier: BERT's
  // ForSequenceClassification): its labels, in output order. Embed then returns each
  // sequence's raw logits, dim() == labels().size(). Empty (the default): the model embeds.
  virtual const std::vector<std::string>& labels() const {
    static const std::vector<std::string> kNone;
    return kNone;
  }

  // A pair of texts ([CLS] first [SEP] second [SEP]: a query and a passage) ready for
  // TokenBatch::Add(ids, second_start). Only for models with labels; the default refuses.
  // Throws ember::Error (BAD_REQUEST, TOO_LONG) as Tokenize does.
  struct PairIds {
    std::vector<std::int32_t> ids;
    std::size_t second_start = 0;
  };
  virtual PairIds TokenizePair(std::string_view first, std::string_view second,
                               bool truncate) const;

  // One text's tokens as TEI's /tokenize shows them: Tokenize's ids, each one's vocabulary
  // string, and the bytes [start, stop) of `text` it came from (spans: two per token; {0, 0} for
  // the [CLS] and [SEP] the model adds). The default refuses (BAD_REQUEST): a backend whose
  // tokenizer keeps no offsets. Throws ember::Error as Tokenize does.
  struct TextTokens {
    std::vector<std::int32_t> ids;
    std::vector<std::string> pieces;
    std::vector<std::uint32_t> spans;
  };
  virtual TextTokens TokenizeWithOffsets(std::string_view text, bool truncate) const;

  // The text of token ids (TEI's /decode), special tokens left out when `skip_special`. The
  // default refuses (BAD_REQUEST); an id outside the vocabulary is BAD_REQUEST too.
  virtual std::string Decode(std::span<const std::int32_t> ids, bool skip_special) const;

  // Token ids of one text, ready for Embed. `truncate` false makes an
  // over-long text an error. Throws ember::Error (BAD_REQUEST, TOO_LONG).
  // Thread-safe, and may run while another thread is in Embed.
  virtual std::vector<std::int32_t> Tokenize(std::string_view text, bool truncate) const = 0;

  // Embeds sequences from Tokenize, packed by the core into one batch (token_batch.h): row-major
  // float32 [batch.size() x dim()], pooled and normalised as engine/pooling.h says. Thread-safe:
  // the worker calls it from as many threads at once as it keeps batches in flight.
  virtual std::vector<float> Embed(const TokenBatch& batch) = 0;
};

inline Backend::PairIds Backend::TokenizePair(std::string_view, std::string_view, bool) const {
  throw Error(ErrorCode::kBadRequest, "this model embeds single texts; it takes no pairs");
}

inline std::string Backend::Decode(std::span<const std::int32_t>, bool) const {
  throw Error(ErrorCode::kBadRequest, "this model's tokenizer cannot decode token ids");
}

inline Backend::TextTokens Backend::TokenizeWithOffsets(std::string_view, bool) const {
  throw Error(ErrorCode::kBadRequest, "this model's tokenizer does not say where tokens come from");
}

}  // namespace ember::engine

#endif  // EMBER_ENGINE_BACKEND_H_
