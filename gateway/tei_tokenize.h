// TEI's POST /tokenize (a model's tokens of each input, with where in it each came from) and
// POST /decode (token ids back to text).
//
// Request:  {"inputs": str | [str], "add_special_tokens": bool = true, "truncate": bool = true,
//            "model": "name[:version]"}
// Response: [[{"id": n, "text": str, "special": bool, "start": n | null, "stop": n | null},
//            ...], ...], one list per input. `start` and `stop` are byte offsets into the input
//            and `text` is its bytes [start, stop); for the [CLS] and [SEP] the model adds
//            (special), `text` is the token and the offsets are null. Without
//            add_special_tokens those two are left out. The tokens are the ones the model
//            runs: a text over its length is cut there (truncate: false makes that TOO_LONG).
//
// /decode request:  {"ids": [n, ...] | [[n, ...], ...], "skip_special_tokens": bool = true,
//                    "model": "name[:version]"}
// /decode response: ["text", ...], one per sequence of ids, as HF tokenizers' decode writes it.
//
// Errors as tei_api.h's. Without "model", the gateway's --default-model.
#ifndef EMBER_GATEWAY_TEI_TOKENIZE_H_
#define EMBER_GATEWAY_TEI_TOKENIZE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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

struct DecodeRequest {
  EmbeddingCall call;  // model and version; no texts
  std::vector<std::vector<std::uint32_t>> ids;
  bool skip_special_tokens = true;
};

// Throws HttpError 400 when malformed or when no model is known.
DecodeRequest ParseDecodeRequest(std::string_view body, const std::string& default_model);

// The response body for `decoded` (Client::Decode's answer).
std::string FormatDecodeResponse(const Embeddings& decoded);

}  // namespace ember::gateway

#endif  // EMBER_GATEWAY_TEI_TOKENIZE_H_
