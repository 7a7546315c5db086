// OpenAI's embeddings API (POST /v1/embeddings) in ember terms, so that
// OpenAI SDKs and tools that speak it can use an ember cluster unchanged.
//
// Request:  {"input": str | [str], "model": "name" | "name:version",
//            "encoding_format": "float" | "base64", "dimensions": n, "user": ...}
//           plus ember's optional "truncate": bool and "prompt_name": str (as TEI's).
// Response: {"object": "list", "data": [{"object": "embedding", "index": i,
//            "embedding": [...] | "base64"}], "model": ..., "usage": {...}}
#ifndef EMBER_GATEWAY_OPENAI_API_H_
#define EMBER_GATEWAY_OPENAI_API_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "client/client.h"
#include "gateway/embedding_call.h"

namespace ember::gateway {

struct OpenAiRequest {
  EmbeddingCall call;
  bool base64 = false;  // encoding_format "base64"
};

// Parses and validates a request body; throws HttpError 400 when malformed.
OpenAiRequest ParseOpenAiRequest(std::string_view body);

// The response body; `usage` counts the tokens the workers ran (0 where a worker did not
// say). `dimensions` (EmbeddingCall) was the worker's to apply.
std::string FormatOpenAiResponse(const OpenAiRequest& request, const Embeddings& embeddings);

}  // namespace ember::gateway

#endif  // EMBER_GATEWAY_OPENAI_API_H_
