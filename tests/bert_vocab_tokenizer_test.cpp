// A BERT folder with only vocab.txt (and perhaps tokenizer_config.json), as HfTokenizer opens it
// (engine/tokenizer/hf_tokenizer.h): the tokenizer transformers makes of such a folder.
//
// The exactness tests compare against scripts/reference_tokenizer.py, an independent
// pure-Python re-implementation of transformers' BertTokenizer (standard library only), on
// tests/data/wordpiece_corpus.json plus 2,000 random texts, under six tokenizer_config.json
// settings, two of them with Python's per-word lowercasing (lowercase = "per-word",
// HfTokenizer::Options::final_sigma_per_word). tests/hf_tokenizer_test holds the same vocabulary
// as a tokenizer.json to HF tokenizers itself, offsets included.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/tokenizer/hf_tokenizer.h"
#include "tests/temp_dir.h"

namespace ember::engine {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

fs::path TestDataDir() { return EMBER_TOKENIZER_TESTDATA_DIR; }
fs::path VocabPath() { return TestDataDir() / "vocab.txt"; }

const Json& Reference() {
  static const Json ref = [] {
    std::ifstream in(TestDataDir() / "wordpiece_reference.json");
    return in ? Json::parse(in) : Json();
  }();
  return ref;
}

// Printable form of a text for failure messages.
std::string Escape(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out.size() > 200 ? out.substr(0, 200) + "..." : out;
}

std::string Pieces(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  std::string out;
  for (int32_t id : ids) {
    if (!out.empty()) out += ' ';
    out += tok.IdToToken(id);
  }
  return out;
}

void WriteFile(const fs::path& p, const std::string& data) {
  std::ofstream(p, std::ios::binary) << data;
}

// A folder holding the test vocab.txt and `config` as tokenizer_config.json.
class VocabFolder {
 public:
  explicit VocabFolder(const Json& config = Json::object()) {
    fs::copy_file(VocabPath(), dir_.path() / "vocab.txt");
    WriteFile(dir_.path() / "tokenizer_config.json", config.dump());
  }
  const fs::path& path() const { return dir_.path(); }
  std::unique_ptr<HfTokenizer> Open(HfTokenizer::Options options = {}) const {
    return HfTokenizer::FromDirectory(dir_.path(), options);
  }

 private:
  testing::TempDir dir_{"ember-vocab"};
};

// The ids without a limit, as the reference makes them.
std::vector<int32_t> Ids(const Tokenizer& tok, std::string_view text, bool truncate = false,
                         std::size_t max_length = 0) {
  return tok.Encode(text, {.truncate = truncate, .max_length = max_length}).ids;
}

class BertVocabTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(VocabPath())) << "missing " << VocabPath();
    ASSERT_TRUE(Reference().contains("cases")) << "missing or bad wordpiece_reference.json";
  }

  static std::unique_ptr<HfTokenizer> Uncased(std::size_t max_length = 0) {
    return VocabFolder().Open({.max_length = max_length});
  }
};

TEST_F(BertVocabTest, VocabularyHasWellKnownIds) {
  const auto tok = Uncased();
  EXPECT_EQ(tok->vocab_size(), 30522u);
  EXPECT_EQ(tok->TokenToId("[PAD]"), 0);
  EXPECT_EQ(tok->TokenToId("[UNK]"), 100);
  EXPECT_EQ(tok->TokenToId("[CLS]"), 101);
  EXPECT_EQ(tok->TokenToId("[SEP]"), 102);
  EXPECT_EQ(tok->TokenToId("[MASK]"), 103);
  EXPECT_EQ(tok->TokenToId("the"), 1996);
  EXPECT_EQ(tok->TokenToId("##s"), 2015);
  EXPECT_EQ(tok->IdToToken(7592), "hello");
  EXPECT_EQ(tok->IdToToken(-1), "");
  EXPECT_EQ(tok->IdToToken(30522), "");
  EXPECT_TRUE(tok->IsSpecial(101));
  EXPECT_FALSE(tok->IsSpecial(7592));
  EXPECT_EQ(Ids(*tok, "Hello, world!"), (std::vector<int32_t>{101, 7592, 1010, 2088, 999, 102}));
  EXPECT_EQ(tok->max_length(), 0u) << "no model_max_length: the model's limit decides";
}

