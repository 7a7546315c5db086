#include "gateway/openai_api.h"

#include <nlohmann/json.hpp>

#include "gateway/base64.h"
#include "gateway/http_error.h"
#include "gateway/json_floats.h"

namespace ember::gateway {

using nlohmann::json;

OpenAiRequest ParseOpenAiRequest(std::string_view body) {
  const json request = ParseJsonObject(body);
  OpenAiRequest out;

  const auto model = request.find("model");
  if (model == request.end() || !model->is_string()) {
    throw BadRequest("'model' is required and must be a string");
  }
  ParseModelName(model->get_ref<const std::string&>(), &out.call);

  const auto input = request.find("input");
  if (input == request.end()) throw BadRequest("'input' is required");
  if (input->is_string()) {
    out.call.texts.push_back(input->get<std::string>());
  } else if (input->is_array()) {
    if (input->empty()) throw BadRequest("'input' must not be an empty array");
    out.call.texts.reserve(input->size());
    for (const json& item : *input) {
      if (!item.is_string()) {
        throw BadRequest(
            "'input' must be a string or an array of strings (token id inputs are not supported)");
      }
      out.call.texts.push_back(item.get<std::string>());
    }
  } else {
    throw BadRequest("'input' must be a string or an array of strings");
  }
  RequireNonEmptyTexts(out.call.texts, "input");

  const auto format = request.find("encoding_format");
  if (format != request.end() && !format->is_null()) {
    if (*format == "base64") {
      out.base64 = true;
    } else if (*format != "float") {
      throw BadRequest("'encoding_format' must be \"float\" or \"base64\"");
    }
  }
  out.call.dimensions = ParseDimensions(request);
  out.call.prompt_name = ParsePromptName(request);  // ember's extension, as TEI's
  const auto truncate = request.find("truncate");
  if (truncate != request.end() && !truncate->is_null()) {
    if (!truncate->is_boolean()) throw BadRequest("'truncate' must be a boolean");
    out.call.truncate = truncate->get<bool>();
  }
  // "user" and unknown keys are accepted and ignored, as OpenAI does.
  return out;
}

std::string FormatOpenAiResponse(const OpenAiRequest& request, const Embeddings& embeddings) {
  std::string out;
  // Decimal floats take up to ~15 bytes each; reserve once.
  out.reserve(128 + embeddings.size() * (64 + embeddings.dim() * (request.base64 ? 6 : 15)));
  out += R"({"object":"list","data":[)";
  for (std::size_t i = 0; i < embeddings.size(); ++i) {
    if (i > 0) out += ',';
    out += R"({"object":"embedding","index":)";
    out += std::to_string(i);
    out += R"(,"embedding":)";
    const std::span<const float> vector = embeddings[i];
    if (request.base64) {
      out += '"';
      // float32 little-endian, as OpenAI sends it (and as ember holds it on
      // the little-endian hosts it supports).
      AppendBase64(std::string_view(reinterpret_cast<const char*>(vector.data()),
                                    vector.size() * sizeof(float)),
                   &out);
      out += '"';
    } else {
      AppendFloatArray(vector, &out);
    }
    out += '}';
  }
  out += R"(],"model":)";
  out += json(embeddings.model()).dump();
  // Tokens as the workers counted them (0 where a worker did not say).
  const std::string tokens = std::to_string(embeddings.total_tokens());
  out += R"(,"usage":{"prompt_tokens":)" + tokens + R"(,"total_tokens":)" + tokens + "}}";
  return out;
}

}  // namespace ember::gateway
