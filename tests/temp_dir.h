// A fresh directory under the system's temporary directory, removed with
// everything in it when the object goes away: where tests put ipc://
// endpoints, logs, keys and model repositories.
#ifndef EMBER_TESTS_TEMP_DIR_H_
#define EMBER_TESTS_TEMP_DIR_H_

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ember::testing {

class TempDir {
 public:
  explicit TempDir(std::string_view prefix = "ember-test") {
    std::string pattern =
        (std::filesystem::temp_directory_path() / (std::string(prefix) + "-XXXXXX")).string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace ember::testing

#endif  // EMBER_TESTS_TEMP_DIR_H_
