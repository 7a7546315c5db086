// client/embed_call.h alone: a reply is held to the task it answers, so that a worker older than
// scores or tokenize (which embeds whatever it is sent) is an error, never vectors taken for
// scores or tokens.
#include "client/embed_call.h"

#include <gtest/gtest.h>

#include <optional>

#include "common/messages.h"

namespace ember::embed_call {
namespace {

protocol::EmbedReply Vectors() {
  protocol::EmbedReply reply;
  reply.model = "m";
  reply.worker = "old";
  reply.dim = 2;
  reply.count = 1;
  reply.data = {0.5f, 0.5f};
  return reply;
}

// The code EmbeddingsOf refuses `reply` with for `task`; nullopt when it takes it.
std::optional<ErrorCode> CodeOf(const protocol::EmbedReply& reply, protocol::Task task) {
  try {
    EmbeddingsOf(protocol::Encode(reply), 1, 1, "r", task);
    return std::nullopt;
  } catch (const Error& e) {
    return e.code();
  }
}

TEST(EmbedCall, AReplyAnswersItsTask) {
  const protocol::EmbedReply vectors = Vectors();
  EXPECT_EQ(CodeOf(vectors, protocol::Task::kEmbed), std::nullopt);
  EXPECT_EQ(CodeOf(vectors, protocol::Task::kScore), ErrorCode::kInternal);
  EXPECT_EQ(CodeOf(vectors, protocol::Task::kTokenize), ErrorCode::kInternal);

  protocol::EmbedReply scores = Vectors();
  scores.labels = {"no", "yes"};
  EXPECT_EQ(CodeOf(scores, protocol::Task::kScore), std::nullopt);
  EXPECT_EQ(CodeOf(scores, protocol::Task::kEmbed), ErrorCode::kInternal);

  protocol::EmbedReply tokens;
  tokens.model = "m";
  tokens.count = 1;
  tokens.tokens = {2};
  tokens.token_ids = {101, 102};
  tokens.token_pieces = {"[CLS]", "[SEP]"};
  tokens.token_spans = {0, 0, 0, 0};
  const Embeddings t = EmbeddingsOf(protocol::Encode(tokens), 1, 1, "r", protocol::Task::kTokenize);
  EXPECT_EQ(t.token_ids(), (std::vector<std::uint32_t>{101, 102}));
}

}  // namespace
}  // namespace ember::embed_call
