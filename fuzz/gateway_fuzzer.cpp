// libFuzzer target: the gateway's request parsers (gateway/openai_api.h, gateway/tei_api.h) on
// arbitrary bodies: what any HTTP client can send.
//
//   byte 0   which parser: 0 OpenAI /v1/embeddings, 1 TEI /embed with a --default-model,
//            2 TEI /embed without one (its value modulo 3)
//   rest     the body, any bytes
//
// Properties checked on every input, beyond "no crash, no sanitizer report":
//   * a body is parsed or refused with HttpError 400 (BAD_REQUEST), never another exception;
//   * a parsed request names a model and has at least one text.
#include <cstdint>
#include <string_view>

#include "fuzz/check.h"
#include "gateway/http_error.h"
#include "gateway/openai_api.h"
#include "gateway/tei_api.h"

namespace ember::fuzz {
namespace {

void CheckCall(const gateway::EmbeddingCall& call) {
  Check(!call.model.empty(), "a parsed request names a model");
  Check(!call.texts.empty(), "a parsed request has a text");
}

}  // namespace
}  // namespace ember::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ember;
  if (size < 1) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 3) {
      case 0:
        fuzz::CheckCall(gateway::ParseOpenAiRequest(body).call);
        break;
      case 1:
        fuzz::CheckCall(gateway::ParseTeiRequest(body, "m").call);
        break;
      default:
        fuzz::CheckCall(gateway::ParseTeiRequest(body, "").call);
        break;
    }
  } catch (const gateway::HttpError& e) {
    fuzz::Check(e.status() == 400 && e.code() == "BAD_REQUEST", "a refusal is a 400");
  }
  return 0;
}
