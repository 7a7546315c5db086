#include "engine/encoder/sentence_transformers_config.h"

#include <fstream>
#include <stdexcept>
#include <vector>

#include "engine/encoder/config_json.h"

namespace ember::engine {
namespace {

namespace fs = std::filesystem;
using config_json::Fail;
using config_json::Json;
using config_json::Read;

void ParsePoolingConfig(const fs::path& file, SentenceTransformersConfig& st) {
  const Json j = Read(file);
  if (!j.is_object()) Fail(file.string() + ": not a JSON object");
  std::vector<std::string> on;
  for (const auto& [k, v] : j.items()) {
    if (k.rfind("pooling_mode_", 0) == 0 && v.is_boolean() && v.get<bool>()) on.push_back(k);
  }
  if (on.size() == 1 && on[0] == "pooling_mode_mean_tokens") {
    st.pooling = Pooling::kMean;
  } else if (on.size() == 1 && on[0] == "pooling_mode_cls_token") {
    st.pooling = Pooling::kCls;
  } else if (on.size() == 1 && on[0] == "pooling_mode_lasttoken") {
    st.pooling = Pooling::kLastToken;
  } else {
    std::string modes;
    for (const auto& m : on) modes += (modes.empty() ? "" : ", ") + m;
    st.pooling_problem = file.string() + " asks for pooling {" + modes +
                         "}; only exactly one of pooling_mode_mean_tokens / "
                         "pooling_mode_cls_token / pooling_mode_lasttoken is supported (pass an "
                         "explicit pooling option "
                         "to override)";
  }
}

}  // namespace

SentenceTransformersConfig ParseSentenceTransformers(const fs::path& dir) {
  SentenceTransformersConfig st;
  st.transformer_dir = dir;
  fs::path pooling_file;
  const fs::path modules = dir / "modules.json";
  if (fs::exists(modules)) {
    const Json j = Read(modules);
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
        // Normalisation is controlled by EncoderOptions::normalize.
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
      const Json j = Read(p);
      if (j.is_object() && j.contains("max_seq_length")) {
        st.max_seq_length = config_json::PositiveInt(j, "max_seq_length", p);
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
  const Json config = Json::parse(in, nullptr, /*allow_exceptions=*/false);
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
