// libFuzzer target: ember's wire decoders (common/protocol.h Decode and every
// body Decode in common/messages.h) on arbitrary bytes. Input layout in
// fuzz/fuzz_input.h.
//
// Besides "no crash, no sanitizer report", it checks two properties:
//   * a decoder either succeeds or says why (a non-empty error), never both;
//   * what a decoder accepts survives Encode -> Decode unchanged.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "common/messages.h"
#include "common/protocol.h"
#include "common/reply_stats.h"
#include "common/request_header.h"
#include "fuzz/check.h"
#include "fuzz/fuzz_input.h"

namespace ember::fuzz {
namespace {

bool Same(const protocol::EmbedRequest& a, const protocol::EmbedRequest& b) {
  return a.model == b.model && a.version == b.version && a.inputs == b.inputs &&
         a.timeout_ms == b.timeout_ms && a.truncate == b.truncate && a.dimensions == b.dimensions &&
         a.prompt_name == b.prompt_name && a.task == b.task && a.text_pairs == b.text_pairs &&
         a.raw_scores == b.raw_scores && a.skip_special_tokens == b.skip_special_tokens;
}
bool Same(const protocol::EmbedReply& a, const protocol::EmbedReply& b) {
  // Compare vectors bitwise: NaN payloads must survive too.
  return a.model == b.model && a.version == b.version && a.worker == b.worker && a.dim == b.dim &&
         a.count == b.count && a.batch_size == b.batch_size && a.tokens == b.tokens &&
         a.labels == b.labels && a.token_ids == b.token_ids && a.token_pieces == b.token_pieces &&
         a.token_spans == b.token_spans && a.texts == b.texts && a.rows == b.rows &&
         a.indices == b.indices && a.data.size() == b.data.size() &&
         std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)) == 0;
}
bool Same(const protocol::ErrorBody& a, const protocol::ErrorBody& b) {
  return a.code == b.code && a.message == b.message;
}
bool SameModels(const std::vector<protocol::ModelInfo>& a,
                const std::vector<protocol::ModelInfo>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name || a[i].version != b[i].version || a[i].dim != b[i].dim ||
        a[i].state != b[i].state || a[i].memory_bytes != b[i].memory_bytes ||
        a[i].message != b[i].message) {
      return false;
    }
  }
  return true;
}
bool Same(const protocol::ReadyBody& a, const protocol::ReadyBody& b) {
  // weight is compared bitwise so that NaN equals itself.
  return a.device == b.device && a.capacity == b.capacity &&
         std::memcmp(&a.weight, &b.weight, sizeof a.weight) == 0 && SameModels(a.models, b.models);
}
bool Same(const protocol::ControlRequest& a, const protocol::ControlRequest& b) {
  return a.op == b.op && a.model == b.model && a.version == b.version && a.workers == b.workers &&
         a.timeout_ms == b.timeout_ms;
}
bool Same(const protocol::ControlResult& a, const protocol::ControlResult& b) {
  return a.worker == b.worker && a.ok == b.ok && a.code == b.code && a.message == b.message &&
         a.version == b.version && a.memory_bytes == b.memory_bytes && a.millis == b.millis;
}
bool Same(const protocol::ControlReply& a, const protocol::ControlReply& b) {
  if (a.op != b.op || a.model != b.model || a.results.size() != b.results.size()) return false;
  for (std::size_t i = 0; i < a.results.size(); ++i) {
    if (!Same(a.results[i], b.results[i])) return false;
  }
  return true;
}
bool Same(const protocol::StatusReply& a, const protocol::StatusReply& b) {
  if (a.router_version != b.router_version || a.requests != b.requests ||
      a.workers.size() != b.workers.size() || a.models.size() != b.models.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.workers.size(); ++i) {
    const auto &x = a.workers[i], &y = b.workers[i];
    if (x.id != y.id || x.device != y.device || !SameModels(x.models, y.models) ||
        x.capacity != y.capacity || x.in_flight != y.in_flight || x.completed != y.completed ||
        x.failed != y.failed || x.last_seen_ms != y.last_seen_ms) {
      return false;
    }
  }
  for (std::size_t i = 0; i < a.models.size(); ++i) {
    const auto &x = a.models[i], &y = b.models[i];
    if (x.name != y.name || x.policy != y.policy || x.queued != y.queued ||
        x.workers != y.workers) {
      return false;
    }
  }
  return true;
}

// Decodes `bytes` as a T; if accepted, re-encodes and checks the round trip.
template <class T>
void DecodeBody(std::string_view bytes) {
  T body;
  std::string error;
  const bool ok = protocol::Decode(bytes, &body, &error);
  Check(ok == error.empty(), "a decoder must give a reason exactly when it fails");
  if (!ok) return;
  const std::string again = protocol::Encode(body);
  T decoded;
  Check(protocol::Decode(again, &decoded, &error), "an encoded body must decode");
  Check(Same(body, decoded), "Encode -> Decode must give back what was decoded");
}

