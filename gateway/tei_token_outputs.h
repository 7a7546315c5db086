// A model's token-level outputs over HTTP (bge-m3's sparse and ColBERT heads, Backend's
// EmbedSparse and EmbedMultiVector):
//
// POST /embed_sparse, TEI's:
//   Request:  {"inputs": str | [str], "truncate": bool, "prompt_name": str,
//              "model": "name[:version]"}
//   Response: [[{"index": token id, "value": weight}, ...], ...], one list per input, ids
//             ascending, weights > 0 (FlagEmbedding's lexical_weights, keyed by id).
// POST /embed_multi_vector, ember's (TEI has none): the same request.
//   Response: [[[...], ...], ...], per input one vector per token but the first ([CLS]):
//             FlagEmbedding's colbert_vecs.
// Without "model", the gateway's --default-model. A model without the head answers 400
// (Validation) naming the file it lacks. Errors as tei_api.h's.
#ifndef EMBER_GATEWAY_TEI_TOKEN_OUTPUTS_H_
#define EMBER_GATEWAY_TEI_TOKEN_OUTPUTS_H_

#include <string>
#include <string_view>

#include "client/client.h"
#include "gateway/embedding_call.h"

namespace ember::gateway {

// Throws HttpError 400 when malformed or when no model is known.
EmbeddingCall ParseTokenOutputsRequest(std::string_view body, const std::string& default_model);

// The response bodies for Embed's answer with EmbedOutput::kSparse and kMultiVector.
std::string FormatSparseResponse(const Embeddings& sparse);
std::string FormatMultiVectorResponse(const Embeddings& vectors);

}  // namespace ember::gateway

#endif  // EMBER_GATEWAY_TEI_TOKEN_OUTPUTS_H_
