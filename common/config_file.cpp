#include "common/config_file.h"

namespace ember::config {

std::string ConfigFlag(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--config" && i + 1 < argc) return argv[i + 1];
    if (arg.starts_with("--config=")) return std::string(arg.substr(9));
  }
  return "";
}

toml::table ParseFile(const std::filesystem::path& path) {
  try {
    return toml::parse_file(path.string());
  } catch (const toml::parse_error& e) {
    throw std::runtime_error(path.string() + ": " + std::string(e.description()));
  }
}

void CheckKeys(const toml::table& t, std::initializer_list<std::string_view> known,
               const std::filesystem::path& path, std::string_view where) {
  CheckKeys(t, std::vector<std::string>(known.begin(), known.end()), path, where);
}

void CheckKeys(const toml::table& t, const std::vector<std::string>& known,
               const std::filesystem::path& path, std::string_view where) {
  for (const auto& [key, value] : t) {
    bool found = false;
    for (std::string_view k : known) found = found || k == key.str();
    if (!found) {
      Bad(path, std::string(where) + std::string(key.str()), "unknown key");
    }
  }
}

void ReadString(const toml::table& t, std::string_view key, std::string* out,
                const std::filesystem::path& path) {
  const toml::node* node = t.get(key);
  if (node == nullptr) return;
  const auto v = node->value<std::string>();
  if (!v) Bad(path, key, "expected a string");
  *out = *v;
}

void ReadDouble(const toml::table& t, std::string_view key, double* out, double lo, double hi,
                const std::filesystem::path& path) {
  const toml::node* node = t.get(key);
  if (node == nullptr) return;
  const auto v = node->value<double>();
  if (!v || *v < lo || *v > hi) {
    Bad(path, key, "expected a number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  *out = *v;
}

}  // namespace ember::config
