// Tests for ember::engine::WordPieceTokenizer.
//
// The exactness tests compare against scripts/reference_tokenizer.py (an independent pure-Python
// re-implementation of HF BertTokenizer). They need a generated test-data directory with
//   vocab.txt                  scripts/fetch_vocab.sh DIR            (bert-base-uncased)
//   wordpiece_reference.json   scripts/reference_tokenizer.py --vocab DIR/vocab.txt
//                                --corpus tests/data/wordpiece_corpus.json
//                                --out DIR/wordpiece_reference.json --random-cases 2000
// The directory is taken from the environment variable EMBER_TOKENIZER_TESTDATA if set, else
// from the compile definition EMBER_TOKENIZER_TESTDATA_DIR (set by CMake to the build tree).

#include "engine/tokenizer/wordpiece_tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace ember::engine {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

fs::path TestDataDir() {
  if (const char* env = std::getenv("EMBER_TOKENIZER_TESTDATA"); env && *env) return env;
#ifdef EMBER_TOKENIZER_TESTDATA_DIR
  return EMBER_TOKENIZER_TESTDATA_DIR;
#else
  return {};
#endif
}

fs::path VocabPath() { return TestDataDir() / "vocab.txt"; }

const Json& Reference() {
  static const Json* ref = [] {
    std::ifstream in(TestDataDir() / "wordpiece_reference.json");
    if (!in) return new Json();
    return new Json(Json::parse(in));
  }();
  return *ref;
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

std::string Pieces(const WordPieceTokenizer& tok, const std::vector<int32_t>& ids) {
  std::string out;
  for (int32_t id : ids) {
    if (!out.empty()) out += ' ';
    out += tok.IdToToken(id);
  }
  return out;
}

TokenizerOptions OptionsFromReference(const Json& config) {
  TokenizerOptions o;
  o.lowercase = config.at("lowercase").get<bool>();
  if (!config.at("strip_accents").is_null()) o.strip_accents = config["strip_accents"].get<bool>();
  o.tokenize_chinese_chars = config.at("tokenize_chinese_chars").get<bool>();
  const std::string rule = config.value("lowercase_rule", "per_character");
  EXPECT_TRUE(rule == "per_character" || rule == "per_word") << rule;
  o.lowercase_rule = rule == "per_word" ? LowercaseRule::kPerWord : LowercaseRule::kPerCharacter;
  o.max_length = 1 << 20;  // The reference never truncates.
  return o;
}

class TokenizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(VocabPath()))
        << "missing " << VocabPath() << "; set EMBER_TOKENIZER_TESTDATA (see top of file)";
    ASSERT_TRUE(Reference().contains("cases")) << "missing or bad wordpiece_reference.json";
  }

  static WordPieceTokenizer Uncased(size_t max_length = 512) {
    TokenizerOptions o;
    o.max_length = max_length;
    return WordPieceTokenizer::FromVocabFile(VocabPath(), o);
  }

  // Expects `a` and `b` to produce identical ids for every reference text.
  static void ExpectSameOnCorpus(const WordPieceTokenizer& a, const WordPieceTokenizer& b) {
    for (const Json& c : Reference()["cases"]) {
      const std::string text = c["text"].get<std::string>();
      ASSERT_EQ(a.Encode(text, true).ids, b.Encode(text, true).ids) << Escape(text);
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Exactness against the Python reference.

TEST_F(TokenizerTest, VocabularyHasWellKnownIds) {
  const WordPieceTokenizer tok = Uncased();
  EXPECT_EQ(tok.vocab_size(), 30522u);
  EXPECT_EQ(tok.pad_id(), 0);
  EXPECT_EQ(tok.unk_id(), 100);
  EXPECT_EQ(tok.cls_id(), 101);
  EXPECT_EQ(tok.sep_id(), 102);
  EXPECT_EQ(tok.TokenToId("[MASK]"), 103);
  EXPECT_EQ(tok.TokenToId("the"), 1996);
  EXPECT_EQ(tok.TokenToId("##s"), 2015);
  EXPECT_EQ(tok.IdToToken(7592), "hello");
  EXPECT_EQ(tok.IdToToken(-1), "");
  EXPECT_EQ(tok.IdToToken(30522), "");
  EXPECT_EQ(tok.Encode("Hello, world!", false).ids,
            (std::vector<int32_t>{101, 7592, 1010, 2088, 999, 102}));
}

TEST_F(TokenizerTest, MatchesPythonReference) {
  const Json& ref = Reference();
  ASSERT_GE(ref["cases"].size(), 40u);
  for (const auto& [name, config] : ref["configs"].items()) {
    SCOPED_TRACE("config " + name);
    const WordPieceTokenizer tok =
        WordPieceTokenizer::FromVocabFile(VocabPath(), OptionsFromReference(config));
    size_t checked = 0, failures = 0;
    for (const Json& c : ref["cases"]) {
      const std::string text = c["text"].get<std::string>();
      const auto want = c["ids"].at(name).get<std::vector<int32_t>>();
      const Encoding got = tok.Encode(text, false);
      EXPECT_FALSE(got.truncated);
      ++checked;
      if (got.ids != want && ++failures <= 10) {
        ADD_FAILURE() << "text: " << Escape(text) << "\n  want: " << Pieces(tok, want)
                      << "\n  got:  " << Pieces(tok, got.ids);
      }
    }
    EXPECT_EQ(failures, 0u) << "of " << checked << " texts";
  }
}

// EncodeWithOffsets (TEI's /tokenize; its offsets are held to HF tokenizers' by
// python/tests/test_openai_compat.py): the same ids as Encode under every reference
// configuration, and spans that lie inside the text, in order, each covering what its piece
// came from.
TEST_F(TokenizerTest, OffsetsComeWithEncodesIds) {
  const Json& ref = Reference();
  for (const auto& [name, config] : ref["configs"].items()) {
    SCOPED_TRACE("config " + name);
    const WordPieceTokenizer tok =
        WordPieceTokenizer::FromVocabFile(VocabPath(), OptionsFromReference(config));
    TokenizerOptions short_options = OptionsFromReference(config);
    short_options.max_length = 16;
    const WordPieceTokenizer short_tok =
        WordPieceTokenizer::FromVocabFile(VocabPath(), short_options);
    for (const Json& c : ref["cases"]) {
      const std::string text = c["text"].get<std::string>();
      for (const bool truncate : {true, false}) {
        // Truncated: cut to 16 as a tokenizer of max_length 16 cuts.
        const OffsetEncoding got = tok.EncodeWithOffsets(text, truncate, truncate ? 16 : 0);
        ASSERT_EQ(got.ids,
                  (truncate ? short_tok.Encode(text, true).ids : tok.Encode(text, false).ids))
            << Escape(text);
        ASSERT_EQ(got.spans.size(), got.ids.size());
        EXPECT_EQ(got.spans.front().stop, 0u);  // [CLS] and [SEP]: from nowhere
        EXPECT_EQ(got.spans.back().stop, 0u);
        uint32_t last_start = 0;
        for (size_t i = 1; i + 1 < got.spans.size(); ++i) {
          const TokenSpan span = got.spans[i];
          EXPECT_LT(span.start, span.stop) << Escape(text) << " token " << i;
          EXPECT_LE(span.stop, text.size()) << Escape(text);
          EXPECT_GE(span.start, last_start) << Escape(text) << " token " << i;
          last_start = span.start;
        }
      }
    }
  }
  // By hand: lowercased and accent-stripped characters whole, word pieces within a word, a
  // special token as written.
  const OffsetEncoding e = Uncased().EncodeWithOffsets("Café unaffable [SEP]", false);
  std::vector<std::pair<uint32_t, uint32_t>> spans;
  for (const TokenSpan& span : e.spans) spans.emplace_back(span.start, span.stop);
  EXPECT_EQ(Pieces(Uncased(), e.ids), "[CLS] cafe una ##ffa ##ble [SEP] [SEP]");
  EXPECT_EQ(spans, (std::vector<std::pair<uint32_t, uint32_t>>{
                       {0, 0}, {0, 5}, {6, 9}, {9, 12}, {12, 15}, {16, 21}, {0, 0}}));
}

// Unicode's special casings. Expected strings are Python 3.11's str.lower() of each word;
// HF (transformers and tokenizers alike) lowercases one character at a time, which differs only
// in Final_Sigma (checked with the HF tokenizers library itself: BertNormalizer turns "ΣΑΣ"
// into "σασ").
TEST_F(TokenizerTest, SpecialCasings) {
  TokenizerOptions per_word;
  per_word.lowercase_rule = LowercaseRule::kPerWord;
  per_word.strip_accents = false;  // keep the marks, so that they are compared too
  TokenizerOptions per_character = per_word;
  per_character.lowercase_rule = LowercaseRule::kPerCharacter;
  const auto word = WordPieceTokenizer::FromVocabFile(VocabPath(), per_word);
  const auto character = WordPieceTokenizer::FromVocabFile(VocabPath(), per_character);
  // Lowercase input is left alone by both, so it names the expected ids.
  const auto same = [](const WordPieceTokenizer& tok, const std::string& text,
                       const std::string& lowered) {
    EXPECT_EQ(Pieces(tok, tok.Encode(text, false).ids), Pieces(tok, tok.Encode(lowered, false).ids))
        << Escape(text) << " should lowercase to " << Escape(lowered);
  };
  // The same under both rules: no context involved.
  for (const auto* tok : {&word, &character}) {
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
  same(word, "\u03a3\u0391\u03a3", "\u03c3\u03b1\u03c2");       // ΣΑΣ -> σας
  same(character, "\u03a3\u0391\u03a3", "\u03c3\u03b1\u03c3");  // HF: σασ
  same(word, "\u039f\u0394\u039f\u03a3 \u03a3\u0391\u03a3",
       "\u03bf\u03b4\u03bf\u03c2 \u03c3\u03b1\u03c2");                   // ΟΔΟΣ ΣΑΣ
  same(word, "\u03a3\u0391\u03a3,", "\u03c3\u03b1\u03c2,");              // a comma ends the word
  same(word, "\u03a3\u0391\u03a3.\u0391", "\u03c3\u03b1\u03c3.\u03b1");  // a period is
  same(word, "\u0391\u03a3'\u0391", "\u03b1\u03c3'\u03b1");              // case-ignorable, as is '
  same(word, "\u0391\u03a3''", "\u03b1\u03c2''");
  same(word, "\u0391\u03a3\u0301", "\u03b1\u03c2\u0301");  // marks are skipped
  same(word, "\u0391\u03a31", "\u03b1\u03c21");            // a digit is not cased
  same(word, "\u0391\u03a3\u03a3\u0391", "\u03b1\u03c3\u03c3\u03b1");
  same(word, "\u0391\u03a3[SEP]", "\u03b1\u03c2[SEP]");    // a special token ends it
  same(word, "\u0391\u03a3\u4e2d", "\u03b1\u03c2\u4e2d");  // so does an ideograph
}

TEST_F(TokenizerTest, ChineseCharactersAreSingleTokens) {
  const WordPieceTokenizer tok = Uncased();
  const std::string text = "今天天气很好，我们去公园散步吧。";
  const Encoding enc = tok.Encode(text, false);
  // 16 ideographs/punctuation marks -> 16 tokens, each the character itself or [UNK].
  ASSERT_EQ(enc.ids.size(), 16u + 2u);
  size_t i = 1;
  for (size_t pos = 0; pos < text.size(); pos += 3, ++i) {  // All 3-byte characters.
    const auto id = tok.TokenToId(text.substr(pos, 3));
    EXPECT_EQ(enc.ids[i], id.value_or(tok.unk_id())) << "character at byte " << pos;
  }
  // Ideographs glued to Latin text are split off as well.
  EXPECT_EQ(Pieces(tok, tok.Encode("abc中文def", false).ids), "[CLS] abc 中 文 def [SEP]");
  // With tokenize_chinese_chars=false they stay inside the word and go through WordPiece.
  TokenizerOptions o;
  o.tokenize_chinese_chars = false;
  const auto no_cjk = WordPieceTokenizer::FromVocabFile(VocabPath(), o);
  EXPECT_EQ(Pieces(no_cjk, no_cjk.Encode("中文", false).ids), "[CLS] 中 ##文 [SEP]");
}

TEST_F(TokenizerTest, SpecialTokensInText) {
  const WordPieceTokenizer tok = Uncased();
  EXPECT_EQ(Pieces(tok, tok.Encode("a [SEP] b[MASK]c", false).ids),
            "[CLS] a [SEP] b [MASK] c [SEP]");
  EXPECT_EQ(Pieces(tok, tok.Encode("[sep]", false).ids), "[CLS] [ sep ] [SEP]");
  TokenizerOptions o;
  o.split_special_tokens = true;
  const auto split = WordPieceTokenizer::FromVocabFile(VocabPath(), o);
  EXPECT_EQ(Pieces(split, split.Encode("[SEP]", false).ids), "[CLS] [ sep ] [SEP]");
}

TEST_F(TokenizerTest, LongWordsBecomeUnknown) {
  const WordPieceTokenizer tok = Uncased();
  const auto hundred = tok.Encode(std::string(100, 'a'), false).ids;  // Segmented normally.
  EXPECT_GT(hundred.size(), 3u);
  EXPECT_EQ(std::count(hundred.begin(), hundred.end(), tok.unk_id()), 0);
  EXPECT_EQ(tok.Encode(std::string(101, 'a'), false).ids,
            (std::vector<int32_t>{101, tok.unk_id(), 102}));
}

// ---------------------------------------------------------------------------------------------
// Truncation.

TEST_F(TokenizerTest, Truncation) {
  const WordPieceTokenizer tok = Uncased(16);
  std::string text;
  for (int i = 0; i < 40; ++i) text += "hello world ";
  const Encoding full = Uncased(1 << 20).Encode(text, false);
  ASSERT_EQ(full.ids.size(), 82u);

  const Encoding cut = tok.Encode(text, true);
  EXPECT_TRUE(cut.truncated);
  ASSERT_EQ(cut.ids.size(), 16u);
  EXPECT_EQ(std::vector<int32_t>(cut.ids.begin(), cut.ids.end() - 1),
            std::vector<int32_t>(full.ids.begin(), full.ids.begin() + 15));
  EXPECT_EQ(cut.ids.back(), tok.sep_id());

  try {
    tok.Encode(text, false);
    FAIL() << "expected kTooLong";
  } catch (const TokenizerError& e) {
    EXPECT_EQ(e.code(), TokenizerErrorCode::kTooLong);
  }

  // Exactly max_length ids: fits, not truncated. One more piece: too long.
  std::string fits;
  for (int i = 0; i < 7; ++i) fits += "hello world ";
  EXPECT_EQ(tok.Encode(fits, false).ids.size(), 16u);
  EXPECT_FALSE(tok.Encode(fits, true).truncated);
  EXPECT_THROW(tok.Encode(fits + "x", false), TokenizerError);
  EXPECT_TRUE(tok.Encode(fits + "x", true).truncated);

  // Truncation in the middle of a word keeps the first pieces (HF truncates ids, not words).
  const auto tiny = Uncased(4);
  EXPECT_EQ(Pieces(tiny, tiny.Encode("unaffable", true).ids), "[CLS] una ##ffa [SEP]");

  // The reference's long text, at the default 512.
  const auto def = Uncased();
  for (const Json& c : Reference()["cases"]) {
    const auto want = c["ids"]["uncased"].get<std::vector<int32_t>>();
    if (want.size() <= 512) continue;
    const Encoding got = def.Encode(c["text"].get<std::string>(), true);
    EXPECT_TRUE(got.truncated);
    ASSERT_EQ(got.ids.size(), 512u);
    EXPECT_TRUE(std::equal(got.ids.begin(), got.ids.end() - 1, want.begin()));
    EXPECT_EQ(got.ids.back(), def.sep_id());
  }

  TokenizerOptions bad;
  bad.max_length = 1;
  EXPECT_THROW(WordPieceTokenizer::FromVocabFile(VocabPath(), bad), TokenizerError);
}

// ---------------------------------------------------------------------------------------------
// Invalid UTF-8.

TEST_F(TokenizerTest, InvalidUtf8IsRejected) {
  const WordPieceTokenizer tok = Uncased(8);
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
        tok.Encode(s, truncate);
        ADD_FAILURE() << "accepted " << Escape(s);
      } catch (const TokenizerError& e) {
        EXPECT_EQ(e.code(), TokenizerErrorCode::kBadUtf8) << Escape(s) << ": " << e.what();
      }
    }
  }
  // Boundary code points are fine.
  for (const char* ok : {"\x7f", "\xc2\x80", "\xdf\xbf", "\xe0\xa0\x80", "\xed\x9f\xbf",
                         "\xee\x80\x80", "\xef\xbf\xbf", "\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf"}) {
    EXPECT_NO_THROW(tok.Encode(ok, false)) << Escape(ok);
  }
}

