#include "engine/bert/bert_config.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

namespace ember::engine {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

[[noreturn]] void Fail(const std::string& what) { throw std::runtime_error("BertModel: " + what); }

json ReadJson(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail("cannot open " + path.string());
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    Fail("malformed JSON in " + path.string() + ": " + e.what());
  }
}

int64_t GetPositiveInt(const json& j, const char* key, const fs::path& file) {
  auto it = j.find(key);
  if (it == j.end()) Fail(file.string() + ": missing \"" + key + "\"");
  if (!it->is_number_integer() || it->get<int64_t>() <= 0) {
    Fail(file.string() + ": \"" + key + "\" must be a positive integer, got " + it->dump());
  }
  return it->get<int64_t>();
}

void ParsePoolingConfig(const fs::path& file, SentenceTransformersConfig& st) {
  const json j = ReadJson(file);
  if (!j.is_object()) Fail(file.string() + ": not a JSON object");
  std::vector<std::string> on;
  for (const auto& [k, v] : j.items()) {
    if (k.rfind("pooling_mode_", 0) == 0 && v.is_boolean() && v.get<bool>()) on.push_back(k);
  }
  if (on.size() == 1 && on[0] == "pooling_mode_mean_tokens") {
    st.pooling = Pooling::kMean;
  } else if (on.size() == 1 && on[0] == "pooling_mode_cls_token") {
    st.pooling = Pooling::kCls;
  } else {
    std::string modes;
    for (const auto& m : on) modes += (modes.empty() ? "" : ", ") + m;
    st.pooling_problem = file.string() + " asks for pooling {" + modes +
                         "}; only exactly one of pooling_mode_mean_tokens / "
                         "pooling_mode_cls_token is supported (pass an explicit pooling option "
                         "to override)";
  }
}

bool IsSequenceClassifier(const json& config) {
  const auto it = config.find("architectures");
  if (it == config.end() || !it->is_array()) return false;
  for (const json& a : *it) {
    if (a.is_string() && a.get<std::string>().ends_with("ForSequenceClassification")) return true;
  }
  return false;
}

// The classifier's labels in id order, as HF's PretrainedConfig resolves them.
std::vector<std::string> ParseLabels(const json& config, const fs::path& file) {
  std::vector<std::string> labels;
  if (const auto it = config.find("id2label"); it != config.end()) {
    if (!it->is_object() || it->empty()) Fail(file.string() + ": id2label must be a JSON object");
    labels.resize(it->size());
    std::vector<bool> seen(it->size());
    for (const auto& [key, value] : it->items()) {
      std::size_t id = labels.size();
      try {
        std::size_t used = 0;
        id = std::stoul(key, &used);
        if (used != key.size()) id = labels.size();
      } catch (const std::exception&) {
      }
      if (id >= labels.size() || seen[id] || !value.is_string()) {
        Fail(file.string() + ": id2label must map the ids 0.." + std::to_string(labels.size() - 1) +
             " to names, each once; got \"" + key + "\": " + value.dump());
      }
      seen[id] = true;
      labels[id] = value.get<std::string>();
    }
    return labels;
  }
  const int64_t n = config.contains("num_labels") ? GetPositiveInt(config, "num_labels", file) : 2;
  for (int64_t i = 0; i < n; ++i) labels.push_back("LABEL_" + std::to_string(i));
  return labels;
}

}  // namespace