// The router's metrics read of a reply must not fail on a reply the full decoder accepts, and
// must agree with it on the batch size and the tokens.
void CompareReplyStats(std::string_view bytes) {
  protocol::EmbedReply full;
  protocol::EmbedReplyStats stats;
  std::string error;
  const bool stats_ok = protocol::Decode(bytes, &stats);
  if (!protocol::Decode(bytes, &full, &error)) return;
  std::uint64_t tokens = 0;
  for (const std::uint32_t t : full.tokens) tokens += t;
  Check(stats_ok && stats.batch_size == full.batch_size && stats.tokens == tokens,
        "the metrics read of a reply agrees with the full decoder");
}

// The router's header read must accept exactly what the full decoder accepts, with the same
// reason, and agree on every field it reads.
void CompareHeader(std::string_view bytes) {
  protocol::EmbedRequest full;
  protocol::EmbedRequestHeader header;
  std::string full_error, header_error;
  const bool full_ok = protocol::Decode(bytes, &full, &full_error);
  const bool header_ok = protocol::Decode(bytes, &header, &header_error);
  Check(full_ok == header_ok, "the header read accepts exactly what the full decoder accepts");
  Check(full_error == header_error, "the header read gives the full decoder's reason");
  if (!full_ok) return;
  // Of the inputs and the pairs' texts: the router holds both to its limit on a text's bytes.
  std::size_t longest = 0, longest_index = 0;
  for (const auto* texts : {&full.inputs, &full.text_pairs}) {
    for (std::size_t i = 0; i < texts->size(); ++i) {
      if ((*texts)[i].size() > longest) {
        longest = (*texts)[i].size();
        longest_index = i;
      }
    }
  }
  Check(header.model == full.model && header.version == full.version &&
            header.timeout_ms == full.timeout_ms && header.truncate == full.truncate &&
            header.task == full.task && header.count == full.inputs.size() &&
            header.pairs == full.text_pairs.size() && header.longest_bytes == longest &&
            header.longest_index == longest_index,
        "the header read agrees with the full decoder on every field");
}

void DecodeAll(std::string_view body) {
  CompareHeader(body);
  DecodeBody<protocol::EmbedRequest>(body);
  DecodeBody<protocol::EmbedReply>(body);
  CompareReplyStats(body);
  DecodeBody<protocol::ErrorBody>(body);
  DecodeBody<protocol::ReadyBody>(body);
  DecodeBody<protocol::ControlRequest>(body);
  DecodeBody<protocol::StatusReply>(body);
  DecodeBody<protocol::ControlResult>(body);
  DecodeBody<protocol::ControlReply>(body);
}

void DecodeFrames(std::string_view data) {
  const auto parts = SplitFrames(data);
  std::vector<zmq::message_t> frames;
  for (std::string_view f : parts) frames.emplace_back(f.data(), f.size());
  std::string error;
  const auto message = protocol::Decode(std::span<zmq::message_t>(frames), &error);
  Check(message.has_value() == error.empty(), "frame decoding gives a reason exactly on failure");
  if (!message) return;
  // What decodes must encode to the same frames (the body frame moved into the message).
  // Encode writes the four frames; a REQUEST's budget (frame 4) is checked apart.
  auto encoded = protocol::Encode(message->command, message->request_id, message->body());
  const bool budget = parts.size() == protocol::kMaxFrameCount;
  Check(encoded.size() == (budget ? protocol::kFrameCount : parts.size()),
        "frame count survives a round trip");
  for (std::size_t i = 0; i < encoded.size(); ++i) {
    Check(encoded[i].to_string_view() == parts[i], "frames survive a round trip");
  }
  if (budget) {
    std::uint32_t ms = 0;
    Check(parts[4].size() == sizeof ms, "a budget frame is 4 bytes");
    std::memcpy(&ms, parts[4].data(), sizeof ms);
    Check(ms == message->budget_ms && ms > 0 && message->command == protocol::Command::kRequest,
          "a budget decodes as sent, non-zero, on a REQUEST");
  }
  DecodeAll(message->body());
}

}  // namespace
}  // namespace ember::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using ember::fuzz::Mode;
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (static_cast<Mode>(data[0] % static_cast<std::uint8_t>(Mode::kCount))) {
    case Mode::kFrames:
      ember::fuzz::DecodeFrames(rest);
      break;
    case Mode::kEmbedRequest:
      ember::fuzz::DecodeBody<ember::protocol::EmbedRequest>(rest);
      break;
    case Mode::kEmbedReply:
      ember::fuzz::DecodeBody<ember::protocol::EmbedReply>(rest);
      break;
    case Mode::kErrorBody:
      ember::fuzz::DecodeBody<ember::protocol::ErrorBody>(rest);
      break;
    case Mode::kReadyBody:
      ember::fuzz::DecodeBody<ember::protocol::ReadyBody>(rest);
      break;
    case Mode::kControlRequest:
      ember::fuzz::DecodeBody<ember::protocol::ControlRequest>(rest);
      break;
    case Mode::kStatusReply:
      ember::fuzz::DecodeBody<ember::protocol::StatusReply>(rest);
      break;
    case Mode::kControlResult:
      ember::fuzz::DecodeBody<ember::protocol::ControlResult>(rest);
      break;
    case Mode::kControlReply:
      ember::fuzz::DecodeBody<ember::protocol::ControlReply>(rest);
      break;
    case Mode::kCount:
      break;
  }
  return 0;
}
