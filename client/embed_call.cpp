#include "client/embed_call.h"

#include "common/messages.h"

namespace ember::embed_call {

namespace {

protocol::EmbedRequest RequestOf(std::string_view model, std::vector<std::string> texts,
                                 const EmbedOptions& options) {
  protocol::EmbedRequest request;
  request.model = std::string(model);
  request.version = options.version;
  request.inputs = std::move(texts);
  request.timeout_ms = static_cast<std::uint32_t>(options.timeout.count());
  request.truncate = options.truncate;
  request.dimensions = options.dimensions;
  request.prompt_name = options.prompt_name;
  return request;
}

}  // namespace

protocol::Task EmbedTask(const EmbedOptions& options) {
  switch (options.output) {
    case EmbedOutput::kSparse:
      return protocol::Task::kSparse;
    case EmbedOutput::kMultiVector:
      return protocol::Task::kMultiVector;
    case EmbedOutput::kDense:
      break;
  }
  return protocol::Task::kEmbed;
}

std::string EncodeRequest(std::string_view model, std::vector<std::string> texts,
                          const EmbedOptions& options) {
  protocol::EmbedRequest request = RequestOf(model, std::move(texts), options);
  request.task = EmbedTask(options);
  return protocol::Encode(request);
}

std::string EncodeTokenizeRequest(std::string_view model, std::vector<std::string> texts,
                                  const EmbedOptions& options) {
  protocol::EmbedRequest request = RequestOf(model, std::move(texts), options);
  request.task = protocol::Task::kTokenize;
  return protocol::Encode(request);
}

std::string EncodeDecodeRequest(std::string_view model,
                                const std::vector<std::vector<std::uint32_t>>& ids,
                                const EmbedOptions& options) {
  std::vector<std::string> inputs;
  inputs.reserve(ids.size());
  for (const auto& sequence : ids) {
    std::string& text = inputs.emplace_back();
    for (const std::uint32_t id : sequence) text += (text.empty() ? "" : " ") + std::to_string(id);
  }
  protocol::EmbedRequest request = RequestOf(model, std::move(inputs), options);
  request.task = protocol::Task::kDecode;
  request.skip_special_tokens = options.skip_special_tokens;
  return protocol::Encode(request);
}

std::string EncodeScoreRequest(std::string_view model, std::vector<std::string> texts,
                               std::vector<std::string> pairs, const EmbedOptions& options) {
  protocol::EmbedRequest request = RequestOf(model, std::move(texts), options);
  request.task = protocol::Task::kScore;
  request.text_pairs = std::move(pairs);
  request.raw_scores = options.raw_scores;
  return protocol::Encode(request);
}

Error ErrorOf(std::string_view body) {
  protocol::ErrorBody e;
  std::string error;
  if (!protocol::Decode(body, &e, &error)) {
    return Error(ErrorCode::kInternal, "malformed error reply: " + error);
  }
  return Error(e.code, e.message);
}

Embeddings EmbeddingsOf(std::string_view body, std::size_t texts, int attempts, std::string router,
                        protocol::Task task) {
  protocol::EmbedReply reply;
  std::string error;
  if (!protocol::Decode(body, &reply, &error)) {
    throw Error(ErrorCode::kInternal, "malformed embedding reply: " + error);
  }
  if (reply.count != texts) {
    throw Error(ErrorCode::kInternal, "reply has " + std::to_string(reply.count) + " vectors for " +
                                          std::to_string(texts) + " texts");
  }
  // The decoder checked that tokens, when present, add up; here that the task's part is there.
  bool answered = reply.labels.empty() && reply.rows.empty();  // vectors
  if (task == protocol::Task::kScore) answered = !reply.labels.empty();
  if (task == protocol::Task::kTokenize) answered = !reply.tokens.empty() && reply.dim == 0;
  if (task == protocol::Task::kDecode) answered = reply.texts.size() == texts && reply.dim == 0;
  if (task == protocol::Task::kSparse) {
    answered =
        reply.rows.size() == texts && reply.dim == 1 && reply.indices.size() == reply.data.size();
  }
  if (task == protocol::Task::kMultiVector) {
    answered = reply.rows.size() == texts && reply.indices.empty();
  }
  if (!answered) {
    throw Error(ErrorCode::kInternal,
                "worker '" + reply.worker + "' answered task '" +
                    std::string(protocol::TaskName(task)) +
                    "' with something else (an ember-worker older than the task?)");
  }
  return Embeddings(std::move(reply), attempts, std::move(router));
}

}  // namespace ember::embed_call
