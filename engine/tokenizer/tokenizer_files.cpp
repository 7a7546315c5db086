// The WordPiece tokenizer's loaders: vocab.txt, HF tokenizer.json, and a model folder.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "engine/tokenizer/wordpiece_spec.h"
#include "engine/tokenizer/wordpiece_tokenizer.h"

namespace ember::engine {
namespace {

using Json = nlohmann::json;

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw TokenizerError(TokenizerErrorCode::kIo, "cannot open " + path.string());
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw TokenizerError(TokenizerErrorCode::kIo, "cannot read " + path.string());
  return std::move(ss).str();
}

Json ReadJson(const std::filesystem::path& path) {
  try {
    return Json::parse(ReadFile(path));
  } catch (const Json::exception& e) {
    BadConfig(path.string() + ": invalid JSON: " + e.what());
  }
}

}  // namespace

WordPieceTokenizer WordPieceTokenizer::FromVocabFile(const std::filesystem::path& vocab_txt,
                                                     const TokenizerOptions& options) {
  const std::string data = ReadFile(vocab_txt);
  std::vector<std::string> tokens;
  tokens.reserve(data.size() / 8);
  // One token per line; "\n", "\r\n" and "\r" all end a line (Python's universal newlines).
  for (size_t i = 0; i < data.size();) {
    size_t end = data.find_first_of("\r\n", i);
    if (end == std::string::npos) end = data.size();
    tokens.emplace_back(data, i, end - i);
    i = end + 1;
    if (end + 1 < data.size() && data[end] == '\r' && data[end + 1] == '\n') ++i;
  }
  return FromTokens(std::move(tokens), options);
}

WordPieceTokenizer WordPieceTokenizer::FromTokenizerJson(const std::filesystem::path& path) {
  const Json j = ReadJson(path);
  const std::string where = path.string() + ": ";
  WordPieceSpec spec;
  try {
    const Json& model = j.at("model");
    if (model.value("type", "") != "WordPiece") BadConfig(where + "model.type is not WordPiece");
    spec.unk = model.value("unk_token", "[UNK]");
    spec.continuing_prefix = model.value("continuing_subword_prefix", "##");
    spec.max_input_chars_per_word =
        model.value("max_input_chars_per_word", size_t{kMaxInputCharsPerWord});
    const Json& vocab = model.at("vocab");
    if (!vocab.is_object() || vocab.empty()) BadConfig(where + "model.vocab must be an object");
    for (const auto& [tok, id_json] : vocab.items()) {
      const int64_t id = id_json.get<int64_t>();
      if (id < 0 || id > INT32_MAX) BadConfig(where + "bad id for token '" + tok + "'");
      const auto at = static_cast<size_t>(id);
      if (at >= spec.tokens.size()) spec.tokens.resize(at + 1);
      if (!spec.tokens[at].empty()) BadConfig(where + "id " + std::to_string(id) + " used twice");
      spec.tokens[at] = tok;
    }

    const Json& norm = j.at("normalizer");
    if (!norm.is_object() || norm.value("type", "") != "BertNormalizer") {
      BadConfig(where + "normalizer must be BertNormalizer");
    }
    if (!norm.value("clean_text", true)) BadConfig(where + "clean_text=false is not supported");
    spec.options.lowercase = norm.value("lowercase", true);
    spec.options.tokenize_chinese_chars = norm.value("handle_chinese_chars", true);
    if (norm.contains("strip_accents") && !norm["strip_accents"].is_null()) {
      spec.options.strip_accents = norm["strip_accents"].get<bool>();
    }

    const Json& pre = j.at("pre_tokenizer");
    if (!pre.is_object() || pre.value("type", "") != "BertPreTokenizer") {
      BadConfig(where + "pre_tokenizer must be BertPreTokenizer");
    }

    const Json& post = j.at("post_processor");
    const std::string post_type = post.is_object() ? post.value("type", "") : "";
    if (post_type == "BertProcessing") {
      spec.cls = post.at("cls").at(0).get<std::string>();
      spec.sep = post.at("sep").at(0).get<std::string>();
    } else if (post_type == "TemplateProcessing") {
      // Only "$A" framed by one special token on each side: [CLS] $A [SEP].
      const Json& single = post.at("single");
      if (single.size() != 3 || !single[0].contains("SpecialToken") ||
          !single[1].contains("Sequence") || !single[2].contains("SpecialToken")) {
        BadConfig(where + "post_processor template must be <special> $A <special>");
      }
      spec.cls = single[0]["SpecialToken"].at("id").get<std::string>();
      spec.sep = single[2]["SpecialToken"].at("id").get<std::string>();
    } else {
      BadConfig(where + "post_processor must be BertProcessing or TemplateProcessing");
    }

    if (j.contains("padding") && j["padding"].is_object()) {
      spec.pad = j["padding"].value("pad_token", spec.pad);
    }
    if (j.contains("truncation") && j["truncation"].is_object()) {
      const Json& t = j["truncation"];
      if (t.value("direction", "Right") != "Right") {
        BadConfig(where + "only right truncation is supported");
      }
      spec.options.max_length = t.at("max_length").get<size_t>();
    }

    spec.specials.clear();
    if (j.contains("added_tokens")) {
      for (const Json& added : j.at("added_tokens")) {
        const std::string content = added.at("content").get<std::string>();
        const int64_t id = added.at("id").get<int64_t>();
        if (id < 0 || static_cast<size_t>(id) >= spec.tokens.size() ||
            spec.tokens[static_cast<size_t>(id)] != content) {
          BadConfig(where + "added token '" + content + "' is not in the WordPiece vocab");
        }
        if (added.value("special", false)) spec.specials.push_back(content);
      }
    }
  } catch (const Json::exception& e) {
    BadConfig(where + e.what());
  }
  return FromSpec(std::move(spec));
}

WordPieceTokenizer WordPieceTokenizer::FromDirectory(const std::filesystem::path& dir) {
  // tokenizer_config.json: model_max_length is what HF truncates to. Transformers writes a huge
  // sentinel (1e30) when unknown; ignore implausible values.
  std::optional<size_t> model_max_length;
  Json config;
  const auto config_path = dir / "tokenizer_config.json";
  if (std::filesystem::exists(config_path)) {
    config = ReadJson(config_path);
    if (config.contains("model_max_length") && config["model_max_length"].is_number()) {
      const double v = config["model_max_length"].get<double>();
      if (v >= 2 && v <= 1'000'000) model_max_length = static_cast<size_t>(v);
    }
  }

  if (std::filesystem::exists(dir / "tokenizer.json")) {
    WordPieceTokenizer tok = FromTokenizerJson(dir / "tokenizer.json");
    // Rebuilt with the new max_length; cheap relative to loading and keeps Impl immutable.
    return model_max_length ? tok.WithMaxLength(*model_max_length) : tok;
  }

  TokenizerOptions options;
  try {
    if (config.is_object()) {
      options.lowercase = config.value("do_lower_case", options.lowercase);
      options.tokenize_chinese_chars =
          config.value("tokenize_chinese_chars", options.tokenize_chinese_chars);
      if (config.contains("strip_accents") && !config["strip_accents"].is_null()) {
        options.strip_accents = config["strip_accents"].get<bool>();
      }
    }
  } catch (const Json::exception& e) {
    BadConfig(config_path.string() + ": " + e.what());
  }
  if (model_max_length) options.max_length = *model_max_length;
  return FromVocabFile(dir / "vocab.txt", options);
}

}  // namespace ember::engine
