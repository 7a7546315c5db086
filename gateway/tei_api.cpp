#include "gateway/tei_api.h"

#include <nlohmann/json.hpp>
#include <vector>

#include "engine/pooling.h"
#include "gateway/json_floats.h"

namespace ember::gateway {

using nlohmann::json;

TeiRequest ParseTeiRequest(std::string_view body, const std::string& default_model) {
  const json request = ParseJsonObject(body);
  TeiRequest out;
  ParseModelOrDefault(request, default_model, &out.call);
  out.call.texts = ParseTeiInputs(request);

  out.call.dimensions = ParseDimensions(request);
  out.call.prompt_name = ParsePromptName(request);
  out.normalize = ParseFlag(request, "normalize").value_or(true);
  out.call.truncate = ParseFlag(request, "truncate");
  return out;
}

std::string FormatTeiResponse(const TeiRequest& request, const Embeddings& embeddings) {
  std::string out;
  out.reserve(16 + embeddings.size() * (4 + embeddings.dim() * 15));
  out += '[';
  std::vector<float> normalized;
  for (std::size_t i = 0; i < embeddings.size(); ++i) {
    if (i > 0) out += ',';
    std::span<const float> vector = embeddings[i];
    if (request.normalize) {
      // The one definition every backend follows (engine/pooling.h).
      normalized.assign(vector.begin(), vector.end());
      engine::NormalizeRow(normalized);
      vector = normalized;
    }
    AppendFloatArray(vector, &out);
  }
  out += ']';
  return out;
}

std::string TeiErrorJson(const HttpError& error) {
  std::string type = "Backend";
  if (error.status() == 400 || error.status() == 404 || error.status() == 413) type = "Validation";
  if (error.status() == 429) type = "Overloaded";
  if (error.status() == 503 || error.status() == 504) type = "Unhealthy";
  return json{{"error", error.what()}, {"error_type", type}}.dump(-1, ' ', false,
                                                                  json::error_handler_t::replace);
}

}  // namespace ember::gateway
