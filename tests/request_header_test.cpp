// The router's header read of a REQUEST body (common/request_header.h) against the full
// decoder: the same verdict and the same reason on every body below, and the same fields when
// both accept. Each case is a body the fuzzer's random mutations would rarely build (a field
// of each wrong type, duplicates, the limits exactly at and past their bound).
#include "common/request_header.h"

#include <gtest/gtest.h>

#include <functional>
#include <msgpack.hpp>
#include <string>
#include <vector>

#include "common/messages.h"

namespace ember::protocol {
namespace {

using Packer = msgpack::packer<msgpack::sbuffer>;

void Key(Packer& pk, std::string_view key) {
  pk.pack_str(static_cast<std::uint32_t>(key.size()));
  pk.pack_str_body(key.data(), static_cast<std::uint32_t>(key.size()));
}

// One value of each msgpack type, to put where a field belongs.
const std::vector<std::pair<std::string, std::function<void(Packer&)>>>& Values() {
  static const std::vector<std::pair<std::string, std::function<void(Packer&)>>> values = {
      {"nil", [](Packer& pk) { pk.pack_nil(); }},
      {"true", [](Packer& pk) { pk.pack(true); }},
      {"uint 7", [](Packer& pk) { pk.pack(7u); }},
      {"uint32 max", [](Packer& pk) { pk.pack(std::uint64_t{0xffffffffu}); }},
      {"uint32 max + 1", [](Packer& pk) { pk.pack(std::uint64_t{0x100000000u}); }},
      {"-1", [](Packer& pk) { pk.pack(-1); }},
      {"float", [](Packer& pk) { pk.pack(1.5); }},
      {"str", [](Packer& pk) { pk.pack(std::string("minilm")); }},
      {"empty str", [](Packer& pk) { pk.pack(std::string()); }},
      {"bin", [](Packer& pk) { pk.pack_bin(3), pk.pack_bin_body("abc", 3); }},
      {"ext", [](Packer& pk) { pk.pack_ext(1, 1), pk.pack_ext_body("x", 1); }},
      {"[]", [](Packer& pk) { pk.pack_array(0); }},
      {"[str, str]",
       [](Packer& pk) {
         pk.pack(std::vector<std::string>{"ab", "abcd"});
       }},
      {"[str, bin]",
       [](Packer& pk) {
         pk.pack_array(2), pk.pack(std::string("a")), pk.pack_bin(5), pk.pack_bin_body("abcde", 5);
       }},
      {"[str, 1]", [](Packer& pk) { pk.pack_array(2), pk.pack(std::string("a")), pk.pack(1); }},
      {"[str, []]",
       [](Packer& pk) { pk.pack_array(2), pk.pack(std::string("a")), pk.pack_array(0); }},
      {"[[str]]",
       [](Packer& pk) { pk.pack_array(1), pk.pack_array(1), pk.pack(std::string("a")); }},
      {"{}", [](Packer& pk) { pk.pack_map(0); }},
      {"{a: 1}", [](Packer& pk) { pk.pack_map(1), Key(pk, "a"), pk.pack(1); }},
  };
  return values;
}

struct Body {
  std::string name;
  std::string bytes;
};

std::string Bytes(const std::function<void(Packer&)>& write) {
  msgpack::sbuffer buffer;
  Packer pk(buffer);
  write(pk);
  return std::string(buffer.data(), buffer.size());
}

// A request map with `field` set to `value` (or left out, value == nullptr), the other fields
// valid.
std::string RequestWith(std::string_view field, const std::function<void(Packer&)>* value) {
  return Bytes([&](Packer& pk) {
    const std::vector<std::string_view> fields = {
        "model",       "version", "inputs",     "timeout_ms", "truncate",           "dimensions",
        "prompt_name", "task",    "text_pairs", "raw_scores", "skip_special_tokens"};
    pk.pack_map(static_cast<std::uint32_t>(fields.size() - (value == nullptr ? 1 : 0)));
    for (std::string_view f : fields) {
      if (f == field) {
        if (value == nullptr) continue;
        Key(pk, f);
        (*value)(pk);
      } else if (f == "model") {
        Key(pk, f), pk.pack(std::string("m"));
      } else if (f == "inputs") {
        Key(pk, f), pk.pack(std::vector<std::string>{"x", "yy", "yy", "z"});
      } else if (f == "truncate") {
        Key(pk, f), pk.pack(false);
      } else if (f == "prompt_name") {
        Key(pk, f), pk.pack(std::string("query"));
      } else if (f == "task") {
        Key(pk, f), pk.pack(std::string("score"));
      } else if (f == "text_pairs") {  // the longest text of all: the header counts pairs too
        Key(pk, f), pk.pack(std::vector<std::string>{"a", "bbbbb", "", "c"});
      } else if (f == "raw_scores" || f == "skip_special_tokens") {
        Key(pk, f), pk.pack(true);
      } else {
        Key(pk, f), pk.pack(3u);
      }
    }
  });
}

// Maps nested `depth` deep under an unknown key: {"deep": {"k": {"k": ...}}}.
std::string Nested(int depth) {
  return Bytes([&](Packer& pk) {
    pk.pack_map(3);
    Key(pk, "model"), pk.pack(std::string("m"));
    Key(pk, "inputs"), pk.pack(std::vector<std::string>{"a"});
    Key(pk, "deep");
    for (int i = 0; i < depth; ++i) pk.pack_map(1), Key(pk, "k");
    pk.pack(1);
  });
}

std::vector<Body> Bodies() {
  std::vector<Body> bodies;
  for (std::string_view field :
       {"model", "version", "inputs", "timeout_ms", "truncate", "dimensions", "prompt_name", "task",
        "text_pairs", "raw_scores", "skip_special_tokens"}) {
    bodies.push_back({std::string(field) + " missing", RequestWith(field, nullptr)});
    for (const auto& [name, value] : Values()) {
      bodies.push_back({std::string(field) + " = " + name, RequestWith(field, &value)});
    }
  }
  const std::string valid = RequestWith("", nullptr);
  bodies.push_back({"empty body", ""});
  bodies.push_back({"truncated", valid.substr(0, valid.size() - 2)});
  bodies.push_back({"trailing bytes", valid + "\x01"});
  bodies.push_back({"garbage", "\xc1\xc1"});
  bodies.push_back({"an array", Bytes([](Packer& pk) { pk.pack(std::vector<int>{1}); })});
  bodies.push_back({"an int then more", "\x01\x02"});
  bodies.push_back({"a str", Bytes([](Packer& pk) { pk.pack(std::string("hi")); })});
  // The first occurrence of a field counts, the second is not even type-checked.
  bodies.push_back({"duplicate model", Bytes([](Packer& pk) {
                      pk.pack_map(3), Key(pk, "model"), pk.pack(std::string("first"));
                      Key(pk, "inputs"), pk.pack(std::vector<std::string>{"a"});
                      Key(pk, "model"), pk.pack(1);
                    })});
  bodies.push_back({"duplicate model, first wrong", Bytes([](Packer& pk) {
                      pk.pack_map(3), Key(pk, "model"), pk.pack(1);
                      Key(pk, "inputs"), pk.pack(std::vector<std::string>{"a"});
                      Key(pk, "model"), pk.pack(std::string("second"));
                    })});
  bodies.push_back({"duplicate inputs", Bytes([](Packer& pk) {
                      pk.pack_map(3), Key(pk, "model"), pk.pack(std::string("m"));
                      Key(pk, "inputs"), pk.pack(std::vector<std::string>{"a", "bbb"});
                      Key(pk, "inputs"), pk.pack(std::vector<std::string>{"cccccc"});
                    })});
  // A field name as a bin key names nothing; an aggregate key neither.
  bodies.push_back({"bin key", Bytes([](Packer& pk) {
                      pk.pack_map(2), pk.pack_bin(5), pk.pack_bin_body("model", 5);
                      pk.pack(std::string("m"));
                      Key(pk, "inputs"), pk.pack(std::vector<std::string>{"a"});
                    })});
  bodies.push_back({"array key", Bytes([](Packer& pk) {
                      pk.pack_map(3), pk.pack(std::vector<std::string>{"model"}), pk.pack(1);
                      Key(pk, "model"), pk.pack(std::string("m"));
                      Key(pk, "inputs"), pk.pack(std::vector<std::string>{"a"});
                    })});
  bodies.push_back({"unknown fields", Bytes([](Packer& pk) {
                      pk.pack_map(4), Key(pk, "model"), pk.pack(std::string("m"));
                      Key(pk, "extra"), pk.pack(std::vector<std::string>{"not", "texts"});
                      Key(pk, "inputs"), pk.pack(std::vector<std::string>{"a"});
                      Key(pk, "more"), pk.pack_map(1), Key(pk, "inputs"), pk.pack(1);
                    })});
  // The limits: nesting 8 deep is the most a body may have, 64 pairs the most a map may.
  bodies.push_back({"nested 6", Nested(6)});
  bodies.push_back({"nested 7", Nested(7)});
  bodies.push_back({"nested 8", Nested(8)});
  for (std::uint32_t pairs : {63u, 64u, 65u}) {
    bodies.push_back({std::to_string(pairs) + " pairs", Bytes([&](Packer& pk) {
                        pk.pack_map(pairs), Key(pk, "model"), pk.pack(std::string("m"));
                        Key(pk, "inputs"), pk.pack(std::vector<std::string>{"a"});
                        for (std::uint32_t i = 2; i < pairs; ++i) {
                          Key(pk, "k" + std::to_string(i)), pk.pack(i);
                        }
                      })});
  }
  bodies.push_back({"array over the limit (header only)", Bytes([](Packer& pk) {
                      pk.pack_map(2), Key(pk, "model"), pk.pack(std::string("m"));
                      Key(pk, "inputs"), pk.pack_array((1u << 20) + 1);
                    })});
  return bodies;
}

TEST(RequestHeaderTest, AgreesWithTheFullDecoder) {
  int accepted = 0;
  for (const Body& body : Bodies()) {
    SCOPED_TRACE(body.name);
    EmbedRequest full;
    EmbedRequestHeader header;
    std::string full_error, header_error;
    const bool full_ok = Decode(body.bytes, &full, &full_error);
    const bool header_ok = Decode(body.bytes, &header, &header_error);
    ASSERT_EQ(full_ok, header_ok) << full_error << " | " << header_error;
    EXPECT_EQ(full_error, header_error);
    if (!full_ok) continue;
    ++accepted;
    EXPECT_EQ(header.model, full.model);
    EXPECT_EQ(header.version, full.version);
    EXPECT_EQ(header.timeout_ms, full.timeout_ms);
    EXPECT_EQ(header.truncate, full.truncate);
    EXPECT_EQ(header.dimensions, full.dimensions);
    EXPECT_EQ(header.task, full.task);
    ASSERT_EQ(header.count, full.inputs.size());
    ASSERT_EQ(header.pairs, full.text_pairs.size());
    std::size_t longest = 0, index = 0;
    for (const auto* texts : {&full.inputs, &full.text_pairs}) {
      for (std::size_t i = 0; i < texts->size(); ++i) {
        if ((*texts)[i].size() > longest) longest = (*texts)[i].size(), index = i;
      }
    }
    EXPECT_EQ(header.longest_bytes, longest);
    EXPECT_EQ(header.longest_index, index);
  }
  // Not a table of refusals only: valid bodies of several shapes are in it.
  EXPECT_GE(accepted, 20);
}

TEST(RequestHeaderTest, ReadsTheFieldsOfAnEncodedRequest) {
  const EmbedRequest request{.model = "minilm",
                             .version = 4,
                             .inputs = {"a", std::string(300, 'x'), "", std::string(300, 'y')},
                             .timeout_ms = 2500,
                             .truncate = false,
                             .dimensions = 128};
  EmbedRequestHeader header;
  std::string error;
  ASSERT_TRUE(Decode(Encode(request), &header, &error)) << error;
  EXPECT_EQ(header.model, "minilm");
  EXPECT_EQ(header.version, 4u);
  EXPECT_EQ(header.timeout_ms, 2500u);
  EXPECT_FALSE(header.truncate);
  EXPECT_EQ(header.dimensions, 128u);
  EXPECT_EQ(header.count, 4u);
  EXPECT_EQ(header.longest_bytes, 300u);
  EXPECT_EQ(header.longest_index, 1u);  // the first of the two longest
}

TEST(RequestHeaderTest, ReadsAScoreOfPairs) {
  const EmbedRequest request{.model = "reranker",
                             .inputs = {"query", "query"},
                             .task = Task::kScore,
                             .text_pairs = {"a passage", std::string(500, 'p')},
                             .raw_scores = true};
  EmbedRequestHeader header;
  std::string error;
  ASSERT_TRUE(Decode(Encode(request), &header, &error)) << error;
  EXPECT_EQ(header.task, Task::kScore);
  EXPECT_EQ(header.count, 2u);
  EXPECT_EQ(header.pairs, 2u);
  EXPECT_EQ(header.longest_bytes, 500u);  // a pair's text is held to the limit too
  EXPECT_EQ(header.longest_index, 1u);
  EmbedRequest full;
  ASSERT_TRUE(Decode(Encode(request), &full, &error)) << error;
  EXPECT_EQ(full.text_pairs, request.text_pairs);
  EXPECT_TRUE(full.raw_scores);
}

TEST(RequestHeaderTest, RefusesPairsThatDoNotMatchTheTask) {
  for (const auto& [request, why] : std::vector<std::pair<EmbedRequest, std::string>>{
           {{.model = "m", .inputs = {"q"}, .text_pairs = {"p"}},
            "field 'text_pairs' is for task 'score' (a cross-encoder's pairs)"},
           {{.model = "m", .inputs = {"q", "q"}, .task = Task::kScore, .text_pairs = {"p"}},
            "field 'text_pairs' has 1 texts for 2 inputs"}}) {
    std::string full_error, header_error;
    EmbedRequest full;
    EmbedRequestHeader header;
    EXPECT_FALSE(Decode(Encode(request), &full, &full_error));
    EXPECT_FALSE(Decode(Encode(request), &header, &header_error));
    EXPECT_EQ(full_error, why);
    EXPECT_EQ(header_error, why);
  }
}

}  // namespace
}  // namespace ember::protocol
