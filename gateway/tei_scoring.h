// TEI's endpoints for the models that score rather than embed: cross-encoders (rerankers) and
// sequence classifiers (BertForSequenceClassification folders; docs/http-api.md).
//
// POST /rerank
//   Request:  {"query": str, "texts": [str, ...], "truncate": bool, "raw_scores": bool,
//              "return_text": bool, "truncation_direction": "right",
//              "top_n": n (Cohere's and Jina's; 1..len(texts)), "model": "name[:version]"}
//   Response: [{"index": i, "score": s, "text": str (with return_text)}, ...], best first.
//             Scores are the sigmoid of the model's logit (raw_scores: the logit).
// POST /predict
//   Request:  {"inputs": str | [str] | [str, str] | [str | [str] | [str, str], ...],
//              "truncate": bool, "raw_scores": bool, "model": "name[:version]"}
//             As TEI reads it: a string or an array of one or two strings is one input (a text
//             or a pair); any other array is a batch of such inputs.
//   Response: one input: [{"score": s, "label": l}, ...] over the model's labels, best first
//             (softmax, or the sigmoid of a one-label model; raw_scores: the logits); a batch:
//             one such array per input.
// Errors as tei_api.h's. Without "model", the gateway's --default-model.
#ifndef EMBER_GATEWAY_TEI_SCORING_H_
#define EMBER_GATEWAY_TEI_SCORING_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "client/client.h"
#include "gateway/embedding_call.h"

namespace ember::gateway {

// What a /rerank or /predict asks of the cluster: one Score call. call.texts are the first
// texts (a rerank's query, once per text), `pairs` the second ones (empty: single texts).
struct ScoreCall {
  EmbeddingCall call;
  std::vector<std::string> pairs;
  bool raw_scores = false;
};

struct RerankRequest {
  ScoreCall score;
  bool return_text = false;
  std::size_t top_n = 0;  // 0: every text
};

struct PredictRequest {
  ScoreCall score;
  bool batch = false;  // the response is one array per input
};

// Throw HttpError 400 when malformed or when no model is known.
RerankRequest ParseRerankRequest(std::string_view body, const std::string& default_model);
PredictRequest ParsePredictRequest(std::string_view body, const std::string& default_model);

// The response bodies for `scores` (Client::Score's rows, one per input).
std::string FormatRerankResponse(const RerankRequest& request, const Embeddings& scores);
std::string FormatPredictResponse(const PredictRequest& request, const Embeddings& scores);

}  // namespace ember::gateway

#endif  // EMBER_GATEWAY_TEI_SCORING_H_
