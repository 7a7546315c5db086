#include "gateway/embedding_call.h"

#include <charconv>
#include <limits>
#include <nlohmann/json.hpp>

#include "gateway/http_error.h"

namespace ember::gateway {

nlohmann::json ParseJsonObject(std::string_view body) {
  nlohmann::json request = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (request.is_discarded()) throw BadRequest("the request body is not valid JSON");
  if (!request.is_object()) throw BadRequest("the request body must be a JSON object");
  return request;
}

void ParseModelName(std::string_view spec, EmbeddingCall* call) {
  std::string_view name = spec;
  std::uint32_t version = 0;
  const std::size_t colon = spec.rfind(':');
  if (colon != std::string_view::npos) {
    const std::string_view suffix = spec.substr(colon + 1);
    std::uint64_t parsed = 0;
    const auto [end, ec] = std::from_chars(suffix.data(), suffix.data() + suffix.size(), parsed);
    if (suffix == "latest") {
      name = spec.substr(0, colon);
    } else if (!suffix.empty() && ec == std::errc() && end == suffix.data() + suffix.size() &&
               parsed > 0 && parsed <= std::numeric_limits<std::uint32_t>::max()) {
      name = spec.substr(0, colon);
      version = static_cast<std::uint32_t>(parsed);
    }
  }
  if (name.empty()) throw BadRequest("'model' must name a model (\"name\" or \"name:version\")");
  call->model = std::string(name);
  call->version = version;
}

void ParseModelOrDefault(const nlohmann::json& body, const std::string& default_model,
                         EmbeddingCall* call) {
  const auto model = body.find("model");
  if (model != body.end() && !model->is_null()) {
    if (!model->is_string()) throw BadRequest("'model' must be a string");
    ParseModelName(model->get_ref<const std::string&>(), call);
  } else if (!default_model.empty()) {
    ParseModelName(default_model, call);
  } else {
    throw BadRequest("no 'model' in the request and the gateway has no --default-model");
  }
}

std::vector<std::string> ParseTeiInputs(const nlohmann::json& body) {
  const auto inputs = body.find("inputs");
  if (inputs == body.end()) throw BadRequest("'inputs' is required");
  std::vector<std::string> texts;
  if (inputs->is_string()) {
    texts.push_back(inputs->get<std::string>());
  } else if (inputs->is_array() && !inputs->empty()) {
    for (const nlohmann::json& item : *inputs) {
      if (!item.is_string()) throw BadRequest("'inputs' must be a string or an array of strings");
      texts.push_back(item.get<std::string>());
    }
  } else {
    throw BadRequest("'inputs' must be a string or a non-empty array of strings");
  }
  RequireNonEmptyTexts(texts, "inputs");
  return texts;
}

void RequireNonEmptyTexts(const std::vector<std::string>& texts, const char* key) {
  // As TEI and OpenAI: an empty text has nothing to embed; refused, naming it.
  for (size_t i = 0; i < texts.size(); ++i) {
    if (!texts[i].empty()) continue;
    throw BadRequest(texts.size() == 1 ? "'" + std::string(key) + "' must not be an empty string"
                                       : "'" + std::string(key) + "'[" + std::to_string(i) +
                                             "] is an empty string");
  }
}

std::optional<bool> ParseFlag(const nlohmann::json& body, const char* name) {
  const auto value = body.find(name);
  if (value == body.end() || value->is_null()) return std::nullopt;
  if (!value->is_boolean()) throw BadRequest("'" + std::string(name) + "' must be a boolean");
  return value->get<bool>();
}

std::uint32_t ParseDimensions(const nlohmann::json& body) {
  const auto dimensions = body.find("dimensions");
  if (dimensions == body.end() || dimensions->is_null()) return 0;
  if (!dimensions->is_number_unsigned() || dimensions->get<std::uint64_t>() == 0 ||
      dimensions->get<std::uint64_t>() > std::numeric_limits<std::uint32_t>::max()) {
    throw BadRequest("'dimensions' must be a positive integer");
  }
  return dimensions->get<std::uint32_t>();
}

std::string ParsePromptName(const nlohmann::json& body) {
  const auto name = body.find("prompt_name");
  if (name == body.end() || name->is_null()) return {};
  if (!name->is_string() || name->get_ref<const std::string&>().empty()) {
    throw BadRequest("'prompt_name' must be a non-empty string");
  }
  return name->get<std::string>();
}

}  // namespace ember::gateway
