#include "gateway/tei_scoring.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <numeric>

#include "client/ranking.h"
#include "gateway/http_error.h"

namespace ember::gateway {
namespace {

using nlohmann::json;

// What both endpoints share: the model, truncate, raw_scores and TEI's truncation_direction
// (the end of a text is what a cut drops; ember cuts nothing else).
ScoreCall ParseScoreCall(const json& request, const std::string& default_model) {
  ScoreCall out;
  ParseModelOrDefault(request, default_model, &out.call);
  out.call.truncate = ParseFlag(request, "truncate");
  out.raw_scores = ParseFlag(request, "raw_scores").value_or(false);
  if (const auto d = request.find("truncation_direction"); d != request.end() && !d->is_null()) {
    if (!d->is_string() || (*d != "right" && *d != "Right")) {
      throw BadRequest("'truncation_direction' must be \"right\": ember truncates a text's end");
    }
  }
  return out;
}

bool IsText(const json& j) { return j.is_string(); }

// One TEI Sequence: a string, or an array of one string (a text) or of two (a pair).
bool IsSequence(const json& j) {
  return IsText(j) ||
         (j.is_array() && (j.size() == 1 || j.size() == 2) && std::ranges::all_of(j, IsText));
}

}  // namespace

RerankRequest ParseRerankRequest(std::string_view body, const std::string& default_model) {
  const json request = ParseJsonObject(body);
  RerankRequest out;
  out.score = ParseScoreCall(request, default_model);
  const auto query = request.find("query");
  if (query == request.end() || !query->is_string()) {
    throw BadRequest("'query' is required and must be a string");
  }
  const auto texts = request.find("texts");
  if (texts == request.end() || !texts->is_array() || texts->empty() ||
      !std::ranges::all_of(*texts, IsText)) {
    throw BadRequest("'texts' is required and must be a non-empty array of strings");
  }
  out.score.call.texts.assign(texts->size(), query->get<std::string>());
  for (const json& text : *texts) out.score.pairs.push_back(text.get<std::string>());
  out.return_text = ParseFlag(request, "return_text").value_or(false);
  if (const auto top_n = request.find("top_n"); top_n != request.end() && !top_n->is_null()) {
    if (!top_n->is_number_unsigned() || top_n->get<std::uint64_t>() == 0 ||
        top_n->get<std::uint64_t>() > texts->size()) {
      throw BadRequest("'top_n' must be an integer from 1 to the number of texts (" +
                       std::to_string(texts->size()) + ")");
    }
    out.top_n = top_n->get<std::size_t>();
  }
  return out;
}

PredictRequest ParsePredictRequest(std::string_view body, const std::string& default_model) {
  const json request = ParseJsonObject(body);
  PredictRequest out;
  out.score = ParseScoreCall(request, default_model);
  const auto inputs = request.find("inputs");
  if (inputs == request.end()) throw BadRequest("'inputs' is required");
  std::vector<const json*> sequences;
  if (IsSequence(*inputs)) {
    sequences.push_back(&*inputs);
  } else if (inputs->is_array() && !inputs->empty() && std::ranges::all_of(*inputs, IsSequence)) {
    out.batch = true;
    for (const json& s : *inputs) sequences.push_back(&s);
  } else {
    throw BadRequest(
        "'inputs' must be a text, a pair [text, text], or a non-empty array of texts and pairs");
  }
  std::size_t pairs = 0;
  for (const json* s : sequences) {
    const bool pair = s->is_array() && s->size() == 2;
    pairs += pair ? 1 : 0;
    out.score.call.texts.push_back(s->is_string() ? s->get<std::string>()
                                                  : (*s)[0].get<std::string>());
    if (pair) out.score.pairs.push_back((*s)[1].get<std::string>());
  }
  if (pairs != 0 && pairs != sequences.size()) {
    throw BadRequest(
        "'inputs' mixes single texts and pairs; send each kind in a request of its own");
  }
  return out;
}

std::string FormatRerankResponse(const RerankRequest& request, const Embeddings& scores) {
  json out = json::array();
  for (const Ranked& r : RankByScore(scores, request.top_n)) {
    json item = {{"index", r.index}, {"score", r.score}};
    if (request.return_text) item["text"] = request.score.pairs[r.index];
    out.push_back(std::move(item));
  }
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string FormatPredictResponse(const PredictRequest& request, const Embeddings& scores) {
  const auto& labels = scores.labels();
  json out = json::array();
  for (std::size_t i = 0; i < scores.size(); ++i) {
    const std::span<const float> row = scores[i];
    std::vector<std::size_t> order(row.size());
    std::iota(order.begin(), order.end(), 0);
    std::ranges::stable_sort(order, [&](std::size_t a, std::size_t b) { return row[a] > row[b]; });
    json predictions = json::array();
    for (const std::size_t k : order) {
      // A score reply names every label (the SDK refuses one that does not).
      predictions.push_back({{"score", row[k]}, {"label", labels[k]}});
    }
    if (!request.batch) return predictions.dump(-1, ' ', false, json::error_handler_t::replace);
    out.push_back(std::move(predictions));
  }
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace ember::gateway
