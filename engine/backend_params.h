// A model version's backend-specific settings, as the serving side read them and never looked
// at (as Triton passes a model's `parameters` to its backend): an opaque table of strings.
// The model repository puts there every config.toml key it does not know itself; the backend
// takes the keys it knows with the typed Take* calls and then calls RejectUnused(), so that a
// misspelt key fails the load with its name instead of being ignored. Header-only, so serving
// code can carry a table without linking any backend.
#ifndef EMBER_ENGINE_BACKEND_PARAMS_H_
#define EMBER_ENGINE_BACKEND_PARAMS_H_

#include <charconv>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "common/error_code.h"

namespace ember::engine {

class BackendParams {
 public:
  BackendParams() = default;
  BackendParams(std::initializer_list<std::pair<const std::string, std::string>> values)
      : values_(values) {}

  void Set(std::string key, std::string value) { values_[std::move(key)] = std::move(value); }
  bool empty() const { return values_.empty(); }
  const std::map<std::string, std::string>& values() const { return values_; }

  // Each Take removes `key` and returns its value, or nullopt when absent. A value of the wrong
  // form throws ember::Error (BAD_REQUEST) naming the key.
  std::optional<std::string> TakeString(const std::string& key) {
    auto it = values_.find(key);
    if (it == values_.end()) return std::nullopt;
    std::string value = std::move(it->second);
    values_.erase(it);
    return value;
  }
  std::optional<bool> TakeBool(const std::string& key) {
    const auto v = TakeString(key);
    if (!v) return std::nullopt;
    if (*v == "true") return true;
    if (*v == "false") return false;
    throw Error(ErrorCode::kBadRequest, key + " = \"" + *v + "\": expected true or false");
  }
  std::optional<std::int64_t> TakeInt(const std::string& key, std::int64_t lo, std::int64_t hi) {
    const auto v = TakeString(key);
    if (!v) return std::nullopt;
    std::int64_t n = 0;
    const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
    if (ec != std::errc() || end != v->data() + v->size() || n < lo || n > hi) {
      throw Error(ErrorCode::kBadRequest, key + " = \"" + *v + "\": expected an integer in [" +
                                              std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    return n;
  }

  // Throws ember::Error (BAD_REQUEST) naming every key nobody took, and those `known` to
  // `backend`.
  void RejectUnused(std::string_view backend, std::string_view known) const {
    if (values_.empty()) return;
    std::string keys;
    for (const auto& [key, value] : values_) keys += (keys.empty() ? "" : ", ") + key;
    throw Error(ErrorCode::kBadRequest, "unknown parameter(s) " + keys + " for the " +
                                            std::string(backend) +
                                            " backend (it knows: " + std::string(known) + ")");
  }

 private:
  std::map<std::string, std::string> values_;
};

}  // namespace ember::engine

#endif  // EMBER_ENGINE_BACKEND_PARAMS_H_
