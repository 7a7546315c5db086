#include <string>
#include <vector>

#include "common/messages.h"
#include "common/protocol.h"
#include "fuzz/fuzz_input.h"
#include "fuzz/seeds.h"

namespace ember::fuzz {
namespace {

std::string WithMode(Mode mode, const std::string& body) {
  return std::string(1, static_cast<char>(mode)) + body;
}

std::vector<std::string> Frames(protocol::Command command, std::uint64_t id,
                                const std::string& body) {
  std::vector<std::string> frames;
  for (auto& f : protocol::Encode(command, id, body)) frames.push_back(f.to_string());
  return frames;
}

}  // namespace

std::vector<std::string> ProtocolSeeds() {
  // Fields are set one by one (not aggregate-initialized) so that new fields
  // in common/messages.h do not break the seeds.
  protocol::EmbedRequest request;
  request.model = "tiny";
  request.version = 2;
  request.inputs = {"hello", "你好", ""};
  request.timeout_ms = 1500;
  request.truncate = false;
  request.dimensions = 64;
  request.prompt_name = "query";
  // A cross-encoder's score of pairs, and its reply with labels.
  protocol::EmbedRequest score;
  score.model = "reranker";
  score.inputs = {"query", "query"};
  score.task = protocol::Task::kScore;
  score.text_pairs = {"a passage", ""};
  score.raw_scores = true;
  protocol::EmbedReply scores;
  scores.model = "classifier";
  scores.dim = 2;
  scores.count = 1;
  scores.data = {0.25f, 0.75f};
  scores.labels = {"negative", "positive"};
  // A tokenization and its reply.
  protocol::EmbedRequest tokenize;
  tokenize.model = "minilm";
  tokenize.inputs = {"Hi"};
  tokenize.task = protocol::Task::kTokenize;
  protocol::EmbedReply tokens;
  tokens.model = "minilm";
  tokens.count = 1;
  tokens.tokens = {3};
  tokens.token_ids = {101, 7632, 102};
  tokens.token_pieces = {"[CLS]", "hi", "[SEP]"};
  tokens.token_spans = {0, 0, 0, 2, 0, 0};
  // A decode and its reply.
  protocol::EmbedRequest decode;
  decode.model = "minilm";
  decode.inputs = {"101 7632 102", ""};
  decode.task = protocol::Task::kDecode;
  decode.skip_special_tokens = false;
  protocol::EmbedReply texts;
  texts.model = "minilm";
  texts.count = 2;
  texts.texts = {"[CLS] hi [SEP]", ""};
  protocol::EmbedReply reply;
  reply.model = "tiny";
  reply.version = 1;
  reply.worker = "w1";
  reply.dim = 2;
  reply.count = 2;
  reply.batch_size = 2;
  reply.data = {0.5f, -1.0f, 2.0f, 0.0f};
  reply.tokens = {4, 9};
  protocol::ErrorBody error;
  error.code = ErrorCode::kOverloaded;
  error.message = "retry later";
  protocol::ModelInfo tiny, minilm;
  tiny.name = "tiny";
  tiny.dim = 64;
  minilm.name = "minilm";
  minilm.version = 3;
  minilm.dim = 384;
  protocol::ReadyBody ready;
  ready.device = "cuda:0";
  ready.capacity = 64;
  ready.weight = 1.5;
  ready.models = {tiny, minilm};
  protocol::ControlRequest control;
  control.op = protocol::ControlOp::kStatus;
  protocol::ControlRequest load;
  load.op = protocol::ControlOp::kLoad;
  load.model = "tiny";
  load.version = 2;
  load.workers = {"w1", "w2"};
  load.timeout_ms = 60'000;
  protocol::ControlResult result;
  result.worker = "w1";
  result.code = ErrorCode::kUnknownModel;
  result.message = "no such version";
  result.version = 2;
  result.memory_bytes = 1 << 20;
  result.millis = 15;
  protocol::ControlReply control_reply;
  control_reply.op = protocol::ControlOp::kLoad;
  control_reply.model = "tiny";
  control_reply.results = {result, result};
  control_reply.results[1].ok = true;
  protocol::StatusReply status;
  status.router_version = "ember-router 0.1";
  status.requests = 7;
  protocol::WorkerStatus worker;
  worker.id = "w1";
  worker.device = "cpu";
  worker.models = ready.models;
  worker.capacity = 4;
  status.workers = {worker};
  protocol::ModelStatus model_status;
  model_status.name = "tiny";
  model_status.policy = "adaptive";
  model_status.queued = 3;
  model_status.workers = 1;
  status.models = {model_status};

  std::vector<std::string> seeds = {
      WithMode(Mode::kEmbedRequest, protocol::Encode(request)),
      WithMode(Mode::kEmbedReply, protocol::Encode(reply)),
      WithMode(Mode::kEmbedRequest, protocol::Encode(score)),
      WithMode(Mode::kEmbedReply, protocol::Encode(scores)),
      WithMode(Mode::kEmbedRequest, protocol::Encode(tokenize)),
      WithMode(Mode::kEmbedReply, protocol::Encode(tokens)),
      WithMode(Mode::kEmbedRequest, protocol::Encode(decode)),
      WithMode(Mode::kEmbedReply, protocol::Encode(texts)),
      WithMode(Mode::kErrorBody, protocol::Encode(error)),
      WithMode(Mode::kReadyBody, protocol::Encode(ready)),
      WithMode(Mode::kControlRequest, protocol::Encode(control)),
      WithMode(Mode::kStatusReply, protocol::Encode(status)),
      WithMode(Mode::kControlRequest, protocol::Encode(load)),
      WithMode(Mode::kControlResult, protocol::Encode(result)),
      WithMode(Mode::kControlReply, protocol::Encode(control_reply)),
      JoinFrames(Frames(protocol::Command::kRequest, 1, protocol::Encode(request))),
      JoinFrames(Frames(protocol::Command::kReply, 2, protocol::Encode(reply))),
      JoinFrames(Frames(protocol::Command::kError, 3, protocol::Encode(error))),
      JoinFrames(Frames(protocol::Command::kReady, 0, protocol::Encode(ready))),
      JoinFrames(Frames(protocol::Command::kHeartbeat, 0, "")),
      JoinFrames(Frames(protocol::Command::kControl, 4, protocol::Encode(control))),
      // A router's REQUEST to a worker, with its budget (frame 4: 250 ms).
      JoinFrames([&] {
        auto frames = Frames(protocol::Command::kRequest, 5, protocol::Encode(request));
        frames.emplace_back("\xfa\x00\x00\x00", 4);
        return frames;
      }()),
  };
  return seeds;
}

}  // namespace ember::fuzz