// tokenizer_config.json's options (and the version's lowercase rule) for a reference config.
struct Setting {
  Json config;
  HfTokenizer::Options options;
};

Setting SettingOf(const Json& reference_config) {
  Setting s{Json::object(), {}};
  s.config["do_lower_case"] = reference_config.at("lowercase");
  if (!reference_config.at("strip_accents").is_null()) {
    s.config["strip_accents"] = reference_config["strip_accents"];
  }
  s.config["tokenize_chinese_chars"] = reference_config.at("tokenize_chinese_chars");
  const std::string rule = reference_config.value("lowercase_rule", "per_character");
  EXPECT_TRUE(rule == "per_character" || rule == "per_word") << rule;
  s.options.final_sigma_per_word = rule == "per_word";
  return s;
}

TEST_F(BertVocabTest, MatchesTransformers) {
  const Json& ref = Reference();
  ASSERT_GE(ref["cases"].size(), 40u);
  ASSERT_EQ(ref["configs"].size(), 6u);
  for (const auto& [name, config] : ref["configs"].items()) {
    SCOPED_TRACE("config " + name);
    const Setting setting = SettingOf(config);
    const auto tok = VocabFolder(setting.config).Open(setting.options);
    std::size_t checked = 0, failures = 0;
    for (const Json& c : ref["cases"]) {
      const std::string text = c["text"].get<std::string>();
      const auto want = c["ids"].at(name).get<std::vector<int32_t>>();
      const Encoding got = tok->Encode(text, {.truncate = false});
      EXPECT_FALSE(got.truncated);
      ++checked;
      if (got.ids != want && ++failures <= 10) {
        ADD_FAILURE() << "text: " << Escape(text) << "\n  want: " << Pieces(*tok, want)
                      << "\n  got:  " << Pieces(*tok, got.ids);
      }
    }
    EXPECT_EQ(failures, 0u) << "of " << checked << " texts";
  }
}

// Unicode's special casings. Expected strings are Python 3.11's str.lower() of each word;
// HF (transformers and tokenizers alike) lowercases one character at a time, which differs only
// in Final_Sigma (checked with the HF tokenizers library itself: BertNormalizer turns "ΣΑΣ"
// into "σασ").
TEST_F(BertVocabTest, SpecialCasings) {
  const VocabFolder keep_accents(Json{{"strip_accents", false}});  // marks compared too
  const auto word = keep_accents.Open({.final_sigma_per_word = true});
  const auto character = keep_accents.Open();
  // Lowercase input is left alone by both, so it names the expected ids.
  const auto same = [](const Tokenizer& tok, const std::string& text, const std::string& lowered) {
    EXPECT_EQ(Pieces(tok, Ids(tok, text)), Pieces(tok, Ids(tok, lowered)))
        << Escape(text) << " should lowercase to " << Escape(lowered);
  };
  // The same under both rules: no context involved.
  for (const Tokenizer* tok : {word.get(), character.get()}) {
    same(*tok, "\u0130", "i\u0307");  // İ: the one multi-character mapping
    same(*tok, "\u0130stanbul", "i\u0307stanbul");
    same(*tok, "\u212a\u2126\u212b", "k\u03c9\u00e5");  // Kelvin, Ohm, Angstrom signs
    same(*tok, "\u1e9e", "\u00df");                     // capital sharp s
    same(*tok, "\u01c4 \u01c5", "\u01c6 \u01c6");       // DŽ and its titlecase Dž
    same(*tok, "\u216b \u24b6", "\u217b \u24d0");       // Roman numeral, circled letter
    same(*tok, "\u03a3", "\u03c3");                     // a lone sigma is not final
    same(*tok, "1\u03a3", "1\u03c3");                   // nor one after a digit
  }
  // Final_Sigma: per word, a capital sigma that ends a word becomes ς.
  same(*word, "\u03a3\u0391\u03a3", "\u03c3\u03b1\u03c2");       // ΣΑΣ -> σας
  same(*character, "\u03a3\u0391\u03a3", "\u03c3\u03b1\u03c3");  // HF: σασ
  same(*word, "\u039f\u0394\u039f\u03a3 \u03a3\u0391\u03a3",
       "\u03bf\u03b4\u03bf\u03c2 \u03c3\u03b1\u03c2");                    // ΟΔΟΣ ΣΑΣ
  same(*word, "\u03a3\u0391\u03a3,", "\u03c3\u03b1\u03c2,");              // a comma ends the word
  same(*word, "\u03a3\u0391\u03a3.\u0391", "\u03c3\u03b1\u03c3.\u03b1");  // a period is
  same(*word, "\u0391\u03a3'\u0391", "\u03b1\u03c3'\u03b1");              // case-ignorable, as '
  same(*word, "\u0391\u03a3''", "\u03b1\u03c2''");
  same(*word, "\u0391\u03a3\u0301", "\u03b1\u03c2\u0301");  // marks are skipped
  same(*word, "\u0391\u03a31", "\u03b1\u03c21");            // a digit is not cased
  same(*word, "\u0391\u03a3\u03a3\u0391", "\u03b1\u03c3\u03c3\u03b1");
  same(*word, "\u0391\u03a3[SEP]", "\u03b1\u03c2[SEP]");    // a special token ends it
  same(*word, "\u0391\u03a3\u4e2d", "\u03b1\u03c2\u4e2d");  // so does an ideograph
  // Per-word lowercasing is refused where nothing lowercases.
  EXPECT_THROW(VocabFolder(Json{{"do_lower_case", false}}).Open({.final_sigma_per_word = true}),
               TokenizerError);
}

