// The head of a ...ForSequenceClassification checkpoint (a cross-encoder or a text
// classifier): tanh(dense) of the first token's last hidden state (BERT's pooler, RoBERTa's
// classifier.dense), then a linear layer to one logit per label (BERT's classifier, RoBERTa's
// classifier.out_proj; EncoderLayout names them). ModernBERT's: the first token's or the mean
// of them (classifier_pooling), dense (with or without a bias), GELU, LayerNorm, then the
// linear layer. Whichever encoder ran the batch (the fused CPU or CUDA one, or the ATen
// forward) pools as it does for embeddings; the head then runs in float32 on the host: two
// small GEMMs per batch against the encoder's dozens.
#ifndef EMBER_ENGINE_ENCODER_CLASSIFIER_HEAD_H_
#define EMBER_ENGINE_ENCODER_CLASSIFIER_HEAD_H_

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace ember::engine {

struct ClassifierHead {
  // Float32, contiguous, on the CPU. An undefined bias adds nothing.
  at::Tensor dense_w, dense_b;  // [H, H], [H]
  bool gelu = false;            // the activation after dense: GELU (erf), else tanh
  at::Tensor norm_w, norm_b;    // a LayerNorm after it, [H] each; undefined norm_w: none
  double norm_eps = 1e-5;
  at::Tensor w, b;  // [labels, H], [labels]

  std::int64_t labels() const { return w.size(0); }
  // cls: `rows` [CLS] hidden states of H floats each. Returns the logits, [rows x labels()].
  std::vector<float> Apply(const float* cls, std::int64_t rows) const;
};

}  // namespace ember::engine

#endif  // EMBER_ENGINE_ENCODER_CLASSIFIER_HEAD_H_
