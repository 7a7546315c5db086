// TEI's POST /tokenize: a model's tokens of each input, with where in it each came from.
//
// Request:  {"inputs": str | [str], "add_special_tokens": bool = true, "truncate": bool = true,
//            "model": "name[:version]"}
// Response: [[{"id": n, "text": str, "special": bool, "start": n | null, "stop": n | null},
//            ...], ...], one list per input. `start` and `stop` are byte offsets into the input
//            and `text` is its bytes [start, stop); for the [CLS] and [SEP] the model adds
//            (special), `text` is the token and the offsets are null. Without
//            add_special_tokens those two are left out. The tokens are the ones the model
//            runs: a text over its length is cut there (truncate: false makes that TOO_LONG).
// Errors as tei_api.h's. Without "model", the gateway's --default-model.
#ifndef EMBER_GATEWAY_TEI_TOKENIZE_H_
#define EMBER_GATEWAY_TEI_TOKENIZE_H_

#include <string>
#include <string_view>

#include "client/client.h"
#include "gateway/embedding_call.h"

namespace ember::gateway {

struct TokenizeRequest {
  EmbeddingCall call;
  bool add_special_tokens = true;
};

// Throws HttpError 400 when malformed or when no model is known.
TokenizeRequest ParseTokenizeRequest(std::string_view body, const std::string& default_model);

// The response body for `tokens` (Client::Tokenize's answer to request.call.texts).
std::string FormatTokenizeResponse(const TokenizeRequest& request, const Embeddings& tokens);

}  // namespace ember::gateway

#endif  // EMBER_GATEWAY_TEI_TOKENIZE_H_