TEST_F(BertVocabTest, ChineseCharactersAreSingleTokens) {
  const auto tok = Uncased();
  const std::string text = "今天天气很好，我们去公园散步吧。";
  const std::vector<int32_t> ids = Ids(*tok, text);
  // 16 ideographs/punctuation marks -> 16 tokens, each the character itself or [UNK].
  ASSERT_EQ(ids.size(), 16u + 2u);
  std::size_t i = 1;
  for (std::size_t pos = 0; pos < text.size(); pos += 3, ++i) {  // All 3-byte characters.
    const auto id = tok->TokenToId(text.substr(pos, 3));
    EXPECT_EQ(ids[i], id.value_or(100)) << "character at byte " << pos;
  }
  // Ideographs glued to Latin text are split off as well.
  EXPECT_EQ(Pieces(*tok, Ids(*tok, "abc中文def")), "[CLS] abc 中 文 def [SEP]");
  // With tokenize_chinese_chars=false they stay inside the word and go through WordPiece.
  const auto no_cjk = VocabFolder(Json{{"tokenize_chinese_chars", false}}).Open();
  EXPECT_EQ(Pieces(*no_cjk, Ids(*no_cjk, "中文")), "[CLS] 中 ##文 [SEP]");
}

TEST_F(BertVocabTest, SpecialTokensInText) {
  const auto tok = Uncased();
  EXPECT_EQ(Pieces(*tok, Ids(*tok, "a [SEP] b[MASK]c")), "[CLS] a [SEP] b [MASK] c [SEP]");
  EXPECT_EQ(Pieces(*tok, Ids(*tok, "[sep]")), "[CLS] [ sep ] [SEP]");
}

TEST_F(BertVocabTest, LongWordsBecomeUnknown) {
  const auto tok = Uncased();
  const auto hundred = Ids(*tok, std::string(100, 'a'));  // Segmented normally.
  EXPECT_GT(hundred.size(), 3u);
  EXPECT_EQ(std::count(hundred.begin(), hundred.end(), 100), 0);
  EXPECT_EQ(Ids(*tok, std::string(101, 'a')), (std::vector<int32_t>{101, 100, 102}));
}