TEST_F(TokenizerTest, RandomBytesNeverCrash) {
  const WordPieceTokenizer tok = Uncased(64);
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int> len(0, 64), byte(0, 255), small(0, 9);
  size_t ok = 0, rejected = 0;
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
      const Encoding e = tok.Encode(s, true);
      ASSERT_GE(e.ids.size(), 2u);
      ASSERT_LE(e.ids.size(), 64u);
      for (int32_t id : e.ids) ASSERT_TRUE(id >= 0 && static_cast<size_t>(id) < tok.vocab_size());
      ++ok;
    } catch (const TokenizerError& e) {
      ASSERT_EQ(e.code(), TokenizerErrorCode::kBadUtf8);
      ++rejected;
    }
  }
  EXPECT_GT(ok, 100u);
  EXPECT_GT(rejected, 100u);
}

// ---------------------------------------------------------------------------------------------
// Loaders.

class ScratchDir {
 public:
  ScratchDir() {
    path_ = fs::temp_directory_path() /
            ("ember_tok_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
             "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::vector<std::string> ReadLines(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// A tokenizer.json as written by HF tokenizers for bert-base-uncased (trimmed to what matters).
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

void WriteFile(const fs::path& p, const std::string& data) {
  std::ofstream out(p, std::ios::binary);
  out << data;
}

TEST_F(TokenizerTest, TokenizerJsonMatchesVocabFile) {
  ScratchDir dir;
  const auto vocab = ReadLines(VocabPath());
  for (bool lowercase : {true, false}) {
    SCOPED_TRACE(lowercase ? "uncased" : "cased");
    const fs::path json_path = dir.path() / "tokenizer.json";
    WriteFile(json_path, MakeTokenizerJson(vocab, lowercase).dump());
    const auto from_json = WordPieceTokenizer::FromTokenizerJson(json_path);
    EXPECT_EQ(from_json.options().lowercase, lowercase);
    EXPECT_EQ(from_json.options().max_length, 512u);
    EXPECT_EQ(from_json.vocab_size(), vocab.size());
    TokenizerOptions o;
    o.lowercase = lowercase;
    ExpectSameOnCorpus(from_json, WordPieceTokenizer::FromVocabFile(VocabPath(), o));

    // BertProcessing instead of TemplateProcessing.
    Json j = MakeTokenizerJson(vocab, lowercase);
    j["post_processor"] = {
        {"type", "BertProcessing"}, {"sep", {"[SEP]", 102}}, {"cls", {"[CLS]", 101}}};
    WriteFile(json_path, j.dump());
    EXPECT_EQ(WordPieceTokenizer::FromTokenizerJson(json_path).Encode("Hi!", false).ids,
              from_json.Encode("Hi!", false).ids);
  }
}

TEST_F(TokenizerTest, FromDirectory) {
  ScratchDir dir;
  fs::copy_file(VocabPath(), dir.path() / "vocab.txt");
  // vocab.txt alone: uncased defaults.
  const auto plain = WordPieceTokenizer::FromDirectory(dir.path());
  EXPECT_TRUE(plain.options().lowercase);
  EXPECT_EQ(plain.options().max_length, 512u);
  // tokenizer_config.json: cased, and a bogus "infinite" model_max_length is ignored.
  WriteFile(dir.path() / "tokenizer_config.json",
            R"({"do_lower_case": false, "model_max_length": 1000000000000000019884624838656})");
  const auto cased = WordPieceTokenizer::FromDirectory(dir.path());
  EXPECT_FALSE(cased.options().lowercase);
  EXPECT_EQ(cased.options().max_length, 512u);
  TokenizerOptions o;
  o.lowercase = false;
  ExpectSameOnCorpus(cased, WordPieceTokenizer::FromVocabFile(VocabPath(), o));
  // tokenizer.json wins over vocab.txt; model_max_length from the config applies.
  WriteFile(dir.path() / "tokenizer_config.json", R"({"model_max_length": 128})");
  WriteFile(dir.path() / "tokenizer.json", MakeTokenizerJson(ReadLines(VocabPath()), true).dump());
  const auto from_json = WordPieceTokenizer::FromDirectory(dir.path());
  EXPECT_TRUE(from_json.options().lowercase);
  EXPECT_EQ(from_json.options().max_length, 128u);
}

TEST_F(TokenizerTest, LoaderErrors) {
  ScratchDir dir;
  auto expect_code = [](TokenizerErrorCode code, auto&& fn) {
    try {
      fn();
      ADD_FAILURE() << "no exception, expected " << TokenizerErrorCodeName(code);
    } catch (const TokenizerError& e) {
      EXPECT_EQ(e.code(), code) << e.what();
    }
  };
  expect_code(TokenizerErrorCode::kIo,
              [&] { WordPieceTokenizer::FromVocabFile(dir.path() / "missing.txt"); });
  expect_code(TokenizerErrorCode::kIo, [&] { WordPieceTokenizer::FromDirectory(dir.path()); });
  expect_code(TokenizerErrorCode::kBadConfig, [&] {
    WordPieceTokenizer::FromTokens({"[PAD]", "[CLS]", "[SEP]", "a"});
  });

  const auto vocab = ReadLines(VocabPath());
  const fs::path p = dir.path() / "tokenizer.json";
  auto expect_bad_json = [&](const Json& j) {
    WriteFile(p, j.dump());
    expect_code(TokenizerErrorCode::kBadConfig, [&] { WordPieceTokenizer::FromTokenizerJson(p); });
  };
  Json j = MakeTokenizerJson(vocab, true);
  j["model"]["type"] = "BPE";
  expect_bad_json(j);
  j = MakeTokenizerJson(vocab, true);
  j["normalizer"] = {{"type", "NFKC"}};
  expect_bad_json(j);
  j = MakeTokenizerJson(vocab, true);
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  expect_bad_json(j);
  j = MakeTokenizerJson(vocab, true);
  j["post_processor"] = nullptr;
  expect_bad_json(j);
  j = MakeTokenizerJson(vocab, true);
  j["model"]["vocab"] = "not an object";
  expect_bad_json(j);
  WriteFile(p, "{not json");
  expect_code(TokenizerErrorCode::kBadConfig, [&] { WordPieceTokenizer::FromTokenizerJson(p); });
}

TEST(WordPieceTokenizerSmallVocab, GreedyLongestMatchFirst) {
  // Independent of generated data: the classic "unaffable" example with a toy vocabulary.
  const auto tok =
      WordPieceTokenizer::FromTokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "un", "##aff", "##able",
                                      "runn", "##ing", ",", "a", "##a", "##ff"});
  EXPECT_EQ(tok.Encode("unaffable, running", false).ids,
            (std::vector<int32_t>{2, 4, 5, 6, 9, 7, 8, 3}));
  EXPECT_EQ(tok.Encode("unaffablex", false).ids, (std::vector<int32_t>{2, 1, 3}));  // No "##x".
  EXPECT_EQ(tok.Encode("", false).ids, (std::vector<int32_t>{2, 3}));
  // CRLF and CR line endings in vocab files.
  const fs::path p = fs::temp_directory_path() / "ember_tok_crlf_vocab.txt";
  WriteFile(p, "[PAD]\r\n[UNK]\r[CLS]\n[SEP]\r\nhello");
  const auto crlf = WordPieceTokenizer::FromVocabFile(p);
  fs::remove(p);
  EXPECT_EQ(crlf.vocab_size(), 5u);
  EXPECT_EQ(crlf.Encode("Hello", false).ids, (std::vector<int32_t>{2, 4, 3}));
}

TEST(WordPieceTokenizerSmallVocab, PairsAreCutLongestFirstAsHfTokenizers) {
  // Ids: [PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, a 4, b 5. "a a a" is 3 pieces.
  TokenizerOptions options;
  options.max_length = 16;
  const auto tok =
      WordPieceTokenizer::FromTokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "b"}, options);
  const auto words = [](const char* w, int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += std::string(i ? " " : "") + w;
    return s;
  };
  const PairEncoding whole = tok.EncodePair("a a", "b", true);
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
    const PairEncoding p = tok.EncodePair(words("a", c.n1), words("b", c.n2), true, c.max_length);
    EXPECT_EQ(p.ids.size(), c.keep1 + c.keep2 + 3);
    EXPECT_EQ(std::count(p.ids.begin(), p.ids.end(), 4), static_cast<long>(c.keep1));
    EXPECT_EQ(std::count(p.ids.begin(), p.ids.end(), 5), static_cast<long>(c.keep2));
    EXPECT_EQ(p.second_start, c.keep1 + 2);
    EXPECT_EQ(p.truncated, static_cast<std::size_t>(c.n1 + c.n2) + 3 > c.max_length);
  }
  // max_length above the tokenizer's own is the tokenizer's (16).
  EXPECT_EQ(tok.EncodePair(words("a", 20), words("b", 20), true, 100).ids.size(), 16u);
  try {
    tok.EncodePair(words("a", 7), words("b", 7), false);
    FAIL() << "no kTooLong";
  } catch (const TokenizerError& e) {
    EXPECT_EQ(e.code(), TokenizerErrorCode::kTooLong);
  }
  EXPECT_THROW(tok.EncodePair("a", "\xff", true), TokenizerError);  // bad UTF-8 in the second
}

TEST_F(TokenizerTest, ConcurrentEncodeIsConsistent) {
  const WordPieceTokenizer tok = Uncased();
  std::vector<std::string> texts;
  std::vector<std::vector<int32_t>> want;
  for (const Json& c : Reference()["cases"]) {
    texts.push_back(c["text"].get<std::string>());
    want.push_back(tok.Encode(texts.back(), true).ids);
  }
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t, copy = tok] {
      for (int round = 0; round < 3; ++round) {
        for (size_t i = 0; i < texts.size(); ++i) {
          if (copy.Encode(texts[i], true).ids != want[i]) ++mismatches[t];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

}  // namespace
}  // namespace ember::engine
