// bge-m3's token-level heads beside its dense vector, computed as FlagEmbedding's M3 embedder
// computes them (FlagEmbedding 1.4.2, inference/embedder/encoder_only/m3.py), from the last
// hidden state of every token (EncoderModel::TokenStates):
//  - sparse_linear.pt, Linear(H, 1): a token's lexical weight is relu(sparse_linear(state));
//    a token id's weight in a text is its largest there, and ids of weight 0 or of the special
//    tokens that carry no lexical meaning (the tokenizer's cls, eos, pad and unk tokens) are
//    left out;
//  - colbert_linear.pt, Linear(H, D): every token but the first ([CLS]) becomes
//    colbert_linear(state), L2-normalised where the model normalises its embeddings.
// The files are torch.save'd state dicts ({"weight", "bias"}), read by torch_state_dict.h, which
// builds tensors and plain containers only: no code of the file runs. The heads run in float32
// on the host.
#ifndef EMBER_ENGINE_ENCODER_TOKEN_HEADS_H_
#define EMBER_ENGINE_ENCODER_TOKEN_HEADS_H_

#include <ATen/ATen.h>

#include <cstdint>
#include <filesystem>
#include <vector>

#include "engine/backend.h"
#include "engine/token_batch.h"
#include "engine/tokenizer/tokenizer.h"

namespace ember::engine {

class TokenHeads {
 public:
  // The heads of a folder of a model of `hidden` units: those of the two files it has (none:
  // neither head). `skip_ids`: the sparse weights' special tokens (SparseSkipIds). Throws
  // std::runtime_error naming the file when one cannot be read or its shapes do not fit.
  static TokenHeads Load(const std::filesystem::path& dir, std::int64_t hidden,
                         std::vector<std::int32_t> skip_ids, bool normalize);

  bool sparse() const { return sparse_w_.defined(); }
  std::int64_t multi_vector_dim() const { return colbert_w_.defined() ? colbert_w_.size(0) : 0; }

  // states: the batch's token states, float32 [batch.tokens() x H] (EncoderModel::TokenStates).
  // As Backend::EmbedSparse and Backend::EmbedMultiVector say; each requires its head.
  Backend::SparseVectors Sparse(const float* states, const TokenBatch& batch) const;
  std::vector<float> MultiVector(const float* states, const TokenBatch& batch) const;

 private:
  std::int64_t hidden_ = 0;
  at::Tensor sparse_w_, sparse_b_;      // [1, H], [1]; undefined: no sparse head
  at::Tensor colbert_w_, colbert_b_;    // [D, H], [D]; undefined: no multi-vector head
  std::vector<std::int32_t> skip_ids_;  // sorted
  bool normalize_ = true;
};

// The ids FlagEmbedding leaves out of sparse weights: those of the tokenizer's cls_token,
// eos_token, pad_token and unk_token, as the folder's special_tokens_map.json names them (else
// its tokenizer_config.json); a role named by neither, or whose token `tokenizer` lacks, adds
// none. Throws std::runtime_error for a file that is not JSON.
std::vector<std::int32_t> SparseSkipIds(const std::filesystem::path& dir,
                                        const Tokenizer& tokenizer);

}  // namespace ember::engine

#endif  // EMBER_ENGINE_ENCODER_TOKEN_HEADS_H_
