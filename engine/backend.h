// The seam between the worker and a model runtime. A Backend turns batches of token ids into
// vectors; everything about tensors and devices lives behind it, so the worker's socket and
// batching code never sees LibTorch. The ids come from the model's Tokenizer
// (engine/tokenizer/tokenizer.h), which the worker owns beside the backend (engine/model.h):
// the batcher knows each text's length before it forms a batch, and tokenizing the next batch
// overlaps running the current one. engine/backend_factory.h opens both.
#ifndef EMBER_ENGINE_BACKEND_H_
#define EMBER_ENGINE_BACKEND_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

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

  // The most ids a sequence may have, special tokens included: the model's own limit (its
  // positions, the folder's max_seq_length) or the version's `max-length` below it. The worker
  // tokenizes to it.
  virtual std::size_t max_length() const = 0;
  // How many ids the model's embeddings have (a tokenizer with more does not fit it); 0:
  // unknown.
  virtual std::size_t vocab_size() const { return 0; }

  // Embeds the tokenizer's sequences, packed by the core into one batch (token_batch.h): row-major
  // float32 [batch.size() x dim()], pooled and normalised as engine/pooling.h says. Thread-safe:
  // the worker calls it from as many threads at once as it keeps batches in flight.
  virtual std::vector<float> Embed(const TokenBatch& batch) = 0;

  // Token-level outputs a model may have beside its pooled vector: bge-m3's (the folder's
  // sparse_linear.pt and colbert_linear.pt, computed as FlagEmbedding's M3 embedder does). The
  // worker asks for them only where the model says it has them. Both thread-safe, as Embed.
  //
  // Sparse: lexical weights, each text's tokens weighted by relu(sparse_linear(state)); a token
  // id's weight is its largest in the text, and ids with weight 0 or of the special tokens
  // that carry no lexical meaning ([CLS], end of sequence, padding, unknown) are left out.
  struct SparseVectors {
    // Sequence i's entries are [offsets[i], offsets[i + 1]) of ids and weights, ids ascending.
    std::vector<std::size_t> offsets{0};
    std::vector<std::int32_t> ids;
    std::vector<float> weights;
  };
  virtual bool sparse() const { return false; }
  virtual SparseVectors EmbedSparse(const TokenBatch& /*batch*/) {
    throw std::logic_error("this model has no sparse output");
  }
  // Multi-vector (ColBERT): a vector of multi_vector_dim() floats per token but the first (the
  // [CLS] token), colbert_linear of its state, L2-normalised where the model normalises. 0: the
  // model has none. EmbedMultiVector returns row-major float32 [sum over sequences of
  // (length - 1)] x multi_vector_dim(), sequence after sequence.
  virtual std::int64_t multi_vector_dim() const { return 0; }
  virtual std::vector<float> EmbedMultiVector(const TokenBatch& /*batch*/) {
    throw std::logic_error("this model has no multi-vector output");
  }
};

}  // namespace ember::engine

#endif  // EMBER_ENGINE_BACKEND_H_
