// The gateway's translation between HTTP JSON and ember, alone: model names
// with versions, request validation, base64, float formatting and the
// mapping of ember error codes to HTTP statuses.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "gateway/base64.h"
#include "gateway/http_error.h"
#include "gateway/json_floats.h"
#include "gateway/openai_api.h"
#include "gateway/tei_api.h"
#include "gateway/tei_scoring.h"

namespace ember::gateway {
namespace {

EmbeddingCall Model(const std::string& spec) {
  EmbeddingCall call;
  ParseModelName(spec, &call);
  return call;
}

int StatusOf(const std::string& body) {
  try {
    ParseOpenAiRequest(body);
    return 200;
  } catch (const HttpError& e) {
    return e.status();
  }
}

TEST(GatewayApiTest, ModelNamesAndVersions) {
  EXPECT_EQ(Model("minilm").model, "minilm");
  EXPECT_EQ(Model("minilm").version, 0u);
  EXPECT_EQ(Model("minilm:3").model, "minilm");
  EXPECT_EQ(Model("minilm:3").version, 3u);
  EXPECT_EQ(Model("minilm:latest").version, 0u);
  EXPECT_EQ(Model("minilm:latest").model, "minilm");
  // Not a version: the whole string is the name.
  EXPECT_EQ(Model("org/model:v2").model, "org/model:v2");
  EXPECT_EQ(Model("m:0").model, "m:0");
  EXPECT_EQ(Model("m:99999999999").model, "m:99999999999");
  EXPECT_THROW(Model(""), HttpError);
  EXPECT_THROW(Model(":3"), HttpError);
}

TEST(GatewayApiTest, OpenAiRequests) {
  const OpenAiRequest one = ParseOpenAiRequest(R"({"model":"m:2","input":"hi","user":"u"})");
  EXPECT_EQ(one.call.model, "m");
  EXPECT_EQ(one.call.version, 2u);
  EXPECT_EQ(one.call.texts, std::vector<std::string>{"hi"});
  EXPECT_FALSE(one.base64);
  EXPECT_FALSE(one.call.truncate.has_value());
  const OpenAiRequest many = ParseOpenAiRequest(
      R"({"model":"m","input":["a","b"],"encoding_format":"base64","truncate":false})");
  EXPECT_EQ(many.call.texts.size(), 2u);
  EXPECT_TRUE(many.base64);
  EXPECT_EQ(many.call.truncate, false);

  EXPECT_EQ(StatusOf("{"), 400);
  EXPECT_EQ(StatusOf("[]"), 400);
  EXPECT_EQ(StatusOf(R"({"input":"x"})"), 400);
  EXPECT_EQ(StatusOf(R"({"model":7,"input":"x"})"), 400);
  EXPECT_EQ(StatusOf(R"({"model":"m"})"), 400);
  EXPECT_EQ(StatusOf(R"({"model":"m","input":[]})"), 400);
  EXPECT_EQ(StatusOf(R"({"model":"m","input":[[1,2]]})"), 400);
  EXPECT_EQ(StatusOf(R"({"model":"m","input":"x","encoding_format":"hex"})"), 400);
  EXPECT_EQ(StatusOf(R"({"model":"m","input":"x","dimensions":0})"), 400);
  EXPECT_EQ(StatusOf(R"({"model":"m","input":"x","truncate":"no"})"), 400);
  EXPECT_EQ(StatusOf("{\"model\":\"m\",\"input\":\"\xff\"}"), 400);  // not UTF-8
}

TEST(GatewayApiTest, TeiRequests) {
  const TeiRequest r = ParseTeiRequest(R"({"inputs":["a"],"normalize":false})", "m:1");
  EXPECT_EQ(r.call.model, "m");
  EXPECT_EQ(r.call.version, 1u);
  EXPECT_FALSE(r.normalize);
  EXPECT_EQ(ParseTeiRequest(R"({"inputs":"a","model":"other"})", "m").call.model, "other");
  EXPECT_THROW(ParseTeiRequest(R"({"inputs":"a"})", ""), HttpError);
  EXPECT_THROW(ParseTeiRequest(R"({"inputs":[]})", "m"), HttpError);
}

TEST(GatewayApiTest, RerankRequests) {
  const RerankRequest r = ParseRerankRequest(
      R"({"query":"q","texts":["a","b"],"raw_scores":true,"return_text":true,"top_n":1})", "m");
  EXPECT_EQ(r.score.call.model, "m");
  EXPECT_EQ(r.score.call.texts, (std::vector<std::string>{"q", "q"}));
  EXPECT_EQ(r.score.pairs, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(r.score.raw_scores);
  EXPECT_TRUE(r.return_text);
  EXPECT_EQ(r.top_n, 1u);
  for (const char* bad :
       {R"({"texts":["a"]})", R"({"query":1,"texts":["a"]})", R"({"query":"q","texts":[]})",
        R"({"query":"q","texts":"a"})", R"({"query":"q","texts":["a",["b"]]})",
        R"({"query":"q","texts":["a"],"top_n":0})", R"({"query":"q","texts":["a"],"top_n":2})",
        R"({"query":"q","texts":["a"],"top_n":-1})",
        R"({"query":"q","texts":["a"],"raw_scores":"yes"})",
        R"({"query":"q","texts":["a"],"truncation_direction":"left"})", "[]"}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(ParseRerankRequest(bad, "m"), HttpError);
  }
}

TEST(GatewayApiTest, PredictInputsAsTeiReadsThem) {
  // A string, or an array of one or two strings, is one input; other arrays are batches.
  const auto parse = [](const char* body) { return ParsePredictRequest(body, "m").score; };
  EXPECT_FALSE(ParsePredictRequest(R"({"inputs":"a"})", "m").batch);
  EXPECT_EQ(parse(R"({"inputs":["a","b"]})").pairs, std::vector<std::string>{"b"});
  EXPECT_FALSE(ParsePredictRequest(R"({"inputs":["a","b"]})", "m").batch);
  EXPECT_TRUE(parse(R"({"inputs":["a"]})").pairs.empty());
  const PredictRequest batch = ParsePredictRequest(R"({"inputs":["a","b","c"]})", "m");
  EXPECT_TRUE(batch.batch);
  EXPECT_EQ(batch.score.call.texts, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(batch.score.pairs.empty());
  EXPECT_EQ(parse(R"({"inputs":[["a","b"],["c","d"]]})").pairs,
            (std::vector<std::string>{"b", "d"}));
  EXPECT_EQ(parse(R"({"inputs":[["a"],["c"]]})").call.texts, (std::vector<std::string>{"a", "c"}));
  for (const char* bad : {R"({})", R"({"inputs":[]})", R"({"inputs":[["a","b","c"]]})",
                          R"({"inputs":["a",["b","c"]]})", R"({"inputs":[1]})",
                          R"({"inputs":[[]]})", R"({"inputs":{"a":"b"}})"}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(ParsePredictRequest(bad, "m"), HttpError);
  }
}

TEST(GatewayApiTest, Base64) {
  auto encode = [](std::string_view s) {
    std::string out;
    AppendBase64(s, &out);
    return out;
  };
  EXPECT_EQ(encode(""), "");
  EXPECT_EQ(encode("f"), "Zg==");
  EXPECT_EQ(encode("fo"), "Zm8=");
  EXPECT_EQ(encode("foo"), "Zm9v");
  EXPECT_EQ(encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(encode(std::string("\xff\x00\x80", 3)), "/wCA");
}

TEST(GatewayApiTest, FloatsRoundTripExactly) {
  const std::vector<float> values = {0.0f,        -1.5f,        1e-8f,
                                     3.14159265f, -123456.789f, std::numeric_limits<float>::min()};
  std::string out;
  AppendFloatArray(values, &out);
  const auto parsed = nlohmann::json::parse(out);
  ASSERT_EQ(parsed.size(), values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(parsed[i].get<float>(), values[i]) << out;
  }
  std::string bad;
  const std::vector<float> nan = {std::numeric_limits<float>::quiet_NaN()};
  EXPECT_THROW(AppendFloatArray(nan, &bad), HttpError);
}

TEST(GatewayApiTest, ErrorStatuses) {
  auto status = [](ErrorCode code) { return FromEmberError(Error(code, "m")).status(); };
  EXPECT_EQ(status(ErrorCode::kBadRequest), 400);
  EXPECT_EQ(status(ErrorCode::kTooLong), 400);
  EXPECT_EQ(status(ErrorCode::kUnknownModel), 404);
  EXPECT_EQ(status(ErrorCode::kOverloaded), 429);
  EXPECT_EQ(status(ErrorCode::kUnavailable), 503);
  EXPECT_EQ(status(ErrorCode::kTimeout), 504);
  EXPECT_EQ(status(ErrorCode::kInternal), 500);
  const auto body =
      nlohmann::json::parse(OpenAiErrorJson(FromEmberError(Error(ErrorCode::kOverloaded, "busy"))));
  EXPECT_EQ(body["error"]["code"], "OVERLOADED");
  EXPECT_EQ(body["error"]["type"], "rate_limit_error");
  EXPECT_EQ(body["error"]["message"], "busy");
}

}  // namespace
}  // namespace ember::gateway
