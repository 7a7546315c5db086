#include "fuzz/tokenizer_pipelines.h"

#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

namespace ember::fuzz {
namespace {

using Json = nlohmann::json;

Json Added(int id, std::string_view content) {
  return {{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
          {"rstrip", false}, {"normalized", false}, {"special", true}};
}

Json Special(std::string_view token, int type_id = 0) {
  return {{"SpecialToken", {{"id", token}, {"type_id", type_id}}}};
}
Json Sequence(std::string_view id, int type_id) {
  return {{"Sequence", {{"id", id}, {"type_id", type_id}}}};
}

Json Template(Json single, Json pair, const std::vector<std::pair<std::string, int>>& specials) {
  Json map = Json::object();
  for (const auto& [token, id] : specials) {
    map[token] = {{"id", token}, {"ids", {id}}, {"tokens", {token}}};
  }
  return {{"type", "TemplateProcessing"},
          {"single", std::move(single)},
          {"pair", std::move(pair)},
          {"special_tokens", map}};
}

// A character's UTF-8.
std::string Utf8(char32_t c) {
  std::string out;
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
  return out;
}

Json Bert() {
  std::vector<std::string> tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  for (char c = 'a'; c <= 'z'; ++c) {
    tokens.emplace_back(1, c);
    tokens.push_back(std::string("##") + c);
  }
  for (char c = '0'; c <= '9'; ++c) tokens.emplace_back(1, c);
  for (const char* w :
       {"hello", "world", "##ing", "##ed", "em", "##bed", "un",   "##aff", "##able",
        ".",     ",",     "!",     "?",    "'",  "-",     "(",    ")",     "[",
        "]",     "你",    "好",    "世",   "界", "é",     "café", "naïve", "straße"}) {
    tokens.emplace_back(w);
  }
  Json vocab = Json::object();
  for (std::size_t i = 0; i < tokens.size(); ++i) vocab[tokens[i]] = i;
  return {{"version", "1.0"},
          {"added_tokens",
           {Added(0, "[PAD]"), Added(1, "[UNK]"), Added(2, "[CLS]"), Added(3, "[SEP]"),
            Added(4, "[MASK]")}},
          {"normalizer",
           {{"type", "BertNormalizer"},
            {"clean_text", true},
            {"handle_chinese_chars", true},
            {"strip_accents", nullptr},
            {"lowercase", true}}},
          {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
          {"model",
           {{"type", "WordPiece"},
            {"unk_token", "[UNK]"},
            {"continuing_subword_prefix", "##"},
            {"max_input_chars_per_word", 100},
            {"vocab", vocab}}},
          {"post_processor", Template({Special("[CLS]"), Sequence("A", 0), Special("[SEP]")},
                                      {Special("[CLS]"), Sequence("A", 0), Special("[SEP]"),
                                       Sequence("B", 1), Special("[SEP]", 1)},
                                      {{"[CLS]", 2}, {"[SEP]", 3}})},
          {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}}};
}

Json ByteLevel() {
  // GPT-2's alphabet: printable bytes as themselves, the others from U+0100 on.
  Json vocab = Json::object();
  std::vector<std::string> alphabet;
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    alphabet.push_back(Utf8(printable ? static_cast<char32_t>(b) : next++));
    vocab[alphabet.back()] = b;
  }
  const std::string space = alphabet[' '];
  const std::vector<std::pair<std::string, std::string>> merges = {
      {space, "t"},          {"h", "e"}, {space + "t", "he"}, {"i", "n"},
      {space, "w"},          {"o", "r"}, {"l", "d"},          {space + "w", "or"},
      {space + "wor", "ld"}, {"in", "g"}};
  Json merge_list = Json::array();
  int id = 256;
  for (const auto& [a, b] : merges) {
    merge_list.push_back({a, b});
    vocab[a + b] = id++;
  }
  return {{"version", "1.0"},
          {"added_tokens", {Added(id, "<|endoftext|>")}},
          {"normalizer", nullptr},
          {"pre_tokenizer",
           {{"type", "Sequence"},
            {"pretokenizers",
             {{{"type", "Split"},
               {"pattern",
                {{"Regex",
                  "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|"
                  "\\s+(?!\\S)|\\s+"}}},
               {"behavior", "Isolated"},
               {"invert", false}},
              {{"type", "ByteLevel"},
               {"add_prefix_space", false},
               {"trim_offsets", false},
               {"use_regex", false}}}}}},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", nullptr},
            {"continuing_subword_prefix", nullptr},
            {"end_of_word_suffix", nullptr},
            {"fuse_unk", false},
            {"byte_fallback", false},
            {"ignore_merges", false},
            {"vocab", vocab},
            {"merges", merge_list}}},
          {"post_processor",
           {{"type", "ByteLevel"},
            {"add_prefix_space", false},
            {"trim_offsets", true},
            {"use_regex", false}}},
          {"decoder",
           {{"type", "ByteLevel"},
            {"add_prefix_space", false},
            {"trim_offsets", false},
            {"use_regex", false}}}};
}

