// engine/encoder/torch_state_dict.h on the files Python's torch.save writes: bge-m3's heads as
// scripts/make_encoder_model.py --token-heads saves them (EMBER_XLMR_M3_DIR), and damaged
// copies of them, which must be refused with an error naming the file, never a crash.
#include "engine/encoder/torch_state_dict.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>
#include <string>

namespace ember::engine {
namespace {

namespace fs = std::filesystem;

// Empty where the build wrote no families test models.
fs::path ModelDir() {
  const char* dir = std::getenv("EMBER_XLMR_M3_DIR");
  if (dir == nullptr || !fs::exists(fs::path(dir) / "sparse_linear.pt")) return {};
  return dir;
}

std::string ReadBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void WriteBytes(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(TorchStateDictTest, ReadsTheHeadsTorchSaveWrote) {
  if (ModelDir().empty()) GTEST_SKIP() << "no bge-m3 test model (EMBER_XLMR_M3_DIR)";
  const auto sparse = ReadTorchStateDict(ModelDir() / "sparse_linear.pt");
  ASSERT_EQ(sparse.size(), 2u);
  EXPECT_EQ(sparse.at("weight").sizes(), (at::IntArrayRef{1, 1024}));
  EXPECT_EQ(sparse.at("weight").scalar_type(), at::kFloat);
  // make_encoder_model.py zeroes the sparse bias and keeps nn.Linear's init, |w| <= 1/32.
  EXPECT_EQ(sparse.at("bias").sizes(), (at::IntArrayRef{1}));
  EXPECT_EQ(sparse.at("bias").item<float>(), 0.0f);
  EXPECT_LE(sparse.at("weight").abs().max().item<float>(), 1.0f / 32);
  EXPECT_GT(sparse.at("weight").abs().max().item<float>(), 0.0f);
  const auto colbert = ReadTorchStateDict(ModelDir() / "colbert_linear.pt");
  EXPECT_EQ(colbert.at("weight").sizes(), (at::IntArrayRef{1024, 1024}));
  EXPECT_EQ(colbert.at("bias").sizes(), (at::IntArrayRef{1024}));
}

TEST(TorchStateDictTest, ADamagedFileIsRefusedNamingIt) {
  if (ModelDir().empty()) GTEST_SKIP() << "no bge-m3 test model (EMBER_XLMR_M3_DIR)";
  const std::string bytes = ReadBytes(ModelDir() / "sparse_linear.pt");
  const fs::path copy = fs::temp_directory_path() / "ember_damaged_state_dict.pt";
  const auto refused = [&](const std::string& damaged) {
    WriteBytes(copy, damaged);
    try {
      ReadTorchStateDict(copy);
      return false;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(copy.string()), std::string::npos) << e.what();
      return true;
    }
  };
  EXPECT_TRUE(refused("not a zip file"));
  EXPECT_TRUE(refused(bytes.substr(0, bytes.size() / 2)));
  // Bytes changed anywhere: read or refused, never anything else.
  std::mt19937 random(35);
  for (int i = 0; i < 300; ++i) {
    std::string damaged = bytes;
    damaged[random() % damaged.size()] = static_cast<char>(random());
    WriteBytes(copy, damaged);
    try {
      ReadTorchStateDict(copy);
    } catch (const std::runtime_error&) {
    }
  }
  fs::remove(copy);
}

}  // namespace
}  // namespace ember::engine
