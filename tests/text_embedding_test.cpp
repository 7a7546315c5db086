// Text in, vectors out: a real cluster serving the MiniLM-shaped BERT folder
// (WordPiece tokenizer + LibTorch encoder) must give, for English and Chinese
// texts short and long, the vectors an independent Python implementation
// computes (scripts/reference_embeddings.py: Python tokenizer, float64
// forward pass, each text alone).
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "client/client.h"
#include "tests/cluster.h"

namespace ember::testing {
namespace {

struct Reference {
  std::vector<std::string> texts;
  std::vector<std::vector<float>> vectors;
};

Reference LoadReference() {
  std::ifstream in(std::string(EMBER_MINILM_DIR) + "-reference.json");
  const auto json = nlohmann::json::parse(in);
  return {json["texts"].get<std::vector<std::string>>(),
          json["vectors"].get<std::vector<std::vector<float>>>()};
}

double Cosine(std::span<const float> a, const std::vector<float>& b) {
  double dot = 0, na = 0, nb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    dot += double{a[i]} * b[i];
    na += double{a[i]} * a[i];
    nb += double{b[i]} * b[i];
  }
  return dot / std::sqrt(na * nb);
}

class TextEmbeddingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ClusterOptions options;
    options.workers = 1;
    options.models = {"minilm=" + std::string(EMBER_MINILM_DIR)};
    options.worker_args = {"--threads", "2"};
    cluster_ = std::make_unique<Cluster>(options);
    ready_ = cluster_->WaitForWorkers(1);
  }
  static void TearDownTestSuite() { cluster_.reset(); }
  // A failure in SetUpTestSuite would only skip the tests; fail them instead.
  void SetUp() override { ASSERT_TRUE(ready_) << "the minilm worker never registered"; }

  static std::unique_ptr<Cluster> cluster_;
  static bool ready_;
  Reference reference_ = LoadReference();
};
std::unique_ptr<Cluster> TextEmbeddingTest::cluster_;
bool TextEmbeddingTest::ready_ = false;

TEST_F(TextEmbeddingTest, EachTextAloneMatchesReference) {
  ASSERT_GE(reference_.texts.size(), 20u);
  Client client(cluster_->frontend());
  for (std::size_t i = 0; i < reference_.texts.size(); ++i) {
    const Embeddings e = client.Embed("minilm", {reference_.texts[i]});
    ASSERT_EQ(e.dim(), 384u);
    EXPECT_GE(Cosine(e[0], reference_.vectors[i]), 0.9999) << reference_.texts[i];
  }
}

TEST_F(TextEmbeddingTest, OneBatchOfAllTextsMatchesReference) {
  Client client(cluster_->frontend());
  const Embeddings e = client.Embed("minilm", reference_.texts);
  ASSERT_EQ(e.size(), reference_.texts.size());
  double worst = 1;
  for (std::size_t i = 0; i < e.size(); ++i) {
    const double c = Cosine(e[i], reference_.vectors[i]);
    worst = std::min(worst, c);
    EXPECT_GE(c, 0.9999) << reference_.texts[i];
    double norm = 0;
    for (float x : e[i]) norm += double{x} * x;
    EXPECT_NEAR(std::sqrt(norm), 1.0, 1e-4);
  }
  RecordProperty("min_cosine", std::to_string(worst));
}

// Concurrent clients make the worker batch texts of different lengths
// together; every vector must still equal the text's own, unbatched one. Batching across
// requests shows in a one-text request whose reply came from a batch of more than one text.
TEST_F(TextEmbeddingTest, ConcurrentBatchedResultsEqualUnbatched) {
  constexpr int kClients = 8, kRequests = 12;
  std::atomic<int> bad{0}, failed{0};
  std::atomic<std::uint32_t> largest_batch{0};  // of the one-text requests' replies
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      Client client(cluster_->frontend());
      for (int r = 0; r < kRequests; ++r) {
        std::vector<std::size_t> picks;
        for (int t = 0; t <= r % 3; ++t) {
          picks.push_back((c * 7 + r * 5 + t * 3) % reference_.texts.size());
        }
        std::vector<std::string> texts;
        for (auto p : picks) texts.push_back(reference_.texts[p]);
        try {
          const Embeddings e = client.Embed("minilm", texts, {.timeout = std::chrono::seconds(60)});
          for (std::size_t i = 0; i < picks.size(); ++i) {
            if (Cosine(e[i], reference_.vectors[picks[i]]) < 0.9999) ++bad;
          }
          std::uint32_t seen = largest_batch;
          while (texts.size() == 1 && e.batch_size() > seen &&
                 !largest_batch.compare_exchange_weak(seen, e.batch_size())) {
          }
        } catch (const Error&) {
          ++failed;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(bad, 0);
  EXPECT_GT(largest_batch.load(), 1u) << "no request was batched with another";
}

TEST_F(TextEmbeddingTest, TruncationIsAPerRequestChoice) {
  Client client(cluster_->frontend());
  const std::string long_text = reference_.texts[19];  // > 256 tokens
  EXPECT_EQ(client.Embed("minilm", {long_text}).size(), 1u);
  try {
    client.Embed("minilm", {"short", long_text}, {.truncate = false});
    ADD_FAILURE() << "expected TOO_LONG";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTooLong) << e.what();
    EXPECT_NE(std::string(e.what()).find("input 1"), std::string::npos) << e.what();
  }
  // Short texts are fine without truncation.
  EXPECT_EQ(client.Embed("minilm", {"short"}, {.truncate = false}).size(), 1u);
}

TEST_F(TextEmbeddingTest, InvalidUtf8IsABadRequest) {
  Client client(cluster_->frontend());
  for (const std::string& bad : {std::string("\xc3"), std::string("ok \xed\xa0\x80 surrogate"),
                                 std::string("\xf8\x88\x80\x80\x80")}) {
    try {
      client.Embed("minilm", {bad});
      ADD_FAILURE() << "accepted invalid UTF-8";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kBadRequest) << e.what();
    }
  }
  EXPECT_EQ(client.Embed("minilm", {"still serving"}).size(), 1u);
}

}  // namespace
}  // namespace ember::testing
