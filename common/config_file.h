// Helpers for reading ember's TOML configuration files (toml++): typed,
// range-checked fields with errors that name the file and the key. Keys
// absent from the file leave the current value, so callers fill defaults
// first and flags override afterwards.
#ifndef EMBER_COMMON_CONFIG_FILE_H_
#define EMBER_COMMON_CONFIG_FILE_H_

#include <toml++/toml.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ember::config {

// The value of a --config flag in argv ("" if none), read before the other
// flags are parsed so that flags can override the file.
std::string ConfigFlag(int argc, char** argv);

// Parses `path`; throws std::runtime_error with the parser's message.
toml::table ParseFile(const std::filesystem::path& path);

[[noreturn]] inline void Bad(const std::filesystem::path& path, std::string_view key,
                             const std::string& why) {
  throw std::runtime_error(path.string() + ": " + std::string(key) + ": " + why);
}

template <class T>
void ReadInt(const toml::table& t, std::string_view key, T* out, std::int64_t lo, std::int64_t hi,
             const std::filesystem::path& path) {
  const toml::node* node = t.get(key);
  if (node == nullptr) return;
  const auto v = node->value<std::int64_t>();
  if (!v || *v < lo || *v > hi) {
    Bad(path, key,
        "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  *out = static_cast<T>(*v);
}

template <class Duration>
void ReadDuration(const toml::table& t, std::string_view key, Duration* out, std::int64_t lo,
                  std::int64_t hi, const std::filesystem::path& path) {
  std::int64_t count = out->count();
  ReadInt(t, key, &count, lo, hi, path);
  *out = Duration(count);
}

// Throws if `t` has a key not in `known`: a typo in a config file should
// stop the process, not be silently ignored.
void CheckKeys(const toml::table& t, std::initializer_list<std::string_view> known,
               const std::filesystem::path& path, std::string_view where = "");
void CheckKeys(const toml::table& t, const std::vector<std::string>& known,
               const std::filesystem::path& path, std::string_view where = "");

void ReadString(const toml::table& t, std::string_view key, std::string* out,
                const std::filesystem::path& path);
void ReadDouble(const toml::table& t, std::string_view key, double* out, double lo, double hi,
                const std::filesystem::path& path);

}  // namespace ember::config

#endif  // EMBER_COMMON_CONFIG_FILE_H_
