// The decoder families' config.json parser (engine/decoder/decoder_family.h) on the real
// models' configs, its refusals, sharded checkpoints (engine/encoder/checkpoint.h) and the
// refusal of a model too large for the memory before any weight is read
// (engine/encoder/memory_fit.h). Their forward is held to transformers end to end by
// python/tests/test_families.py.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/encoder/checkpoint.h"
#include "engine/encoder/encoder_families.h"
#include "engine/encoder/encoder_model.h"
#include "engine/encoder/memory_fit.h"

namespace ember::engine {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class DecoderFamilyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ember-decoder-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void Write(const fs::path& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
  }
  EncoderSpec Parse(const json& config) {
    Write(dir_ / "config.json", config.dump());
    return ReadEncoderSpec(dir_ / "config.json");
  }
  // A safetensors file of float32 tensors named `names`, each [2] = {1, 2}.
  void WriteSafetensors(const fs::path& path, const std::vector<std::string>& names) {
    json header = json::object();
    std::string data;
    for (const std::string& name : names) {
      header[name] = {
          {"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {data.size(), data.size() + 8}}};
      const float values[2] = {1.0f, 2.0f};
      data.append(reinterpret_cast<const char*>(values), sizeof values);
    }
    const std::string text = header.dump();
    const uint64_t n = text.size();
    std::string bytes(reinterpret_cast<const char*>(&n), 8);
    Write(path, bytes + text + data);
  }

  fs::path dir_;
};

// Qwen/Qwen3-Embedding-0.6B's config.json as the hub has it.
json Qwen3Embedding06B() {
  return {{"architectures", {"Qwen3ForCausalLM"}},
          {"attention_bias", false},
          {"head_dim", 128},
          {"hidden_act", "silu"},
          {"hidden_size", 1024},
          {"intermediate_size", 3072},
          {"max_position_embeddings", 32768},
          {"max_window_layers", 28},
          {"model_type", "qwen3"},
          {"num_attention_heads", 16},
          {"num_hidden_layers", 28},
          {"num_key_value_heads", 8},
          {"rms_norm_eps", 1e-06},
          {"rope_scaling", nullptr},
          {"rope_theta", 1000000},
          {"sliding_window", nullptr},
          {"tie_word_embeddings", true},
          {"use_sliding_window", false},
          {"vocab_size", 151669}};
}

TEST_F(DecoderFamilyTest, Qwen3EmbeddingConfig) {
  const EncoderSpec spec = Parse(Qwen3Embedding06B());
  const EncoderConfig& c = spec.config;
  EXPECT_EQ(c.family, "qwen3");
  EXPECT_EQ(c.heads, 16);
  EXPECT_EQ(c.kv_head_count(), 8);
  EXPECT_EQ(c.head_size(), 128);
  EXPECT_EQ(c.q_width(), 2048);  // wider than hidden_size 1024
  EXPECT_EQ(c.kv_width(), 1024);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_TRUE(c.causal);
  EXPECT_TRUE(c.pre_norm);
  EXPECT_TRUE(c.gated_ffn);
  EXPECT_EQ(c.norm, EncoderConfig::Norm::kRms);
  EXPECT_EQ(c.act, Activation::kSilu);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
  EXPECT_DOUBLE_EQ(c.eps, 1e-6);
  EXPECT_TRUE(c.sliding_layer.empty());
  EXPECT_FALSE(c.bert_layers());
  EXPECT_EQ(spec.layout.q_norm, "self_attn.q_norm");
  EXPECT_FALSE(spec.layout.attention_bias);
  EXPECT_TRUE(spec.layout.embedding_ln.empty());
  // 0.6B parameters, as the model card says (embeddings tied, counted once).
  const ParameterCount n = CountParameters(c);
  EXPECT_NEAR(static_cast<double>(n.total), 596e6, 2e6);
}

// With head_dim given, the heads need not divide hidden_size: the projections are heads x
// head_dim wide (the check used to refuse such a config).
TEST_F(DecoderFamilyTest, HeadDimFreesTheHeadsFromDividingTheHiddenSize) {
  json config = Qwen3Embedding06B();
  config["num_attention_heads"] = 24;  // 1024 / 24 is no whole number
  config["num_key_value_heads"] = 8;
  const EncoderConfig c = Parse(config).config;
  EXPECT_EQ(c.head_size(), 128);
  EXPECT_EQ(c.q_width(), 24 * 128);
  config.erase("head_dim");
  EXPECT_THROW(Parse(config), std::exception) << "without head_dim the split must be even";
}

TEST_F(DecoderFamilyTest, TransformersFiveFormAndBidirectional) {
  json config = Qwen3Embedding06B();
  config.erase("rope_theta");
  config["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 5e5}};
  config["is_causal"] = false;
  config["layer_types"] = json::array();
  for (int i = 0; i < 28; ++i) config["layer_types"].push_back("full_attention");
  const EncoderConfig c = Parse(config).config;
  EXPECT_DOUBLE_EQ(c.rope_theta, 5e5);
  EXPECT_FALSE(c.causal);
  EXPECT_TRUE(c.sliding_layer.empty());
}

TEST_F(DecoderFamilyTest, GteQwen2AndE5MistralConfigs) {
  // Alibaba-NLP/gte-Qwen2-1.5B-instruct: biases on q, k, v only; no head_dim key.
  const EncoderSpec qwen2 = Parse({{"model_type", "qwen2"},
                                   {"hidden_size", 1536},
                                   {"intermediate_size", 8960},
                                   {"max_position_embeddings", 131072},
                                   {"num_attention_heads", 12},
                                   {"num_hidden_layers", 28},
                                   {"num_key_value_heads", 2},
                                   {"rms_norm_eps", 1e-6},
                                   {"rope_theta", 1000000.0},
                                   {"sliding_window", 131072},
                                   {"use_sliding_window", false},
                                   {"vocab_size", 151646}});
  EXPECT_EQ(qwen2.config.head_size(), 128);
  EXPECT_FALSE(qwen2.config.qk_norm);
  EXPECT_TRUE(qwen2.layout.attention_bias);
  EXPECT_FALSE(qwen2.layout.attn_out_bias);
  EXPECT_TRUE(qwen2.config.sliding_layer.empty());  // use_sliding_window false
  // intfloat/e5-mistral-7b-instruct: every layer sees itself and the 4,095 tokens before.
  const EncoderConfig mistral = Parse({{"model_type", "mistral"},
                                       {"hidden_size", 4096},
                                       {"intermediate_size", 14336},
                                       {"max_position_embeddings", 32768},
                                       {"num_attention_heads", 32},
                                       {"num_hidden_layers", 32},
                                       {"num_key_value_heads", 8},
                                       {"rms_norm_eps", 1e-5},
                                       {"rope_theta", 10000.0},
                                       {"sliding_window", 4096},
                                       {"vocab_size", 32000}})
                                    .config;
  EXPECT_EQ(mistral.sliding_window, 4095);
  ASSERT_EQ(mistral.sliding_layer.size(), 32u);
  EXPECT_TRUE(mistral.sliding(0) && mistral.sliding(31));
  EXPECT_DOUBLE_EQ(mistral.eps, 1e-5);
}

TEST_F(DecoderFamilyTest, RefusesWhatItDoesNotRunByName) {
  const auto refusal = [&](const json& config) {
    try {
      Parse(config);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  json yarn = Qwen3Embedding06B();
  yarn["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  EXPECT_NE(refusal(yarn).find("rope_scaling"), std::string::npos) << refusal(yarn);
  json reranker = Qwen3Embedding06B();
  reranker["architectures"] = {"Qwen3ForSequenceClassification"};
  EXPECT_NE(refusal(reranker).find("Qwen3ForSequenceClassification"), std::string::npos);
  json groups = Qwen3Embedding06B();
  groups["num_key_value_heads"] = 5;
  EXPECT_NE(refusal(groups).find("num_key_value_heads 5"), std::string::npos);
  json llama = Qwen3Embedding06B();
  llama["model_type"] = "llama";
  EXPECT_NE(refusal(llama).find("qwen3"), std::string::npos) << "lists what is served";
}

TEST_F(DecoderFamilyTest, ShardedCheckpoint) {
  WriteSafetensors(dir_ / "model-00001-of-00002.safetensors", {"a", "b"});
  WriteSafetensors(dir_ / "model-00002-of-00002.safetensors", {"c"});
  json index = {{"metadata", {{"total_size", 24}}},
                {"weight_map",
                 {{"a", "model-00001-of-00002.safetensors"},
                  {"b", "model-00001-of-00002.safetensors"},
                  {"c", "model-00002-of-00002.safetensors"}}}};
  Write(dir_ / "model.safetensors.index.json", index.dump());
  const Checkpoint checkpoint = Checkpoint::Open(dir_);
  EXPECT_EQ(checkpoint.shards(), 2u);
  EXPECT_EQ(checkpoint.bytes(), 24u);
  EXPECT_EQ(checkpoint.at("c").file->path().filename(), "model-00002-of-00002.safetensors");
  EXPECT_THROW(checkpoint.at("d"), std::runtime_error);

  // A shard the index names but the folder lacks, and one tensor in two shards.
  index["weight_map"]["d"] = "model-00003-of-00003.safetensors";
  Write(dir_ / "model.safetensors.index.json", index.dump());
  EXPECT_THROW(
      {
        try {
          Checkpoint::Open(dir_);
        } catch (const std::runtime_error& e) {
          EXPECT_NE(std::string(e.what()).find("model-00003-of-00003"), std::string::npos);
          throw;
        }
      },
      std::runtime_error);
  WriteSafetensors(dir_ / "model-00003-of-00003.safetensors", {"a"});
  EXPECT_THROW(Checkpoint::Open(dir_), std::runtime_error);
}

TEST_F(DecoderFamilyTest, ModelLargerThanTheMemoryIsRefusedBeforeItsWeights) {
  // Qwen3-Embedding-8B's shapes with as many layers as make it twice what this machine has
  // free, and no weights at all: the refusal must come from the shapes.
  const std::optional<uint64_t> available = AvailableHostMemory();
  ASSERT_TRUE(available.has_value());
  json config = Qwen3Embedding06B();
  config["hidden_size"] = 4096;
  config["intermediate_size"] = 12288;
  config["num_attention_heads"] = 32;
  config["num_hidden_layers"] = 36;
  config["num_key_value_heads"] = 8;
  EncoderConfig c = Parse(config).config;
  const uint64_t per_layer = ResidentBytes(CountParameters(c), 4, 4) / 36;
  c.layers = static_cast<int64_t>(2 * *available / per_layer + 1);
  config["num_hidden_layers"] = c.layers;
  Write(dir_ / "config.json", config.dump());
  try {
    EncoderModel::Load(dir_);
    FAIL() << "a model of " << GiB(ResidentBytes(CountParameters(c), 4, 4)) << " loaded";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("needs about"), std::string::npos) << what;
    EXPECT_NE(what.find("free"), std::string::npos) << what;
    EXPECT_EQ(what.find("model.safetensors"), std::string::npos) << "refused before its weights";
  }
}

// A load tells how far it has come after each layer (EncoderOptions::progress, which the worker
// logs): the families test's qwen2-tiny, two layers in bf16 shards.
TEST(DecoderLoad, TellsItsProgressAfterEachLayer) {
  const char* dir = std::getenv("EMBER_QWEN2_DIR");
  if (dir == nullptr || !fs::exists(fs::path(dir) / "config.json")) {
    GTEST_SKIP() << "EMBER_QWEN2_DIR names no decoder test model";
  }
  std::vector<LoadProgress> told;
  const auto model =
      EncoderModel::Load(dir, {.progress = [&](const LoadProgress& p) { told.push_back(p); }});
  const uint64_t total = Checkpoint::Open(dir).bytes();
  ASSERT_EQ(told.size(), 2u);
  for (size_t i = 0; i < told.size(); ++i) {
    EXPECT_EQ(told[i].layers_loaded, static_cast<int64_t>(i + 1));
    EXPECT_EQ(told[i].layers, 2);
    EXPECT_EQ(told[i].bytes_total, total);
    EXPECT_GT(told[i].bytes_read, i == 0 ? 0 : told[i - 1].bytes_read);
  }
  // All but the final norm (hidden x bf16) is read by the last layer's report.
  EXPECT_EQ(told.back().bytes_read + 2 * static_cast<uint64_t>(model->dim()), total);
}

}  // namespace
}  // namespace ember::engine
