// libFuzzer target: the gateway's request parsers (gateway/openai_api.h, gateway/tei_api.h,
// gateway/tei_scoring.h) on arbitrary bodies: what any HTTP client can send.
//
//   byte 0   which parser: 0 OpenAI /v1/embeddings, 1 TEI /embed with a --default-model,
//            2 TEI /embed without one, 3 TEI /rerank, 4 TEI /predict, 5 TEI /tokenize,
//            6 TEI /decode, 7 /embed_sparse and /embed_multi_vector (its value modulo 8)
//   rest     the body, any bytes
//
// Properties checked on every input, beyond "no crash, no sanitizer report":
//   * a body is parsed or refused with HttpError 400 (BAD_REQUEST), never another exception;
//   * a parsed request names a model and has at least one text;
//   * a parsed score has no pairs or one per text, a rerank one per text and a top_n within
//     them.
#include <cstdint>
#include <string_view>

#include "fuzz/check.h"
#include "gateway/http_error.h"
#include "gateway/openai_api.h"
#include "gateway/tei_api.h"
#include "gateway/tei_scoring.h"
#include "gateway/tei_token_outputs.h"
#include "gateway/tei_tokenize.h"

namespace ember::fuzz {
namespace {

void CheckCall(const gateway::EmbeddingCall& call) {
  Check(!call.model.empty(), "a parsed request names a model");
  Check(!call.texts.empty(), "a parsed request has a text");
}

void CheckScore(const gateway::ScoreCall& score) {
  CheckCall(score.call);
  Check(score.pairs.empty() || score.pairs.size() == score.call.texts.size(),
        "a score has no pairs or one per text");
}

}  // namespace
}  // namespace ember::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ember;
  if (size < 1) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 8) {
      case 0:
        fuzz::CheckCall(gateway::ParseOpenAiRequest(body).call);
        break;
      case 1:
        fuzz::CheckCall(gateway::ParseTeiRequest(body, "m").call);
        break;
      case 2:
        fuzz::CheckCall(gateway::ParseTeiRequest(body, "").call);
        break;
      case 3: {
        const gateway::RerankRequest r = gateway::ParseRerankRequest(body, "m");
        fuzz::CheckScore(r.score);
        fuzz::Check(
            r.score.pairs.size() == r.score.call.texts.size() && r.top_n <= r.score.pairs.size(),
            "a rerank pairs the query with every text, top_n within them");
        break;
      }
      case 4:
        fuzz::CheckScore(gateway::ParsePredictRequest(body, "m").score);
        break;
      case 5:
        fuzz::CheckCall(gateway::ParseTokenizeRequest(body, "m").call);
        break;
      case 7:
        fuzz::CheckCall(gateway::ParseTokenOutputsRequest(body, "m"));
        break;
      default: {
        const gateway::DecodeRequest d = gateway::ParseDecodeRequest(body, "m");
        fuzz::Check(!d.call.model.empty() && !d.ids.empty(), "a decode names a model and ids");
        for (const auto& sequence : d.ids) {
          for (const std::uint32_t id : sequence) {
            fuzz::Check(id <= 0x7fffffffu, "token ids fit the tokenizer's int32");
          }
        }
        break;
      }
    }
  } catch (const gateway::HttpError& e) {
    fuzz::Check(e.status() == 400 && e.code() == "BAD_REQUEST", "a refusal is a 400");
  }
  return 0;
}
