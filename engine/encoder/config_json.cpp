#include "engine/encoder/config_json.h"

#include <fstream>
#include <stdexcept>

namespace ember::engine::config_json {

namespace fs = std::filesystem;

void Fail(const std::string& what) { throw std::runtime_error("EncoderModel: " + what); }

Json Read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail("cannot open " + path.string());
  try {
    return Json::parse(in);
  } catch (const Json::exception& e) {
    Fail("malformed JSON in " + path.string() + ": " + e.what());
  }
}

int64_t IntAtLeast(const Json& j, const char* key, const fs::path& file, int64_t min) {
  auto it = j.find(key);
  if (it == j.end()) Fail(file.string() + ": missing \"" + key + "\"");
  if (!it->is_number_integer() || it->get<int64_t>() < min) {
    Fail(file.string() + ": \"" + key + "\" must be an integer of at least " + std::to_string(min) +
         ", got " + it->dump());
  }
  return it->get<int64_t>();
}

void ReadPositive(const Json& j, const char* key, const fs::path& file, double& out) {
  if (auto it = j.find(key); it != j.end()) {
    if (!it->is_number() || !(it->get<double>() > 0)) {
      Fail(file.string() + ": " + key + " must be a positive number");
    }
    out = it->get<double>();
  }
}

bool BoolOr(const Json& j, const char* key, const fs::path& file, bool fallback) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) Fail(file.string() + ": \"" + key + "\" must be true or false");
  return it->get<bool>();
}

std::optional<std::vector<bool>> SlidingLayerTypes(const Json& j, const fs::path& file,
                                                   int64_t layers) {
  const auto types = j.find("layer_types");
  if (types == j.end() || types->is_null()) return std::nullopt;
  if (!types->is_array() || static_cast<int64_t>(types->size()) != layers) {
    Fail(file.string() + ": layer_types must list num_hidden_layers=" + std::to_string(layers) +
         " layer types");
  }
  std::vector<bool> sliding(types->size());
  for (size_t i = 0; i < types->size(); ++i) {
    const Json& t = (*types)[i];
    if (t != "full_attention" && t != "sliding_attention") {
      Fail(file.string() + ": layer_types[" + std::to_string(i) + "] " + t.dump() +
           " is neither \"full_attention\" nor \"sliding_attention\"");
    }
    sliding[i] = t == "sliding_attention";
  }
  return sliding;
}

Activation ParseActivation(const Json& value, const fs::path& file) {
  const std::string act = value.is_string() ? value.get<std::string>() : value.dump();
  if (act == "gelu") return Activation::kGeluErf;
  if (act == "gelu_new" || act == "gelu_pytorch_tanh" || act == "gelu_fast") {
    return Activation::kGeluTanh;
  }
  if (act == "relu") return Activation::kRelu;
  if (act == "silu" || act == "swish") return Activation::kSilu;
  Fail(file.string() + ": hidden_act \"" + act + "\" is not supported");
}

void ReadShape(const Json& j, const fs::path& file, EncoderConfig& c) {
  c.hidden = PositiveInt(j, "hidden_size", file);
  c.layers = PositiveInt(j, "num_hidden_layers", file);
  c.heads = PositiveInt(j, "num_attention_heads", file);
  c.intermediate = PositiveInt(j, "intermediate_size", file);
  c.vocab = PositiveInt(j, "vocab_size", file);
  c.max_pos = PositiveInt(j, "max_position_embeddings", file);
  // With an explicit head_dim (decoders), heads need not split hidden_size evenly: the
  // attention projections have their own width (heads x head_dim).
  if (j.find("head_dim") == j.end() && c.hidden % c.heads != 0) {
    Fail(file.string() + ": hidden_size " + std::to_string(c.hidden) +
         " is not divisible by num_attention_heads " + std::to_string(c.heads));
  }
}

void ReadLayerSettings(const Json& j, const fs::path& file, EncoderConfig& c) {
  ReadPositive(j, "layer_norm_eps", file, c.eps);
  if (auto it = j.find("hidden_act"); it != j.end()) c.act = ParseActivation(*it, file);
  if (IsSequenceClassifier(j)) c.labels = Labels(j, file);
}

void RequireAbsolutePositions(const Json& j, const fs::path& file) {
  if (auto it = j.find("position_embedding_type"); it != j.end() && *it != "absolute") {
    Fail(file.string() + ": position_embedding_type " + it->dump() + " is not supported");
  }
}

void UsePaddingPositions(int64_t pad, const fs::path& file, EncoderConfig& c) {
  c.pad_id = pad;
  c.position_offset = pad + 1;
  if (c.max_pos <= c.position_offset) {
    Fail(file.string() + ": max_position_embeddings " + std::to_string(c.max_pos) +
         " leaves no position after padding_idx " + std::to_string(pad));
  }
}

bool IsSequenceClassifier(const Json& config) {
  const auto it = config.find("architectures");
  if (it == config.end() || !it->is_array()) return false;
  for (const Json& a : *it) {
    if (a.is_string() && a.get<std::string>().ends_with("ForSequenceClassification")) return true;
  }
  return false;
}

std::vector<std::string> Labels(const Json& config, const fs::path& file) {
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
  const int64_t n = config.contains("num_labels") ? PositiveInt(config, "num_labels", file) : 2;
  for (int64_t i = 0; i < n; ++i) labels.push_back("LABEL_" + std::to_string(i));
  return labels;
}

}  // namespace ember::engine::config_json
