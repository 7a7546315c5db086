#include "gateway/tei_token_outputs.h"

#include <charconv>
#include <nlohmann/json.hpp>

#include "gateway/json_floats.h"

namespace ember::gateway {

EmbeddingCall ParseTokenOutputsRequest(std::string_view body, const std::string& default_model) {
  const nlohmann::json request = ParseJsonObject(body);
  EmbeddingCall call;
  ParseModelOrDefault(request, default_model, &call);
  call.texts = ParseTeiInputs(request);
  call.prompt_name = ParsePromptName(request);
  call.truncate = ParseFlag(request, "truncate");
  return call;
}

std::string FormatSparseResponse(const Embeddings& sparse) {
  std::string out = "[";
  char number[16];
  for (std::size_t i = 0; i < sparse.size(); ++i) {
    if (i > 0) out += ',';
    out += '[';
    const Embeddings::SparseEntries entries = sparse.Sparse(i);
    for (std::size_t k = 0; k < entries.ids.size(); ++k) {
      if (k > 0) out += ',';
      out += "{\"index\":";
      const auto end = std::to_chars(number, number + sizeof number, entries.ids[k]).ptr;
      out.append(number, end);
      out += ",\"value\":";
      AppendFloat(entries.weights[k], &out);
      out += '}';
    }
    out += ']';
  }
  out += ']';
  return out;
}

std::string FormatMultiVectorResponse(const Embeddings& vectors) {
  std::string out = "[";
  for (std::size_t i = 0; i < vectors.size(); ++i) {
    if (i > 0) out += ',';
    out += '[';
    const std::span<const float> rows = vectors.Rows(i);
    for (std::size_t r = 0; r < vectors.rows()[i]; ++r) {
      if (r > 0) out += ',';
      AppendFloatArray(rows.subspan(r * vectors.dim(), vectors.dim()), &out);
    }
    out += ']';
  }
  out += ']';
  return out;
}

}  // namespace ember::gateway