Json Unigram() {
  Json vocab = Json::array({{"<s>", 0.0}, {"<pad>", 0.0}, {"</s>", 0.0}, {"<unk>", 0.0}});
  double score = -2;
  for (const char* piece : {"▁", "▁hello", "▁world", "ing", "ed", ",", ".", "!", "▁你", "好", "é",
                            "▁the", "▁em", "bed"}) {
    vocab.push_back({piece, score});
    score -= 0.25;
  }
  for (char c = 'a'; c <= 'z'; ++c) vocab.push_back({std::string(1, c), -8.0});
  return {
      {"version", "1.0"},
      {"added_tokens", {Added(0, "<s>"), Added(1, "<pad>"), Added(2, "</s>"), Added(3, "<unk>")}},
      {"normalizer",
       {{"type", "Sequence"},
        {"normalizers",
         {{{"type", "NFKC"}},
          {{"type", "Replace"}, {"pattern", {{"Regex", " {2,}"}}}, {"content", " "}}}}}},
      {"pre_tokenizer",
       {{"type", "Metaspace"},
        {"replacement", "▁"},
        {"prepend_scheme", "always"},
        {"split", true}}},
      {"model", {{"type", "Unigram"}, {"unk_id", 3}, {"vocab", vocab}, {"byte_fallback", false}}},
      {"post_processor", Template({Special("<s>"), Sequence("A", 0), Special("</s>")},
                                  {Special("<s>"), Sequence("A", 0), Special("</s>"),
                                   Special("</s>"), Sequence("B", 0), Special("</s>")},
                                  {{"<s>", 0}, {"</s>", 2}})},
      {"decoder",
       {{"type", "Metaspace"},
        {"replacement", "▁"},
        {"prepend_scheme", "always"},
        {"split", true}}}};
}

Json SentencePieceBpe() {
  Json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
  int id = 3;
  char hex[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(hex, sizeof hex, "<0x%02X>", b);
    vocab[hex] = id++;
  }
  vocab["▁"] = id++;
  for (char c = 'a'; c <= 'z'; ++c) vocab[std::string(1, c)] = id++;
  const std::vector<std::pair<std::string, std::string>> merges = {
      {"▁", "h"}, {"e", "l"}, {"l", "o"},   {"▁h", "el"}, {"▁hel", "lo"},
      {"▁", "w"}, {"o", "r"}, {"▁w", "or"}, {"l", "d"},   {"▁wor", "ld"}};
  Json merge_list = Json::array();
  for (const auto& [a, b] : merges) {
    merge_list.push_back(a + " " + b);
    if (!vocab.contains(a + b)) vocab[a + b] = id++;
  }
  return {{"version", "1.0"},
          {"added_tokens", {Added(0, "<unk>"), Added(1, "<s>"), Added(2, "</s>")}},
          {"normalizer",
           {{"type", "Sequence"},
            {"normalizers",
             {{{"type", "Prepend"}, {"prepend", "▁"}},
              {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "▁"}}}}}},
          {"pre_tokenizer", nullptr},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", "<unk>"},
            {"continuing_subword_prefix", nullptr},
            {"end_of_word_suffix", nullptr},
            {"fuse_unk", true},
            {"byte_fallback", true},
            {"ignore_merges", false},
            {"vocab", vocab},
            {"merges", merge_list}}},
          {"post_processor",
           Template({Special("<s>"), Sequence("A", 0)},
                    {Special("<s>"), Sequence("A", 0), Special("<s>", 1), Sequence("B", 1)},
                    {{"<s>", 1}})},
          {"decoder",
           {{"type", "Sequence"},
            {"decoders",
             {{{"type", "Replace"}, {"pattern", {{"String", "▁"}}}, {"content", " "}},
              {{"type", "ByteFallback"}},
              {{"type", "Fuse"}},
              {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}}};
}

}  // namespace

std::string PipelineJson(Pipeline pipeline) {
  switch (pipeline) {
    case Pipeline::kBert:
      return Bert().dump();
    case Pipeline::kByteLevel:
      return ByteLevel().dump();
    case Pipeline::kUnigram:
      return Unigram().dump();
    case Pipeline::kSentencePieceBpe:
      return SentencePieceBpe().dump();
  }
  return {};
}

}  // namespace ember::fuzz
