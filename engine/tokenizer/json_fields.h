// Reading the fields of a tokenizer.json component (internal to engine/tokenizer/): each
// getter names the component and the field in its error (kBadConfig), so that a file ember
// cannot load says what in it is wrong.
#ifndef EMBER_ENGINE_TOKENIZER_JSON_FIELDS_H_
#define EMBER_ENGINE_TOKENIZER_JSON_FIELDS_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "engine/tokenizer/tokenizer.h"

namespace ember::engine::json_fields {

using Json = nlohmann::json;

// The component's "type" ("BertNormalizer", ...); `what` names its place ("normalizer").
inline std::string TypeOf(const Json& spec, const std::string& what) {
  if (!spec.is_object()) BadConfig(what + " must be a JSON object, got " + spec.dump());
  const auto it = spec.find("type");
  if (it == spec.end() || !it->is_string()) BadConfig(what + " has no \"type\"");
  return it->get<std::string>();
}

// The field `key` of `spec`, or nullptr when absent or null.
inline const Json* Find(const Json& spec, const char* key) {
  const auto it = spec.find(key);
  return it == spec.end() || it->is_null() ? nullptr : &*it;
}

inline const Json& Required(const Json& spec, const char* key, const std::string& where) {
  const Json* j = Find(spec, key);
  if (j == nullptr) BadConfig(where + " needs \"" + key + "\"");
  return *j;
}

inline bool Bool(const Json& spec, const char* key, bool fallback, const std::string& where) {
  const Json* j = Find(spec, key);
  if (j == nullptr) return fallback;
  if (!j->is_boolean()) BadConfig(where + ": \"" + key + "\" must be true or false");
  return j->get<bool>();
}

inline std::optional<bool> OptionalBool(const Json& spec, const char* key,
                                        const std::string& where) {
  if (Find(spec, key) == nullptr) return std::nullopt;
  return Bool(spec, key, false, where);
}

inline std::string String(const Json& spec, const char* key, const std::string& where) {
  const Json& j = Required(spec, key, where);
  if (!j.is_string()) BadConfig(where + ": \"" + key + "\" must be a string");
  return j.get<std::string>();
}

inline std::optional<std::string> OptionalString(const Json& spec, const char* key,
                                                 const std::string& where) {
  if (Find(spec, key) == nullptr) return std::nullopt;
  return String(spec, key, where);
}

inline std::uint64_t Unsigned(const Json& spec, const char* key, std::uint64_t fallback,
                              const std::string& where) {
  const Json* j = Find(spec, key);
  if (j == nullptr) return fallback;
  if (!j->is_number_unsigned()) BadConfig(where + ": \"" + key + "\" must be a whole number");
  return j->get<std::uint64_t>();
}

// A string of exactly one character (Metaspace's replacement, Strip's content).
char32_t OneChar(const Json& spec, const char* key, const std::string& where);

}  // namespace ember::engine::json_fields

#endif  // EMBER_ENGINE_TOKENIZER_JSON_FIELDS_H_
