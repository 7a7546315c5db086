// The simulated runtime (engine/simulated/simulated_backend.h), opened as the worker opens it
// (LoadModel with backend "simulated"): the folder's real tokenizer, a forward that takes at
// least the time it is told, unit vectors that follow the ids, and its parameters checked; and
// served by a real worker from a repository version, as bench/worker_cpu.sh serves it.
#include "engine/simulated/simulated_backend.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>

#include "client/async_client.h"
#include "common/error_code.h"
#include "engine/backend_factory.h"
#include "engine/tokenizer/hf_tokenizer.h"
#include "tests/cluster.h"
#include "tests/temp_dir.h"

namespace ember::engine {
namespace {

using Clock = std::chrono::steady_clock;

Model Open(std::map<std::string, std::string> params) {
  BackendParams p;
  for (auto& [k, v] : params) p.Set(k, v);
  return LoadModel(EMBER_MINILM_DIR, BackendOptions{.backend = "simulated", .params = p});
}

std::vector<std::int32_t> Ids(const Model& model, std::string_view text, bool truncate = true) {
  return model.tokenizer
      ->Encode(text, {.truncate = truncate, .max_length = model.backend->max_length()})
      .ids;
}

TEST(SimulatedBackend, TokenizesAsTheFoldersTokenizer) {
  const Model model = Open({{"max-length", "16"}});
  EXPECT_EQ(model.backend->max_length(), 16u);
  const auto tokenizer = HfTokenizer::FromDirectory(EMBER_MINILM_DIR);
  for (const std::string text : {"Hello, world!", "Café au lait: déjà vu.", "ember"}) {
    EXPECT_EQ(Ids(model, text), tokenizer->Encode(text, {.max_length = 16}).ids) << text;
  }
  const std::string long_text(200, 'a');
  EXPECT_EQ(Ids(model, long_text + " " + long_text + " b c d e f g h i j k l m n o p").size(), 16u);
  try {
    Ids(model, "a b c d e f g h i j k l m n o p q r s t", false);
    ADD_FAILURE() << "a text over max-length passed untruncated";
  } catch (const TokenizerError& e) {
    EXPECT_EQ(e.code(), TokenizerErrorCode::kTooLong) << e.what();
  }
}

TEST(SimulatedBackend, TakesItsTimeAndGivesUnitVectorsOfItsIds) {
  const Model model = Open({{"dim", "8"}, {"batch-us", "20000"}, {"token-ns", "100000"}});
  Backend* backend = model.backend.get();
  EXPECT_EQ(backend->dim(), 8);
  EXPECT_EQ(backend->batches_in_flight(), 2);
  EXPECT_FALSE(backend->pads());
  const auto a = Ids(model, "the quick brown fox");
  const auto b = Ids(model, "jumps over the lazy dog again");
  const TokenBatch batch = TokenBatch::Of({a, b, a});
  const auto start = Clock::now();
  const std::vector<float> out = backend->Embed(batch);
  // 20 ms a batch, and 0.1 ms for each of its tokens.
  const auto least = std::chrono::microseconds(20000 + 100 * batch.tokens());
  EXPECT_GE(Clock::now() - start, least);
  ASSERT_EQ(out.size(), 3u * 8u);
  for (int i = 0; i < 3; ++i) {
    double norm = 0;
    for (int j = 0; j < 8; ++j) norm += double{out[i * 8 + j]} * out[i * 8 + j];
    EXPECT_NEAR(std::sqrt(norm), 1.0, 1e-6) << i;
  }
  EXPECT_TRUE(std::equal(out.begin(), out.begin() + 8, out.begin() + 16))
      << "same ids, same vector";
  EXPECT_FALSE(std::equal(out.begin(), out.begin() + 8, out.begin() + 8))
      << "other ids, other vector";
}

TEST(SimulatedBackend, ParametersAreChecked) {
  EXPECT_EQ(Open({{"batches-in-flight", "3"}}).backend->batches_in_flight(), 3);
  for (const auto& [key, value] : std::map<std::string, std::string>{
           {"dim", "0"}, {"batch-us", "-1"}, {"token-ns", "x"}, {"precision", "fp16"}}) {
    try {
      Open({{key, value}});
      ADD_FAILURE() << key << " = " << value << " was taken";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kBadRequest) << e.what();
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
}

// A repository version with backend = "simulated", served by a real worker: one-text requests
// in flight together come back batched together, as unit vectors, the same text as the same
// vector.
TEST(SimulatedBackend, ServedFromARepositoryVersion) {
  testing::TempDir repo("ember-sim-repo");
  const auto version = repo.path() / "sim" / "1";
  std::filesystem::create_directories(version);
  std::filesystem::create_symlink(std::filesystem::path(EMBER_MINILM_DIR) / "vocab.txt",
                                  version / "vocab.txt");
  std::ofstream(version / "config.toml") << "backend = \"simulated\"\nbatch-us = 20000\n"
                                            "max-batch-size = 1024\nmax-queue-delay-us = 5000\n";
  testing::ClusterOptions options;
  options.workers = 1;
  options.worker_args = {"--repository", repo.path().string(), "--load", "sim"};
  testing::Cluster cluster(options);
  ASSERT_TRUE(cluster.WaitForWorkers(1));
  AsyncClient client(cluster.frontend());
  std::vector<std::future<Embeddings>> replies;
  for (int i = 0; i < 64; ++i) {
    replies.push_back(client.Embed("sim", {"passage number " + std::to_string(i % 8)}));
  }
  std::vector<std::vector<float>> vectors;
  std::uint32_t largest_batch = 0;
  for (auto& reply : replies) {
    ASSERT_EQ(reply.wait_for(std::chrono::seconds(20)), std::future_status::ready);
    const Embeddings e = reply.get();
    ASSERT_EQ(e.size(), 1u);
    ASSERT_EQ(e.dim(), 384u);
    vectors.emplace_back(e[0].begin(), e[0].end());
    largest_batch = std::max(largest_batch, e.batch_size());
  }
  EXPECT_GT(largest_batch, 8u) << "requests in flight together were not batched together";
  for (std::size_t i = 0; i < vectors.size(); ++i) {
    double norm = 0;
    for (const float x : vectors[i]) norm += double{x} * x;
    EXPECT_NEAR(std::sqrt(norm), 1.0, 1e-5) << i;
    EXPECT_EQ(vectors[i], vectors[i % 8]) << "the same text, another vector: " << i;
  }
}

}  // namespace
}  // namespace ember::engine