TEST_F(BertVocabTest, Truncation) {
  const auto tok = Uncased(16);
  std::string text;
  for (int i = 0; i < 40; ++i) text += "hello world ";
  const auto full = Ids(*Uncased(), text);
  ASSERT_EQ(full.size(), 82u);

  const Encoding cut = tok->Encode(text, {});
  EXPECT_TRUE(cut.truncated);
  ASSERT_EQ(cut.ids.size(), 16u);
  EXPECT_EQ(std::vector<int32_t>(cut.ids.begin(), cut.ids.end() - 1),
            std::vector<int32_t>(full.begin(), full.begin() + 15));
  EXPECT_EQ(cut.ids.back(), 102);
  // A call's limit cuts shorter, never longer than the tokenizer's own.
  EXPECT_EQ(tok->Encode(text, {.max_length = 8}).ids.size(), 8u);
  EXPECT_EQ(tok->Encode(text, {.max_length = 100}).ids.size(), 16u);

  try {
    tok->Encode(text, {.truncate = false});
    FAIL() << "expected kTooLong";
  } catch (const TokenizerError& e) {
    EXPECT_EQ(e.code(), TokenizerErrorCode::kTooLong);
  }

  // Exactly max_length ids: fits, not truncated. One more piece: too long.
  std::string fits;
  for (int i = 0; i < 7; ++i) fits += "hello world ";
  EXPECT_EQ(Ids(*tok, fits).size(), 16u);
  EXPECT_FALSE(tok->Encode(fits, {}).truncated);
  EXPECT_THROW(tok->Encode(fits + "x", {.truncate = false}), TokenizerError);
  EXPECT_TRUE(tok->Encode(fits + "x", {}).truncated);

  // Truncation in the middle of a word keeps the first pieces (HF truncates ids, not words).
  EXPECT_EQ(Pieces(*tok, Ids(*tok, "unaffable", true, 4)), "[CLS] una ##ffa [SEP]");

  // The reference's long texts, at 512.
  const auto def = Uncased(512);
  std::size_t long_texts = 0;
  for (const Json& c : Reference()["cases"]) {
    const auto want = c["ids"]["uncased"].get<std::vector<int32_t>>();
    if (want.size() <= 512) continue;
    ++long_texts;
    const Encoding got = def->Encode(c["text"].get<std::string>(), {});
    EXPECT_TRUE(got.truncated);
    ASSERT_EQ(got.ids.size(), 512u);
    EXPECT_TRUE(std::equal(got.ids.begin(), got.ids.end() - 1, want.begin()));
    EXPECT_EQ(got.ids.back(), 102);
  }
  EXPECT_GT(long_texts, 0u);
  // A limit that leaves no room beside [CLS] and [SEP].
  EXPECT_THROW(tok->Encode("a", {.max_length = 1}), TokenizerError);
}

TEST_F(BertVocabTest, InvalidUtf8IsRejected) {
  const auto tok = Uncased(8);
  const std::vector<std::string> bad = {
      "\x80",                            // Lone continuation byte.
      "abc\xbf def",                     // Continuation byte mid-text.
      "\xe4\xbd",                        // Truncated 3-byte sequence (end of text).
      "\xe4\xbd word",                   // Truncated 3-byte sequence (mid-text).
      "\xc0\xaf",                        // Overlong '/'.
      "\xe0\x80\xaf",                    // Overlong 3-byte.
      "\xf0\x80\x80\xaf",                // Overlong 4-byte.
      "\xed\xa0\x80",                    // Surrogate U+D800.
      "\xed\xbf\xbf",                    // Surrogate U+DFFF.
      "\xf4\x90\x80\x80",                // U+110000.
      "\xff",                            // Never valid.
      "\xfe\xff",                        // Never valid.
      "\xc3",                            // Truncated 2-byte.
      "\xf0\x9f\x98",                    // Truncated 4-byte (emoji).
      std::string(4000, 'a') + " \x80",  // Past the truncation point: still rejected.
  };
  for (const std::string& s : bad) {
    for (bool truncate : {true, false}) {
      try {
        tok->Encode(s, {.truncate = truncate});
        ADD_FAILURE() << "accepted " << Escape(s);
      } catch (const TokenizerError& e) {
        EXPECT_EQ(e.code(), TokenizerErrorCode::kBadUtf8) << Escape(s) << ": " << e.what();
      }
    }
  }
  // Boundary code points are fine.
  for (const char* ok : {"\x7f", "\xc2\x80", "\xdf\xbf", "\xe0\xa0\x80", "\xed\x9f\xbf",
                         "\xee\x80\x80", "\xef\xbf\xbf", "\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf"}) {
    EXPECT_NO_THROW(tok->Encode(ok, {.truncate = false})) << Escape(ok);
  }
}

