// A temporary model repository for tests: REPO/<model>/<version>/ holding
// links to the generated models (or broken files), removed afterwards.
#ifndef EMBER_TESTS_TEST_REPOSITORY_H_
#define EMBER_TESTS_TEST_REPOSITORY_H_

#include <cstdint>
#include <filesystem>
#include <string>

#include "tests/cluster.h"
#include "tests/temp_dir.h"

namespace ember::testing {

class TestRepository {
 public:
  const std::filesystem::path& root() const { return dir_.path(); }

  // REPO/tiny/<version>/model.pt, a link to the generated ember-tiny.
  std::filesystem::path AddTiny(std::uint32_t version) {
    const std::filesystem::path dir = Version("tiny", version);
    std::filesystem::create_symlink(std::filesystem::path(TinyModelDir()) / "model.pt",
                                    dir / "model.pt");
    return dir;
  }
  // REPO/<model>/<version>/ with a link to every entry of `folder`.
  void AddFolder(const std::string& model, std::uint32_t version,
                 const std::filesystem::path& folder) {
    const std::filesystem::path dir = Version(model, version);
    for (const auto& entry : std::filesystem::directory_iterator(folder)) {
      std::filesystem::create_symlink(entry.path(), dir / entry.path().filename());
    }
  }
  // The (created) directory of a version.
  std::filesystem::path Version(const std::string& model, std::uint32_t version) {
    const std::filesystem::path dir = root() / model / std::to_string(version);
    std::filesystem::create_directories(dir);
    return dir;
  }

 private:
  TempDir dir_{"ember-repo"};
};

}  // namespace ember::testing

#endif  // EMBER_TESTS_TEST_REPOSITORY_H_