BertConfig ParseBertConfig(const fs::path& file) {
  const json j = ReadJson(file);
  if (!j.is_object()) Fail(file.string() + ": not a JSON object");
  if (auto it = j.find("model_type"); it != j.end()) {
    if (!it->is_string() || it->get<std::string>() != "bert") {
      Fail(file.string() + ": model_type " + it->dump() +
           " is not supported (only \"bert\"; RoBERTa-style models differ in position ids)");
    }
  }
  if (auto it = j.find("position_embedding_type"); it != j.end() && *it != "absolute") {
    Fail(file.string() + ": position_embedding_type " + it->dump() + " is not supported");
  }
  BertConfig c;
  c.hidden = GetPositiveInt(j, "hidden_size", file);
  c.layers = GetPositiveInt(j, "num_hidden_layers", file);
  c.heads = GetPositiveInt(j, "num_attention_heads", file);
  c.intermediate = GetPositiveInt(j, "intermediate_size", file);
  c.vocab = GetPositiveInt(j, "vocab_size", file);
  c.max_pos = GetPositiveInt(j, "max_position_embeddings", file);
  if (j.contains("type_vocab_size")) c.type_vocab = GetPositiveInt(j, "type_vocab_size", file);
  if (c.hidden % c.heads != 0) {
    Fail(file.string() + ": hidden_size " + std::to_string(c.hidden) +
         " is not divisible by num_attention_heads " + std::to_string(c.heads));
  }
  if (auto it = j.find("layer_norm_eps"); it != j.end()) {
    if (!it->is_number() || !(it->get<double>() > 0)) {
      Fail(file.string() + ": layer_norm_eps must be a positive number");
    }
    c.eps = it->get<double>();
  }
  if (auto it = j.find("hidden_act"); it != j.end()) {
    const std::string act = it->is_string() ? it->get<std::string>() : it->dump();
    if (act == "gelu") {
      c.act = Activation::kGeluErf;
    } else if (act == "gelu_new" || act == "gelu_pytorch_tanh" || act == "gelu_fast") {
      c.act = Activation::kGeluTanh;
    } else if (act == "relu") {
      c.act = Activation::kRelu;
    } else {
      Fail(file.string() + ": hidden_act \"" + act + "\" is not supported");
    }
  }
  if (IsSequenceClassifier(j)) c.labels = ParseLabels(j, file);
  return c;
}

SentenceTransformersConfig ParseSentenceTransformers(const fs::path& dir) {
  SentenceTransformersConfig st;
  st.transformer_dir = dir;
  fs::path pooling_file;
  const fs::path modules = dir / "modules.json";
  if (fs::exists(modules)) {
    const json j = ReadJson(modules);
    if (!j.is_array()) Fail(modules.string() + ": expected a JSON array of modules");
    for (const auto& m : j) {
      if (!m.is_object()) Fail(modules.string() + ": module entries must be objects");
      const std::string type = m.value("type", "");
      const std::string path = m.value("path", "");
      auto is = [&](const char* suffix) {
        const std::string s(suffix);
        return type.size() >= s.size() && type.compare(type.size() - s.size(), s.size(), s) == 0;
      };
      if (is("models.Transformer")) {
        st.transformer_dir = dir / path;
      } else if (is("models.Pooling")) {
        pooling_file = dir / path / "config.json";
      } else if (is("models.Normalize")) {
        // Normalisation is controlled by BertOptions::normalize.
      } else {
        Fail(modules.string() + ": module \"" + type + "\" (" + m.value("name", "?") +
             ") is not supported; ember implements Transformer, Pooling and Normalize only");
      }
    }
  } else if (fs::exists(dir / "1_Pooling" / "config.json")) {
    pooling_file = dir / "1_Pooling" / "config.json";
  }
  if (!pooling_file.empty()) {
    if (!fs::exists(pooling_file)) Fail("missing " + pooling_file.string());
    ParsePoolingConfig(pooling_file, st);
  }
  for (const fs::path& p :
       {st.transformer_dir / "sentence_bert_config.json", dir / "sentence_bert_config.json"}) {
    if (fs::exists(p)) {
      const json j = ReadJson(p);
      if (j.is_object() && j.contains("max_seq_length")) {
        st.max_seq_length = GetPositiveInt(j, "max_seq_length", p);
      }
      break;
    }
  }
  return st;
}

SentenceTransformersServing ParseSentenceTransformersServing(const fs::path& dir) {
  SentenceTransformersServing out;
  const fs::path file = dir / "config_sentence_transformers.json";
  std::ifstream in(file);
  if (!in) return out;
  const json config = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!config.is_object()) return out;
  const auto truncate_dim = config.find("truncate_dim");
  out.truncate_dim = truncate_dim != config.end() && truncate_dim->is_number_unsigned() &&
                     truncate_dim->get<std::uint64_t>() > 0;
  if (const auto prompts = config.find("prompts");
      prompts != config.end() && prompts->is_object()) {
    for (const auto& [name, text] : prompts->items()) {
      if (!text.is_string()) Fail(file.string() + ": prompt '" + name + "' is not a string");
      out.prompts.emplace(name, text.get<std::string>());
    }
  }
  if (const auto name = config.find("default_prompt_name");
      name != config.end() && name->is_string()) {
    out.default_prompt_name = name->get<std::string>();
  }
  return out;
}

}  // namespace ember::engine