TEST_F(BertVocabTest, RandomBytesNeverCrash) {
  const auto tok = Uncased(64);
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int> len(0, 64), byte(0, 255), small(0, 9);
  std::size_t ok = 0, rejected = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string s(len(rng), '\0');
    for (char& c : s) {
      // Bias towards ASCII and valid lead/continuation bytes so some inputs are valid.
      const int r = small(rng);
      c = static_cast<char>(r < 4   ? 0x20 + byte(rng) % 0x5F
                            : r < 7 ? 0x80 + byte(rng) % 0x40
                                    : byte(rng));
    }
    try {
      const Encoding e = tok->Encode(s, {.offsets = iter % 2 == 0});
      ASSERT_GE(e.ids.size(), 2u);
      ASSERT_LE(e.ids.size(), 64u);
      for (int32_t id : e.ids) ASSERT_TRUE(id >= 0 && static_cast<size_t>(id) < tok->vocab_size());
      ++ok;
    } catch (const TokenizerError& e) {
      ASSERT_EQ(e.code(), TokenizerErrorCode::kBadUtf8);
      ++rejected;
    }
  }
  EXPECT_GT(ok, 100u);
  EXPECT_GT(rejected, 100u);
}

std::vector<std::string> ReadLines(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// A tokenizer.json as HF tokenizers writes it for bert-base-uncased (trimmed to what matters).
Json MakeTokenizerJson(const std::vector<std::string>& vocab, bool lowercase) {
  Json v = Json::object();
  for (size_t i = 0; i < vocab.size(); ++i) v[vocab[i]] = i;
  Json added = Json::array();
  for (const char* s : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}) {
    added.push_back({{"id", v[s]},
                     {"content", s},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  }
  auto special = [&](const char* s) { return Json{{"SpecialToken", {{"id", s}, {"type_id", 0}}}}; };
  return Json{
      {"version", "1.0"},
      {"truncation",
       {{"direction", "Right"}, {"max_length", 512}, {"strategy", "LongestFirst"}, {"stride", 0}}},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer",
       {{"type", "BertNormalizer"},
        {"clean_text", true},
        {"handle_chinese_chars", true},
        {"strip_accents", nullptr},
        {"lowercase", lowercase}}},
      {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single",
         {special("[CLS]"), {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}, special("[SEP]")}},
        {"pair", Json::array()},
        {"special_tokens", Json::object()}}},
      {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
      {"model",
       {{"type", "WordPiece"},
        {"unk_token", "[UNK]"},
        {"continuing_subword_prefix", "##"},
        {"max_input_chars_per_word", 100},
        {"vocab", v}}},
  };
}

// The folder's tokenizer.json, when it has one, wins over its vocab.txt; both make the same ids.
TEST_F(BertVocabTest, TokenizerJsonMatchesVocabFile) {
  const auto vocab = ReadLines(VocabPath());
  for (bool lowercase : {true, false}) {
    SCOPED_TRACE(lowercase ? "uncased" : "cased");
    const VocabFolder folder(Json{{"do_lower_case", lowercase}});
    const auto from_vocab = folder.Open();
    WriteFile(folder.path() / "tokenizer.json", MakeTokenizerJson(vocab, lowercase).dump());
    const auto from_json = folder.Open();
    EXPECT_EQ(from_json->vocab_size(), vocab.size());
    EXPECT_EQ(from_json->max_length(), 0u) << "the file's truncation is not a limit";
    for (const Json& c : Reference()["cases"]) {
      const std::string text = c["text"].get<std::string>();
      ASSERT_EQ(Ids(*from_json, text), Ids(*from_vocab, text)) << Escape(text);
    }
    // The json's lowercase, not the config's, decides.
    WriteFile(folder.path() / "tokenizer.json", MakeTokenizerJson(vocab, !lowercase).dump());
    EXPECT_NE(Ids(*folder.Open(), "Hello"), Ids(*from_vocab, "Hello"));
  }
}

