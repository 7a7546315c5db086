// ember's C++ client SDK.
//
//   ember::Client client("tcp://127.0.0.1:5555");   // or "tcp://a:5555,tcp://b:5555"
//   ember::Embeddings e = client.Embed("minilm", {"hello", "world"});
//   std::span<const float> v = e[0];   // e.dim() floats
//
// Errors arrive as ember::Error with a typed code (UNKNOWN_MODEL, OVERLOADED,
// TIMEOUT, ...). A Client owns one ZeroMQ socket and, like it, must be used
// by one thread at a time; give each thread its own Client.
//
// With several routers the client fails over (client/router_list.h): an embed, status or
// list that gets no answer from one router (nothing within the timeout, or the connection
// lost, which ZMTP heartbeats detect within ClientOptions::heartbeat even for a router that
// hangs) is sent to the next; a router that failed is skipped with a backoff. Load and unload
// change the cluster and are never resent once a router may have received them: they move to
// the next router only when the first could not be reached at all.
#ifndef EMBER_CLIENT_CLIENT_H_
#define EMBER_CLIENT_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "client/router_connection.h"
#include "client/router_list.h"
#include "common/curve.h"
#include "common/error_code.h"
#include "common/messages.h"

namespace ember {

// What Embed gives each text: its pooled vector (the default), or, from a model with token-level
// heads (bge-m3's sparse_linear and colbert_linear), its sparse lexical weights
// (Embeddings::Sparse) or a vector per token but the first (Embeddings::Rows).
enum class EmbedOutput : std::uint8_t { kDense, kSparse, kMultiVector };

struct EmbedOptions {
  std::uint32_t version = 0;                 // 0: the latest version the cluster serves
  EmbedOutput output = EmbedOutput::kDense;  // Embed only
  bool truncate = true;                      // false: over-long inputs fail with TOO_LONG
  // The first n components of each vector, normalised again if the model normalises
  // (Matryoshka: only models that declare it take an n below their size). 0: all.
  std::uint32_t dimensions = 0;
  // One of the model's prompts (sentence-transformers' "prompts", e.g. "query"), put before
  // each input; empty: the model's default prompt, if it has one.
  std::string prompt_name{};
  // Score only: the model's logits as they are; false: their sigmoid for a one-label model (a
  // cross-encoder's relevance), their softmax otherwise (a classifier's probabilities).
  bool raw_scores = false;
  // Decode only: leave the model's special tokens ([CLS], [SEP], [PAD], ...) out of the text.
  bool skip_special_tokens = true;
  std::chrono::milliseconds timeout{30'000};  // per attempt
  // Attempts in all (Lazy Pirate): when no answer comes within the timeout, the connection
  // is lost, or the router answers UNAVAILABLE, the client reconnects, to the next router if
  // there are several, and resends. Embedding is idempotent, so a resent request is safe.
  // 0: one attempt per router.
  int attempts = 0;
};

// How a Client reaches its routers.
struct ClientOptions {
  // CURVE keys (docs/security.md); by default the key files named by $EMBER_CURVE_KEY and
  // $EMBER_CURVE_SERVER_KEY, if set.
  curve::ClientKeys curve = curve::ClientKeys::FromEnvironment();
  // A router not connected within this is skipped (the request was never sent).
  std::chrono::milliseconds connect_timeout{1000};
  // ZMTP heartbeats on the connection: one with no traffic for 3 heartbeats is closed, so a
  // hung or partitioned router is left within that even while a request waits on it.
  std::chrono::milliseconds heartbeat{1000};
  // The router to start with; -1: a random one, so that clients spread over the routers.
  int home = -1;
  RouterList::Backoff backoff{};
};

// Vectors for one request, row-major, in the order of the texts sent. From Score: each text's
// scores, one per label (labels()).
class Embeddings {
 public:
  explicit Embeddings(protocol::EmbedReply reply, int attempts = 1, std::string router = {})
      : reply_(std::move(reply)), attempts_(attempts), router_(std::move(router)) {
    row_starts_.reserve(reply_.rows.size() + 1);
    std::size_t at = 0;
    for (const std::uint32_t r : reply_.rows) {
      row_starts_.push_back(at);
      at += r;
    }
    row_starts_.push_back(at);
  }

