// Wire format: every body round-trips, and malformed frames and bodies are
// rejected with a reason instead of crashing or being half-accepted.
#include "common/protocol.h"

#include <gtest/gtest.h>

#include <cstring>
#include <msgpack.hpp>

#include "common/messages.h"
#include "common/reply_stats.h"

namespace ember::protocol {
namespace {

std::vector<zmq::message_t> Frames(std::initializer_list<std::string_view> parts) {
  std::vector<zmq::message_t> frames;
  for (auto p : parts) frames.emplace_back(p.data(), p.size());
  return frames;
}

std::string Id(std::uint64_t id) { return std::string(reinterpret_cast<char*>(&id), 8); }
const std::string kHeader = std::string("EMBER") + char{1};

TEST(ProtocolTest, FramesRoundTrip) {
  auto frames = Encode(Command::kRequest, 0x0123456789abcdefULL, "body bytes");
  ASSERT_EQ(frames.size(), kFrameCount);
  EXPECT_EQ(frames[0].to_string(), kHeader);
  std::string error;
  auto message = Decode(frames, &error);
  ASSERT_TRUE(message) << error;
  EXPECT_EQ(message->command, Command::kRequest);
  EXPECT_EQ(message->request_id, 0x0123456789abcdefULL);
  EXPECT_EQ(message->body(), "body bytes");
}

TEST(ProtocolTest, EveryCommandRoundTrips) {
  for (auto c : {Command::kRequest, Command::kReply, Command::kError, Command::kReady,
                 Command::kHeartbeat, Command::kDisconnect, Command::kControl}) {
    auto frames = Encode(c, 7, "");
    std::string error;
    auto message = Decode(frames, &error);
    ASSERT_TRUE(message) << CommandName(c) << ": " << error;
    EXPECT_EQ(message->command, c);
    EXPECT_NE(CommandName(c), "UNKNOWN");
  }
}

// A router's REQUEST to a worker may carry the time it has left as frame 4.
TEST(ProtocolTest, ARequestMayCarryTheRoutersBudget) {
  std::string error;
  auto frames = Frames({kHeader, "\x01", Id(9), "body", std::string("\xfa\x00\x00\x00", 4)});
  const auto message = Decode(frames, &error);
  ASSERT_TRUE(message) << error;
  EXPECT_EQ(message->budget_ms, 250u);
  EXPECT_EQ(message->body(), "body");
  auto plain = Encode(Command::kRequest, 9, "body");
  EXPECT_EQ(Decode(plain, &error)->budget_ms, 0u) << "none without frame 4";
}

TEST(ProtocolTest, RejectsMalformedFrames) {
  struct Case {
    const char* what;
    std::vector<zmq::message_t> frames;
    const char* reason;
  };
  const std::string id = Id(1);
  std::vector<Case> cases;
  cases.push_back({"no frames", {}, "frames"});
  cases.push_back({"too few", Frames({kHeader, "\x01", id}), "frames"});
  cases.push_back({"too many", Frames({kHeader, "\x01", id, "", "abcd", ""}), "frames"});
  const std::string budget("\xfa\x00\x00\x00", 4);  // 250 ms
  cases.push_back({"budget on a REPLY", Frames({kHeader, "\x02", id, "", budget}), "budget"});
  cases.push_back({"short budget", Frames({kHeader, "\x01", id, "", "ab"}), "budget"});
  cases.push_back(
      {"zero budget", Frames({kHeader, "\x01", id, "", std::string(4, '\0')}), "budget"});
  cases.push_back({"bad tag", Frames({"EMBRR\x01", "\x01", id, ""}), "header"});
  cases.push_back({"short tag", Frames({"EMB", "\x01", id, ""}), "header"});
  cases.push_back({"future version", Frames({"EMBER\x02", "\x01", id, ""}), "version 2"});
  cases.push_back({"unknown command", Frames({kHeader, "\x09", id, ""}), "command"});
  cases.push_back(
      {"zero command", Frames({kHeader, std::string_view("\0", 1), id, ""}), "command"});
  cases.push_back({"two-byte command", Frames({kHeader, "\x01\x01", id, ""}), "command"});
  cases.push_back({"short id", Frames({kHeader, "\x01", "1234", ""}), "request id"});
  for (auto& c : cases) {
    std::string error;
    EXPECT_FALSE(Decode(c.frames, &error)) << c.what;
    EXPECT_NE(error.find(c.reason), std::string::npos) << c.what << ": " << error;
  }
}

TEST(MessagesTest, EmbedRequestRoundTrips) {
  EmbedRequest in{"minilm", 3, {"hello", "", "世界"}, 1500, false};
  EmbedRequest out;
  std::string error;
  ASSERT_TRUE(Decode(Encode(in), &out, &error)) << error;
  EXPECT_EQ(out.model, "minilm");
  EXPECT_EQ(out.version, 3u);
  EXPECT_EQ(out.inputs, in.inputs);
  EXPECT_EQ(out.timeout_ms, 1500u);
  EXPECT_FALSE(out.truncate);
}

TEST(MessagesTest, EmbedRequestOptionalFieldsDefault) {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> pk(buffer);
  pk.pack_map(2);
  pk.pack(std::string("model"));
  pk.pack(std::string("m"));
  pk.pack(std::string("inputs"));
  pk.pack(std::vector<std::string>{"a"});
  EmbedRequest out;
  std::string error;
  ASSERT_TRUE(Decode(std::string_view(buffer.data(), buffer.size()), &out, &error)) << error;
  EXPECT_EQ(out.version, 0u);
  EXPECT_EQ(out.timeout_ms, 0u);
  EXPECT_TRUE(out.truncate);
}

TEST(MessagesTest, EmbedReplyCarriesRawFloats) {
  EmbedReply in;
  in.model = "m";
  in.version = 2;
  in.worker = "w1";
  in.dim = 3;
  in.count = 2;
  in.data = {1.0f, -2.5f, 3.25f, 0.0f, 1e-30f, -0.0f};
  const std::string bytes = Encode(in);
  // The six floats appear verbatim (little-endian float32), not as a list.
  std::string raw(reinterpret_cast<const char*>(in.data.data()), in.data.size() * 4);
  EXPECT_NE(bytes.find(raw), std::string::npos);
  EmbedReply out;
  std::string error;
  ASSERT_TRUE(Decode(bytes, &out, &error)) << error;
  EXPECT_EQ(out.data, in.data);
  EXPECT_EQ(out.dim, 3u);
  EXPECT_EQ(out.count, 2u);
  EXPECT_EQ(out.worker, "w1");
}

// Issue 26: per-text token counts travel with the vectors; a reply without them (an older
// worker) still decodes, with none; a count per text or none at all.
TEST(MessagesTest, EmbedReplyCarriesTokenCounts) {
  EmbedReply in;
  in.model = "m";
  in.dim = 1;
  in.count = 2;
  in.data = {1, 2};
  in.tokens = {3, 12};
  EmbedReply out;
  std::string error;
  ASSERT_TRUE(Decode(Encode(in), &out, &error)) << error;
  EXPECT_EQ(out.tokens, (std::vector<std::uint32_t>{3, 12}));
  in.tokens.clear();
  out = {};
  ASSERT_TRUE(Decode(Encode(in), &out, &error)) << error;
  EXPECT_TRUE(out.tokens.empty());
  in.tokens = {3};
  EXPECT_FALSE(Decode(Encode(in), &out, &error));
  EXPECT_NE(error.find("'tokens' has 1 counts for 2 texts"), std::string::npos) << error;
}

// Issue 26: a cross-encoder's score of pairs, and its reply naming the labels. Each field
// travels on its own (raw_scores without a task, as a fuzzer once sent, comes back as sent).
TEST(MessagesTest, ScoresOfPairsRoundTrip) {
  EmbedRequest in{.model = "reranker", .inputs = {"q", "q"}};
  in.task = Task::kScore;
  in.text_pairs = {"a passage", ""};
  EmbedRequest out;
  std::string error;
  for (const bool raw : {false, true}) {
    in.raw_scores = raw;
    ASSERT_TRUE(Decode(Encode(in), &out, &error)) << error;
    EXPECT_EQ(out.task, Task::kScore);
    EXPECT_EQ(out.text_pairs, in.text_pairs);
    EXPECT_EQ(out.raw_scores, raw);
  }
  const EmbedRequest raw_only{.model = "m", .inputs = {"a"}, .raw_scores = true};
  ASSERT_TRUE(Decode(Encode(raw_only), &out, &error)) << error;
  EXPECT_EQ(out.task, Task::kEmbed);
  EXPECT_TRUE(out.raw_scores);

  EmbedReply reply;
  reply.model = "classifier";
  reply.dim = 2;
  reply.count = 1;
  reply.data = {0.25f, 0.75f};
  reply.labels = {"negative", "positive"};
  EmbedReply decoded;
  ASSERT_TRUE(Decode(Encode(reply), &decoded, &error)) << error;
  EXPECT_EQ(decoded.labels, reply.labels);
  reply.labels = {"only one"};
  EXPECT_FALSE(Decode(Encode(reply), &decoded, &error));
  EXPECT_NE(error.find("'labels' names 1 scores of 2"), std::string::npos) << error;
}

// Issue 26: a kTokenize reply carries every input's tokens, their pieces and spans, and is
// refused when they do not add up to the counted tokens.
TEST(MessagesTest, TokenizeRepliesRoundTrip) {
  EmbedRequest request{.model = "m", .inputs = {"Hi", "a b"}};
  request.task = Task::kTokenize;
  EmbedRequest decoded_request;
  std::string error;
  ASSERT_TRUE(Decode(Encode(request), &decoded_request, &error)) << error;
  EXPECT_EQ(decoded_request.task, Task::kTokenize);

  EmbedReply reply;
  reply.model = "m";
  reply.count = 2;
  reply.tokens = {3, 4};
  reply.token_ids = {101, 7632, 102, 101, 1037, 1038, 102};
  reply.token_pieces = {"[CLS]", "hi", "[SEP]", "[CLS]", "a", "b", "[SEP]"};
  reply.token_spans = {0, 0, 0, 2, 0, 0, 0, 0, 0, 1, 2, 3, 0, 0};
  EmbedReply out;
  ASSERT_TRUE(Decode(Encode(reply), &out, &error)) << error;
  EXPECT_EQ(out.dim, 0u);
  EXPECT_EQ(out.token_ids, reply.token_ids);
  EXPECT_EQ(out.token_pieces, reply.token_pieces);
  EXPECT_EQ(out.token_spans, reply.token_spans);
  reply.token_spans.pop_back();
  EXPECT_FALSE(Decode(Encode(reply), &out, &error));
  EXPECT_NE(error.find("must hold every counted token (7)"), std::string::npos) << error;
}

// Issue 26: a kDecode request (ids as decimal text, one sequence per input) and its texts.
TEST(MessagesTest, DecodeRepliesRoundTrip) {
  EmbedRequest request{.model = "m", .inputs = {"101 7592 102"}};
  request.task = Task::kDecode;
  request.skip_special_tokens = false;
  EmbedRequest decoded;
  std::string error;
  ASSERT_TRUE(Decode(Encode(request), &decoded, &error)) << error;
  EXPECT_EQ(decoded.task, Task::kDecode);
  EXPECT_FALSE(decoded.skip_special_tokens);
  EmbedReply reply;
  reply.model = "m";
  reply.count = 1;
  reply.texts = {"[CLS] hello [SEP]"};
  EmbedReply out;
  ASSERT_TRUE(Decode(Encode(reply), &out, &error)) << error;
  EXPECT_EQ(out.texts, reply.texts);
  reply.texts.push_back("two");
  EXPECT_FALSE(Decode(Encode(reply), &out, &error));
  EXPECT_NE(error.find("'texts' has 2 texts for 1 inputs"), std::string::npos) << error;
}

// Issue 35: bge-m3's token-level outputs. A sparse reply: one row of dim 1 per entry, its token
// id in `indices`; a multi-vector reply: rows of dim floats per input. `data` holds the rows.
TEST(MessagesTest, SparseAndMultiVectorRepliesRoundTrip) {
  for (const Task task : {Task::kSparse, Task::kMultiVector}) {
    EmbedRequest request{.model = "m", .inputs = {"a"}};
    request.task = task;
    EmbedRequest decoded;
    std::string error;
    ASSERT_TRUE(Decode(Encode(request), &decoded, &error)) << error;
    EXPECT_EQ(decoded.task, task);
  }
  EmbedReply sparse;
  sparse.model = "m";
  sparse.dim = 1;
  sparse.count = 3;
  sparse.tokens = {4, 3, 2};
  sparse.rows = {2, 0, 1};
  sparse.indices = {6, 90, 7};
  sparse.data = {0.5f, 0.25f, 1.0f};
  EmbedReply out;
  std::string error;
  ASSERT_TRUE(Decode(Encode(sparse), &out, &error)) << error;
  EXPECT_EQ(out.rows, sparse.rows);
  EXPECT_EQ(out.indices, sparse.indices);
  EXPECT_EQ(out.data, sparse.data);
  sparse.indices.pop_back();
  EXPECT_FALSE(Decode(Encode(sparse), &out, &error));
  EXPECT_NE(error.find("'indices' name each row (3)"), std::string::npos) << error;

  EmbedReply multi;
  multi.model = "m";
  multi.dim = 2;
  multi.count = 2;
  multi.rows = {1, 2};
  multi.data = {1, 2, 3, 4, 5, 6};
  ASSERT_TRUE(Decode(Encode(multi), &out, &error)) << error;
  EXPECT_EQ(out.data, multi.data);
  EXPECT_TRUE(out.indices.empty());
  multi.data.resize(4);  // count x dim, not rows x dim
  EXPECT_FALSE(Decode(Encode(multi), &out, &error));
  EXPECT_NE(error.find("for rows x dim"), std::string::npos) << error;
  multi.rows = {3};
  EXPECT_FALSE(Decode(Encode(multi), &out, &error));
  EXPECT_NE(error.find("'rows' must count each input's rows (2 inputs)"), std::string::npos)
      << error;
}

// The router's metrics read of a reply (common/reply_stats.h) finds what the full decoder
// finds, whatever else the reply carries (labels, token ids, texts) and in any key order.
TEST(MessagesTest, ReplyStatsAgreeWithTheFullDecoder) {
  std::vector<EmbedReply> replies(4);
  replies[0].model = "m";
  replies[0].dim = 2;
  replies[0].count = 2;
  replies[0].batch_size = 7;
  replies[0].data = {1, 2, 3, 4};
  replies[1] = replies[0];
  replies[1].tokens = {3, 9};
  replies[2] = replies[1];
  replies[2].labels = {"a", "b"};
  replies[3] = replies[1];
  replies[3].token_ids = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  replies[3].token_pieces = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"};
  replies[3].token_spans.assign(24, 1);
  replies[3].texts = {"x", "y"};
  for (std::size_t i = 0; i < replies.size(); ++i) {
    const std::string body = Encode(replies[i]);
    EmbedReply full;
    std::string error;
    ASSERT_TRUE(Decode(body, &full, &error)) << i << ": " << error;
    EmbedReplyStats stats;
    ASSERT_TRUE(Decode(body, &stats)) << i;
    EXPECT_EQ(stats.batch_size, full.batch_size) << i;
    std::uint64_t tokens = 0;
    for (const std::uint32_t t : full.tokens) tokens += t;
    EXPECT_EQ(stats.tokens, tokens) << i;
  }
  // Keys in another order, and a second "tokens" (only the first counts, as in Decode).
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> pk(buffer);
  pk.pack_map(4);
  pk.pack("tokens");
  pk.pack(std::vector<std::uint32_t>{5, 6});
  pk.pack("data");
  pk.pack_bin(0);
  pk.pack("batch_size");
  pk.pack(3);
  pk.pack("tokens");
  pk.pack(std::vector<std::uint32_t>{100});
  EmbedReplyStats stats;
  ASSERT_TRUE(Decode(std::string_view(buffer.data(), buffer.size()), &stats));
  EXPECT_EQ(stats.batch_size, 3u);
  EXPECT_EQ(stats.tokens, 11u);
  EXPECT_FALSE(Decode(std::string_view("\x93\x01\x02\x03", 4), &stats)) << "not a map";
  EXPECT_FALSE(Decode(std::string_view("\xc1", 1), &stats)) << "not msgpack";
}

TEST(MessagesTest, EmbedReplyRejectsWrongDataSize) {
  EmbedReply in;
  in.model = "m";
  in.dim = 4;
  in.count = 2;
  in.data = {1, 2, 3, 4, 5, 6, 7};  // one short
  EmbedReply out;
  std::string error;
  EXPECT_FALSE(Decode(Encode(in), &out, &error));
  EXPECT_NE(error.find("expected 32"), std::string::npos) << error;
}

TEST(MessagesTest, ErrorBodyRoundTripsEveryCode) {
  for (auto code :
       {ErrorCode::kBadRequest, ErrorCode::kUnknownModel, ErrorCode::kOverloaded,
        ErrorCode::kTimeout, ErrorCode::kUnavailable, ErrorCode::kTooLong, ErrorCode::kInternal}) {
    ErrorBody out;
    std::string error;
    ASSERT_TRUE(Decode(Encode(ErrorBody{code, "why"}), &out, &error)) << error;
    EXPECT_EQ(out.code, code);
    EXPECT_EQ(out.message, "why");
    EXPECT_EQ(ParseErrorCode(ErrorCodeName(code)), code);
  }
}

TEST(MessagesTest, ReadyAndStatusRoundTrip) {
  ReadyBody ready;
  ready.device = "cuda:1";
  ready.capacity = 64;
  ready.weight = 2.5;
  ready.session = 0x1234'5678'9abc'def0;
  ready.rss_bytes = 5'000'000'000;
  ready.models = {{.name = "a", .version = 1, .dim = 384},
                  {.name = "b",
                   .version = 7,
                   .dim = 768,
                   .state = ModelState::kFailed,
                   .memory_bytes = 90'000'000,
                   .message = "corrupt file"}};
  ReadyBody r;
  std::string error;
  ASSERT_TRUE(Decode(Encode(ready), &r, &error)) << error;
  EXPECT_EQ(r.device, "cuda:1");
  EXPECT_EQ(r.capacity, 64u);
  EXPECT_EQ(r.weight, 2.5);
  EXPECT_EQ(r.session, ready.session);
  EXPECT_EQ(r.rss_bytes, ready.rss_bytes);
  ASSERT_EQ(r.models.size(), 2u);
  EXPECT_EQ(r.models[0].state, ModelState::kReady);
  EXPECT_EQ(r.models[1].name, "b");
  EXPECT_EQ(r.models[1].version, 7u);
  EXPECT_EQ(r.models[1].dim, 768u);
  EXPECT_EQ(r.models[1].state, ModelState::kFailed);
  EXPECT_EQ(r.models[1].memory_bytes, 90'000'000u);
  EXPECT_EQ(r.models[1].message, "corrupt file");
  EXPECT_FALSE(r.holding.has_value()) << "a READY that holds nothing says so only when asked";
  ready.holding = std::vector<std::uint64_t>{7, 1ull << 40};
  ASSERT_TRUE(Decode(Encode(ready), &r, &error)) << error;
  EXPECT_EQ(r.holding, ready.holding);

  StatusReply status;
  status.router_version = "x";
  status.requests = 12;
  status.workers.push_back({"w", "cpu", ready.models, 8, 3, 100, 2, 250, 1.5, 4.25, 4.0, 9.5});
  status.models.push_back({"a", "adaptive", 17, 1});
  StatusReply s;
  ASSERT_TRUE(Decode(Encode(status), &s, &error)) << error;
  ASSERT_EQ(s.workers.size(), 1u);
  EXPECT_EQ(s.workers[0].completed, 100u);
  EXPECT_EQ(s.workers[0].last_seen_ms, 250u);
  EXPECT_EQ(s.workers[0].models.size(), 2u);
  EXPECT_EQ(s.workers[0].p99_ms, 9.5);
  ASSERT_EQ(s.models.size(), 1u);
  EXPECT_EQ(s.models[0].policy, "adaptive");
  EXPECT_EQ(s.models[0].queued, 17u);
}

TEST(MessagesTest, ModelManagementRoundTrips) {
  ControlRequest control{.op = ControlOp::kLoad,
                         .model = "minilm",
                         .version = 3,
                         .workers = {"w1", "w2"},
                         .timeout_ms = 9000};
  ControlRequest c;
  std::string error;
  ASSERT_TRUE(Decode(Encode(control), &c, &error)) << error;
  EXPECT_EQ(c.op, ControlOp::kLoad);
  EXPECT_EQ(c.model, "minilm");
  EXPECT_EQ(c.version, 3u);
  EXPECT_EQ(c.workers, (std::vector<std::string>{"w1", "w2"}));
  EXPECT_EQ(c.timeout_ms, 9000u);

  ControlReply reply{.op = ControlOp::kLoad, .model = "minilm", .results = {}};
  reply.results.push_back(
      {.worker = "w1", .ok = true, .version = 3, .memory_bytes = 1 << 30, .millis = 1500});
  reply.results.push_back(
      {.worker = "w2", .code = ErrorCode::kInternal, .message = "out of memory"});
  ControlReply out;
  ASSERT_TRUE(Decode(Encode(reply), &out, &error)) << error;
  ASSERT_EQ(out.results.size(), 2u);
  EXPECT_TRUE(out.results[0].ok);
  EXPECT_EQ(out.results[0].memory_bytes, 1u << 30);
  EXPECT_EQ(out.results[0].millis, 1500u);
  EXPECT_FALSE(out.results[1].ok);
  EXPECT_EQ(out.results[1].code, ErrorCode::kInternal);
  EXPECT_EQ(out.results[1].message, "out of memory");

  // A success carries no code: one sent with it anyway (as a fuzzer did) decodes without it,
  // so that decoding what Encode writes of it gives the same again.
  msgpack::sbuffer ok_buffer;
  msgpack::packer<msgpack::sbuffer> ok(ok_buffer);
  ok.pack_map(3);
  ok.pack(std::string("worker")), ok.pack(std::string("w1"));
  ok.pack(std::string("ok")), ok.pack(true);
  ok.pack(std::string("code")), ok.pack(std::string("UNKNOWN_MODEL"));
  ControlResult success;
  ASSERT_TRUE(Decode(std::string_view(ok_buffer.data(), ok_buffer.size()), &success, &error));
  EXPECT_TRUE(success.ok);
  EXPECT_EQ(success.code, ControlResult{}.code);

  // An unknown model state is refused, not guessed.
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> pk(buffer);
  pk.pack_map(1);
  pk.pack(std::string("models"));
  pk.pack_array(1);
  pk.pack_map(2);
  pk.pack(std::string("name"));
  pk.pack(std::string("a"));
  pk.pack(std::string("state"));
  pk.pack(std::string("SLEEPING"));
  const std::string bad(buffer.data(), buffer.size());
  ReadyBody r;
  EXPECT_FALSE(Decode(bad, &r, &error));
  EXPECT_NE(error.find("SLEEPING"), std::string::npos) << error;
}

TEST(MessagesTest, RejectsMalformedBodies) {
  auto pack = [](auto fill) {
    msgpack::sbuffer buffer;
    msgpack::packer<msgpack::sbuffer> pk(buffer);
    fill(pk);
    return std::string(buffer.data(), buffer.size());
  };
  struct Case {
    const char* what;
    std::string bytes;
    const char* reason;
  };
  const std::vector<Case> cases = {
      {"empty", "", "msgpack"},
      {"garbage", "\xc1\xc1\xc1", "msgpack"},
      {"truncated", Encode(EmbedRequest{"model", 0, {"text"}, 0, true}).substr(0, 10), "msgpack"},
      {"not a map", pack([](auto& pk) { pk.pack(42); }), "map"},
      {"trailing bytes", Encode(EmbedRequest{"m", 0, {"t"}, 0, true}) + "x", "trailing"},
      {"missing model", pack([](auto& pk) {
         pk.pack_map(1);
         pk.pack(std::string("inputs"));
         pk.pack(std::vector<std::string>{"a"});
       }),
       "'model'"},
      {"inputs not strings", pack([](auto& pk) {
         pk.pack_map(2);
         pk.pack(std::string("model"));
         pk.pack(std::string("m"));
         pk.pack(std::string("inputs"));
         pk.pack(std::vector<int>{1, 2});
       }),
       "'inputs'"},
      {"negative version", pack([](auto& pk) {
         pk.pack_map(3);
         pk.pack(std::string("model"));
         pk.pack(std::string("m"));
         pk.pack(std::string("inputs"));
         pk.pack(std::vector<std::string>{"a"});
         pk.pack(std::string("version"));
         pk.pack(-1);
       }),
       "'version'"},
      {"huge array header", std::string("\x81\xa6inputs\xdd\xff\xff\xff\xff", 12), "msgpack"},
  };
  for (const auto& c : cases) {
    EmbedRequest out;
    std::string error;
    EXPECT_FALSE(Decode(c.bytes, &out, &error)) << c.what;
    EXPECT_NE(error.find(c.reason), std::string::npos) << c.what << ": " << error;
  }
}

}  // namespace
}  // namespace ember::protocol