TEST_F(BertVocabTest, ModelMaxLengthFromTheConfig) {
  EXPECT_EQ(VocabFolder(Json{{"model_max_length", 128}}).Open()->max_length(), 128u);
  // transformers' "no limit" (1e30) is none; the options' limit wins over the config's.
  EXPECT_EQ(VocabFolder(Json::parse(R"({"model_max_length": 1000000000000000019884624838656})"))
                .Open()
                ->max_length(),
            0u);
  EXPECT_EQ(VocabFolder(Json{{"model_max_length", 128}}).Open({.max_length = 64})->max_length(),
            64u);
}

TEST_F(BertVocabTest, LoaderErrors) {
  testing::TempDir dir("ember-vocab-errors");
  const auto expect_code = [](TokenizerErrorCode code, auto&& fn) {
    try {
      fn();
      ADD_FAILURE() << "no exception, expected " << TokenizerErrorCodeName(code);
    } catch (const TokenizerError& e) {
      EXPECT_EQ(e.code(), code) << e.what();
    }
  };
  expect_code(TokenizerErrorCode::kIo, [&] { HfTokenizer::FromDirectory(dir.path()); });
  expect_code(TokenizerErrorCode::kIo, [&] { HfTokenizer::FromFile(dir.path() / "missing.json"); });
  WriteFile(dir.path() / "vocab.txt", "[PAD]\n[CLS]\n[SEP]\na\n");  // no [UNK]
  expect_code(TokenizerErrorCode::kBadConfig, [&] { HfTokenizer::FromDirectory(dir.path()); });
  WriteFile(dir.path() / "tokenizer_config.json", "{not json");
  expect_code(TokenizerErrorCode::kBadConfig, [&] { HfTokenizer::FromDirectory(dir.path()); });
  fs::remove(dir.path() / "tokenizer_config.json");

  const auto vocab = ReadLines(VocabPath());
  const auto expect_bad_json = [&](const Json& j, const std::string& named) {
    try {
      HfTokenizer::FromJsonText(j.dump(), "t.json");
      ADD_FAILURE() << "taken: " << named;
    } catch (const TokenizerError& e) {
      EXPECT_EQ(e.code(), TokenizerErrorCode::kBadConfig) << e.what();
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
    }
  };
  Json j = MakeTokenizerJson(vocab, true);
  j["model"]["type"] = "Bigram";
  expect_bad_json(j, "Bigram");
  j = MakeTokenizerJson(vocab, true);
  j["normalizer"] = {{"type", "Uppercase"}};
  expect_bad_json(j, "Uppercase");
  j = MakeTokenizerJson(vocab, true);
  j["pre_tokenizer"] = {{"type", "Mystery"}};
  expect_bad_json(j, "Mystery");
  j = MakeTokenizerJson(vocab, true);
  j["model"]["vocab"] = "not an object";
  expect_bad_json(j, "t.json");
  expect_code(TokenizerErrorCode::kBadConfig,
              [&] { HfTokenizer::FromJsonText("{not json", "t.json"); });
}