  std::size_t size() const { return reply_.count; }
  std::size_t dim() const { return reply_.dim; }
  std::span<const float> operator[](std::size_t i) const {
    return std::span(reply_.data).subspan(i * dim(), dim());
  }
  const std::vector<float>& data() const { return reply_.data; }
  const std::string& model() const { return reply_.model; }
  std::uint32_t version() const { return reply_.version; }
  const std::string& worker() const { return reply_.worker; }
  // Texts in the largest worker batch that computed these (batching insight).
  std::uint32_t batch_size() const { return reply_.batch_size; }
  // Per text, the tokens the model ran on it (special tokens included, after truncation);
  // empty when not known (a worker from before token counts).
  const std::vector<std::uint32_t>& tokens() const { return reply_.tokens; }
  // Their sum, what OpenAI's usage.prompt_tokens reports; 0 when not known.
  std::uint64_t total_tokens() const {
    std::uint64_t n = 0;
    for (const std::uint32_t t : reply_.tokens) n += t;
    return n;
  }
  // Score: what each of a row's dim() scores is (a classifier's labels; a cross-encoder has one).
  const std::vector<std::string>& labels() const { return reply_.labels; }
  // Tokenize (no vectors: dim() is 0): every text's tokens one after another, tokens()[i] of
  // text i; per token its id, its vocabulary string, and the bytes [start, stop) of its text it
  // came from (two entries per token; {0, 0} for the [CLS] and [SEP] the model adds).
  const std::vector<std::uint32_t>& token_ids() const { return reply_.token_ids; }
  const std::vector<std::string>& token_pieces() const { return reply_.token_pieces; }
  const std::vector<std::uint32_t>& token_spans() const { return reply_.token_spans; }
  // Decode (no vectors): one text per sequence of ids.
  const std::vector<std::string>& texts() const { return reply_.texts; }
  // Sparse and multi-vector outputs (EmbedOptions::output): how many rows each text has, of
  // dim() floats each. Multi-vector: text i's token vectors, rows()[i] x dim() floats. Sparse
  // (dim() 1): text i's entries, token ids ascending, each with its weight (> 0).
  const std::vector<std::uint32_t>& rows() const { return reply_.rows; }
  std::span<const float> Rows(std::size_t i) const {
    return std::span(reply_.data).subspan(row_starts_[i] * dim(), reply_.rows[i] * dim());
  }
  struct SparseEntries {
    std::span<const std::uint32_t> ids;
    std::span<const float> weights;
  };
  SparseEntries Sparse(std::size_t i) const {
    return {std::span(reply_.indices).subspan(row_starts_[i], reply_.rows[i]), Rows(i)};
  }
  // Attempts the call took (EmbedOptions::attempts): more than 1 when an earlier attempt got
  // no answer (or UNAVAILABLE) and was resent.
  int attempts() const { return attempts_; }
  // The router endpoint that answered.
  const std::string& router() const { return router_; }

