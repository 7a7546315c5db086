// The head of a ...ForSequenceClassification checkpoint (a cross-encoder or a text
// classifier): tanh(dense) of the first token's last hidden state (BERT's pooler, RoBERTa's
// classifier.dense), then a linear layer to one logit per label (BERT's classifier, RoBERTa's
// classifier.out_proj; EncoderLayout names them). Whichever encoder ran the batch (the fused
// CPU or CUDA one, or the ATen forward) pools [CLS] as it does for embeddings; the head then runs
// in float32 on the host: two small GEMMs per batch against the encoder's dozens.
#ifndef EMBER_ENGINE_ENCODER_CLASSIFIER_HEAD_H_
#define EMBER_ENGINE_ENCODER_CLASSIFIER_HEAD_H_

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace ember::engine {

struct ClassifierHead {
  // Float32, contiguous, on the CPU.
  at::Tensor dense_w, dense_b;  // [H, H], [H]
  at::Tensor w, b;              // [labels, H], [labels]

  std::int64_t labels() const { return w.size(0); }
  // cls: `rows` [CLS] hidden states of H floats each. Returns the logits, [rows x labels()].
  std::vector<float> Apply(const float* cls, std::int64_t rows) const;
};

}  // namespace ember::engine

#endif  // EMBER_ENGINE_ENCODER_CLASSIFIER_HEAD_H_
