// The head of a BertForSequenceClassification checkpoint (a cross-encoder or a text
// classifier): HF's pooler, tanh(dense) of the [CLS] token's last hidden state, then the
// classifier, a linear layer to one logit per label. Whichever encoder ran the batch (the fused
// CPU or CUDA one, or the ATen forward) pools [CLS] as it does for embeddings; the head then runs
// in float32 on the host: two small GEMMs per batch against the encoder's dozens.
#ifndef EMBER_ENGINE_BERT_CLASSIFIER_HEAD_H_
#define EMBER_ENGINE_BERT_CLASSIFIER_HEAD_H_

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace ember::engine {

struct ClassifierHead {
  // Float32, contiguous, on the CPU.
  at::Tensor pooler_w, pooler_b;  // [H, H], [H]
  at::Tensor w, b;                // [labels, H], [labels]

  std::int64_t labels() const { return w.size(0); }
  // cls: `rows` [CLS] hidden states of H floats each. Returns the logits, [rows x labels()].
  std::vector<float> Apply(const float* cls, std::int64_t rows) const;
};

}  // namespace ember::engine

#endif  // EMBER_ENGINE_BERT_CLASSIFIER_HEAD_H_
