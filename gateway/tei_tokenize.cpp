#include "gateway/tei_tokenize.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "gateway/http_error.h"

namespace ember::gateway {

using nlohmann::json;

TokenizeRequest ParseTokenizeRequest(std::string_view body, const std::string& default_model) {
  const json request = ParseJsonObject(body);
  TokenizeRequest out;
  ParseModelOrDefault(request, default_model, &out.call);
  out.call.texts = ParseTeiInputs(request);
  out.add_special_tokens = ParseFlag(request, "add_special_tokens").value_or(true);
  out.call.truncate = ParseFlag(request, "truncate");
  if (const auto p = request.find("prompt_name"); p != request.end() && !p->is_null()) {
    throw BadRequest("'prompt_name' is not supported on /tokenize: it shows the input's tokens");
  }
  return out;
}

DecodeRequest ParseDecodeRequest(std::string_view body, const std::string& default_model) {
  const json request = ParseJsonObject(body);
  DecodeRequest out;
  ParseModelOrDefault(request, default_model, &out.call);
  const auto ids = request.find("ids");
  const auto is_id = [](const json& j) {
    return j.is_number_unsigned() && j.get<std::uint64_t>() <= 0x7fffffffu;
  };
  const auto sequence = [&](const json& j) {
    if (!j.is_array() || !std::ranges::all_of(j, is_id)) {
      throw BadRequest("'ids' must be token ids (integers from 0) or arrays of them");
    }
    return j.get<std::vector<std::uint32_t>>();
  };
  if (ids == request.end() || !ids->is_array() || ids->empty()) {
    throw BadRequest("'ids' is required: an array of token ids, or a non-empty array of them");
  }
  if (std::ranges::all_of(*ids, is_id)) {
    out.ids.push_back(sequence(*ids));
  } else {
    for (const json& s : *ids) out.ids.push_back(sequence(s));
  }
  out.skip_special_tokens = ParseFlag(request, "skip_special_tokens").value_or(true);
  return out;
}

std::string FormatDecodeResponse(const Embeddings& decoded) {
  return json(decoded.texts()).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string FormatTokenizeResponse(const TokenizeRequest& request, const Embeddings& tokens) {
  json out = json::array();
  const auto& counts = tokens.tokens();
  std::size_t k = 0;  // the first token of input i
  for (std::size_t i = 0; i < tokens.size() && i < counts.size(); ++i) {
    const std::string& text = request.call.texts[i];
    json list = json::array();
    for (std::size_t t = 0; t < counts[i]; ++t, ++k) {
      // The [CLS] and [SEP] the model adds are its first and last.
      const bool special = t == 0 || t + 1 == counts[i];
      if (special && !request.add_special_tokens) continue;
      const std::uint32_t start = tokens.token_spans()[2 * k],
                          stop = tokens.token_spans()[2 * k + 1];
      json token = {{"id", tokens.token_ids()[k]}, {"special", special}};
      if (special || stop > text.size() || start > stop) {
        token["text"] = tokens.token_pieces()[k];
        token["start"] = nullptr;
        token["stop"] = nullptr;
      } else {
        token["text"] = text.substr(start, stop - start);
        token["start"] = start;
        token["stop"] = stop;
      }
      list.push_back(std::move(token));
    }
    out.push_back(std::move(list));
  }
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace ember::gateway
