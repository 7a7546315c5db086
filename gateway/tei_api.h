// Hugging Face text-embeddings-inference's API (POST /embed), so that TEI
// clients (LangChain, LlamaIndex, TEI's own SDKs) can use an ember cluster.
//
// Request:  {"inputs": str | [str], "normalize": bool = true, "truncate": bool,
//            "dimensions": n (Matryoshka models only), "prompt_name": str}
//           plus ember's optional "model": "name[:version]"; without it the
//           gateway's --default-model serves the request (a TEI server
//           serves exactly one model).
// Response: [[...], ...], one vector per input.
// Errors:   {"error": message, "error_type": "Validation" | "Overloaded" | ...}
#ifndef EMBER_GATEWAY_TEI_API_H_
#define EMBER_GATEWAY_TEI_API_H_

#include <string>
#include <string_view>

#include "client/client.h"
#include "gateway/embedding_call.h"
#include "gateway/http_error.h"

namespace ember::gateway {

struct TeiRequest {
  EmbeddingCall call;
  bool normalize = true;  // TEI's default: unit-length vectors
};

// Throws HttpError 400 when malformed or when no model is known.
TeiRequest ParseTeiRequest(std::string_view body, const std::string& default_model);

std::string FormatTeiResponse(const TeiRequest& request, const Embeddings& embeddings);

std::string TeiErrorJson(const HttpError& error);

}  // namespace ember::gateway

#endif  // EMBER_GATEWAY_TEI_API_H_