// A toy vocabulary, independent of generated data: the classic "unaffable" example.
TEST(BertVocabSmall, GreedyLongestMatchFirst) {
  testing::TempDir dir("ember-vocab-small");
  // CRLF and CR line endings too.
  WriteFile(dir.path() / "vocab.txt",
            "[PAD]\r\n[UNK]\r[CLS]\n[SEP]\nun\n##aff\n##able\nrunn\n##ing\n,\na\n##a\n##ff");
  const auto tok = HfTokenizer::FromDirectory(dir.path());
  EXPECT_EQ(tok->vocab_size(), 13u);
  EXPECT_EQ(Ids(*tok, "unaffable, running"), (std::vector<int32_t>{2, 4, 5, 6, 9, 7, 8, 3}));
  EXPECT_EQ(Ids(*tok, "unaffablex"), (std::vector<int32_t>{2, 1, 3}));  // No "##x".
  EXPECT_EQ(Ids(*tok, ""), (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(tok->Decode(Ids(*tok, "unaffable, running"), true), "unaffable, running");
}

TEST(BertVocabSmall, PairsAreCutLongestFirstAsHfTokenizers) {
  testing::TempDir dir("ember-vocab-pairs");
  // Ids: [PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, a 4, b 5. "a a a" is 3 pieces.
  WriteFile(dir.path() / "vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\na\nb\n");
  const auto tok = HfTokenizer::FromDirectory(dir.path(), {.max_length = 16});
  const auto words = [](const char* w, int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += std::string(i ? " " : "") + w;
    return s;
  };
  const Encoding whole = tok->EncodePair("a a", "b", {});
  EXPECT_EQ(whole.ids, (std::vector<int32_t>{2, 4, 4, 3, 5, 3}));
  EXPECT_EQ(whole.second_start, 4u);
  EXPECT_FALSE(whole.truncated);
  // (n1, n2, max_length) -> the pieces each keeps, as HF tokenizers' longest_first keeps them
  // (measured with tokenizers 0.23 on all-MiniLM-L6-v2's tokenizer.json over n1, n2 in 0..11,
  // max_length 8..12): the shorter keeps up to half of max_length - 3, the first on a tie.
  struct Case {
    int n1, n2;
    std::size_t max_length;
    std::size_t keep1, keep2;
  };
  for (const Case& c : std::vector<Case>{{3, 3, 8, 2, 3},
                                         {4, 3, 8, 3, 2},
                                         {9, 1, 8, 4, 1},
                                         {1, 9, 8, 1, 4},
                                         {6, 6, 11, 4, 4},
                                         {2, 2, 11, 2, 2},
                                         {0, 9, 9, 0, 6}}) {
    SCOPED_TRACE(::testing::Message() << c.n1 << " " << c.n2 << " " << c.max_length);
    const Encoding p =
        tok->EncodePair(words("a", c.n1), words("b", c.n2), {.max_length = c.max_length});
    EXPECT_EQ(p.ids.size(), c.keep1 + c.keep2 + 3);
    EXPECT_EQ(std::count(p.ids.begin(), p.ids.end(), 4), static_cast<long>(c.keep1));
    EXPECT_EQ(std::count(p.ids.begin(), p.ids.end(), 5), static_cast<long>(c.keep2));
    EXPECT_EQ(p.second_start, c.keep1 + 2);
    EXPECT_EQ(p.truncated, static_cast<std::size_t>(c.n1 + c.n2) + 3 > c.max_length);
  }
  // max_length above the tokenizer's own is the tokenizer's (16).
  EXPECT_EQ(tok->EncodePair(words("a", 20), words("b", 20), {.max_length = 100}).ids.size(), 16u);
  try {
    tok->EncodePair(words("a", 7), words("b", 7), {.truncate = false});
    FAIL() << "no kTooLong";
  } catch (const TokenizerError& e) {
    EXPECT_EQ(e.code(), TokenizerErrorCode::kTooLong);
  }
  EXPECT_THROW(tok->EncodePair("a", "\xff", {}), TokenizerError);  // bad UTF-8 in the second
}

// One tokenizer, four threads (its word cache shared, its buffers per thread): each text's ids
// as on one thread.
TEST_F(BertVocabTest, ConcurrentEncodeIsConsistent) {
  const auto tok = Uncased(512);
  std::vector<std::string> texts;
  std::vector<std::vector<int32_t>> want;
  for (const Json& c : Reference()["cases"]) {
    texts.push_back(c["text"].get<std::string>());
    want.push_back(Ids(*tok, texts.back(), true));
  }
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 3; ++round) {
        for (size_t i = 0; i < texts.size(); ++i) {
          if (Ids(*tok, texts[i], true) != want[i]) ++mismatches[t];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

}  // namespace
}  // namespace ember::engine
