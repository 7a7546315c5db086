// What an HTTP embedding request asks of the cluster, whichever API it came
// through (OpenAI /v1/embeddings or TEI /embed): the parsers fill one of
// these, the gateway turns it into one ember::Client::Embed call.
#ifndef EMBER_GATEWAY_EMBEDDING_CALL_H_
#define EMBER_GATEWAY_EMBEDDING_CALL_H_

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ember::gateway {

struct EmbeddingCall {
  std::string model;
  std::uint32_t version = 0;  // 0: the latest version the cluster serves
  std::vector<std::string> texts;
  std::optional<bool> truncate;  // unset: ember's default (truncate)
  // The first n components, normalised again (Matryoshka: only models that declare it take
  // an n below their size; the worker says BAD_REQUEST otherwise). 0: all of them.
  std::uint32_t dimensions = 0;
  // One of the model's prompts (e.g. "query"), put before each input; empty: the model's
  // default prompt, if it has one.
  std::string prompt_name{};
};

// `body` as a JSON object; throws HttpError 400 when it is not valid JSON or not an object.
nlohmann::json ParseJsonObject(std::string_view body);

// Splits "name:version" (version a positive integer, or "latest" = 0) into
// name and version; any other string is a bare name, version 0. Throws
// HttpError 400 for an empty name.
void ParseModelName(std::string_view spec, EmbeddingCall* call);

// The body's "model" ("name[:version]"), or `default_model` where it has none (the TEI
// endpoints: a TEI server serves one model). Throws HttpError 400 when neither names one.
void ParseModelOrDefault(const nlohmann::json& body, const std::string& default_model,
                         EmbeddingCall* call);

// TEI's "inputs": a string, or a non-empty array of strings, none empty. Throws HttpError 400
// otherwise.
std::vector<std::string> ParseTeiInputs(const nlohmann::json& body);

// Throws BadRequest naming the first empty text (`key`, its index in an array of several), as
// TEI and OpenAI refuse one.
void RequireNonEmptyTexts(const std::vector<std::string>& texts, const char* key);

// The body's boolean `name` (absent or null: nullopt); throws HttpError 400 unless a boolean.
std::optional<bool> ParseFlag(const nlohmann::json& body, const char* name);

// The body's "dimensions" (absent or null: 0); throws HttpError 400 unless a positive integer
// that fits uint32.
std::uint32_t ParseDimensions(const nlohmann::json& body);

// The body's "prompt_name" (absent or null: ""); throws HttpError 400 unless a non-empty string.
std::string ParsePromptName(const nlohmann::json& body);

}  // namespace ember::gateway

#endif  // EMBER_GATEWAY_EMBEDDING_CALL_H_