 private:
  protocol::EmbedReply reply_;
  std::vector<std::size_t> row_starts_;  // where text i's rows start (rows() given)
  int attempts_ = 1;
  std::string router_;
};

// Options of model management commands (Load, Unload).
struct ControlOptions {
  // Routing ids of the workers to act on; empty: every worker that has the
  // model (load: in its repository; unload: loaded).
  std::vector<std::string> workers;
  std::chrono::milliseconds timeout{600'000};  // large models take a while
};

class Client {
 public:
  // Connects (lazily, as ZeroMQ does) to a router's frontend endpoint, or to one of a
  // comma-separated list of them. With CURVE keys (docs/security.md) the connection is
  // encrypted and the router admits it only if our public key is on its allow-list.
  explicit Client(const std::string& endpoints,
                  curve::ClientKeys curve = curve::ClientKeys::FromEnvironment());
  Client(std::vector<std::string> endpoints, ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Embeds `texts` with `model`. Throws ember::Error on any failure,
  // including kTimeout when no reply came within options.timeout.
  Embeddings Embed(std::string_view model, const std::vector<std::string>& texts,
                   const EmbedOptions& options = {});

  // Scores `texts` with `model`, a cross-encoder or classifier: each text alone, or, when
  // `pairs` is not empty, paired with pairs[i] ([CLS] texts[i] [SEP] pairs[i] [SEP]). One row
  // per text, one score per label. A reranker's call is Score(model, {n x query}, passages);
  // client/ranking.h orders the result. Throws ember::Error as Embed does (BAD_REQUEST for a
  // model that embeds).
  Embeddings Score(std::string_view model, const std::vector<std::string>& texts,
                   const std::vector<std::string>& pairs = {}, const EmbedOptions& options = {});

  // Tokenizes `texts` with `model`'s tokenizer (TEI's /tokenize): no vectors, the tokens and
  // where each came from (Embeddings::token_ids and the rest). Prompts do not apply.
  Embeddings Tokenize(std::string_view model, const std::vector<std::string>& texts,
                      const EmbedOptions& options = {});

  // The text of each sequence of token ids with `model`'s tokenizer (TEI's /decode):
  // Embeddings::texts(), one per sequence.
  Embeddings Decode(std::string_view model, const std::vector<std::vector<std::uint32_t>>& ids,
                    const EmbedOptions& options = {});

  // The router's view of the cluster (CONTROL "status"; every model version
  // on every worker, with its state and memory, is in workers[].models).
  protocol::StatusReply Status(std::chrono::milliseconds timeout = std::chrono::seconds(5));

  // Loads `model` (version 0: the newest in the workers' repositories) and
  // returns when every target worker has it READY, serving it. A worker's
  // version policy may retire older versions, which drain and are freed.
  // Throws ember::Error naming each worker that failed and why.
  protocol::ControlReply Load(std::string_view model, std::uint32_t version = 0,
                              const ControlOptions& options = {});
  // Takes `model` (version 0: every version) out of service; returns when
  // its last requests are answered and its memory is freed.
  protocol::ControlReply Unload(std::string_view model, std::uint32_t version = 0,
                                const ControlOptions& options = {});

 private:
  // What may be resent to another router after an attempt failed.
  enum class Resend {
    kIfUnanswered,  // idempotent: embed, status, list
    kIfUnsent,      // load, unload: only when no router can have received it
  };
  // Sends one message and waits for the reply with the same request id, failing over as
  // `resend` allows, for up to `attempts` attempts. Returns the reply body; throws
  // ember::Error for ERROR replies.
  std::string Call(std::uint8_t command, const std::string& body, std::chrono::milliseconds timeout,
                   int attempts, Resend resend, int* used = nullptr);
  std::string CallOnce(std::uint8_t command, const std::string& body,
                       std::chrono::milliseconds timeout);
  // A REQUEST (`body`, of `texts` texts) and its answer to `task`, as Embed and the rest return
  // it (embed_call::EmbeddingsOf).
  Embeddings Request(const std::string& body, std::size_t texts, const EmbedOptions& options,
                     protocol::Task task);
  void Connect(std::size_t router);
  std::unique_ptr<RouterConnection> Open(std::size_t router) const;
  // Away from home: probes it in the background, and moves there once the probe connects.
  void FailBack();
  protocol::ControlReply Manage(protocol::ControlOp op, std::string_view model,
                                std::uint32_t version, const ControlOptions& options);
  int AttemptsFor(int asked) const;

  ClientOptions options_;
  RouterList routers_;
  std::unique_ptr<RouterConnection> socket_;
  std::size_t connected_ = 0;                // the router socket_ is connected to
  std::unique_ptr<RouterConnection> probe_;  // connecting to home, while away from it
  std::chrono::steady_clock::time_point probe_deadline_{};
  std::uint64_t next_request_id_ = 1;
  // Of the last attempt: whether it was sent, and whether any answer came.
  bool sent_ = false;
  bool answered_ = false;
};

}  // namespace ember

#endif  // EMBER_CLIENT_CLIENT_H_
