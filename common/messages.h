// Message bodies: the msgpack maps inside frame 3 (docs/protocol.md).
//
// Each body type has an Encode that returns msgpack bytes and a Decode that
// validates them. Decoders never throw: malformed input yields false and a
// reason, which the receiver turns into a BAD_REQUEST reply. msgpack itself
// stays inside messages.cpp.
#ifndef EMBER_COMMON_MESSAGES_H_
#define EMBER_COMMON_MESSAGES_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error_code.h"

namespace ember::protocol {

// What a REQUEST asks of its model. On the wire, "task": its name ("embed", "score",
// "tokenize", "decode", "sparse", "multi_vector"); absent: embed.
enum class Task : std::uint8_t {
  kEmbed,        // a vector per input
  kScore,        // scores per input, from a model with labels (a cross-encoder or classifier)
  kTokenize,     // the tokens of each input, with where in it each came from (no vectors)
  kDecode,       // each input is token ids (decimal, space-separated): their text (no vectors)
  kSparse,       // sparse lexical weights per input (a model with a sparse head: bge-m3's)
  kMultiVector,  // a vector per token of each input (a model with a ColBERT head: bge-m3's)
};
std::string_view TaskName(Task task);
std::optional<Task> ParseTask(std::string_view name);
// The decoders' reasons (common/request_header.h gives the same): a "task" that names no Task;
// "text_pairs" (present when has_pairs) for another task than kScore, or not one per input.
std::string TaskError(std::string_view name);
bool CheckPairs(Task task, std::size_t inputs, bool has_pairs, std::size_t pairs,
                std::string* error);

// REQUEST body: embed (or score) `inputs` with `model`.
struct EmbedRequest {
  std::string model;
  std::uint32_t version = 0;  // 0: the latest version the cluster serves
  std::vector<std::string> inputs;
  std::uint32_t timeout_ms = 0;  // 0: the router's default
  bool truncate = true;          // false: over-long inputs fail with TOO_LONG
  // The first `dimensions` components of each vector, normalised again if the model
  // normalises (Matryoshka; only for models that declare it, Backend::matryoshka). 0: all.
  std::uint32_t dimensions = 0;
  // The model's prompt (sentence-transformers' "prompts", e.g. "query") put before each input;
  // empty: the version's default prompt, if it has one (Backend::prompts).
  std::string prompt_name{};
  Task task = Task::kEmbed;
  // kScore only: empty, or one text per input, paired with it as the model's second segment
  // ([CLS] inputs[i] [SEP] text_pairs[i] [SEP]: a rerank query and one of its passages).
  std::vector<std::string> text_pairs{};
  // kScore: the model's logits as they are; false: their sigmoid for a model with one label,
  // their softmax otherwise (as TEI's raw_scores).
  bool raw_scores = false;
  // kDecode: leave the model's special tokens ([CLS], [SEP], [PAD], ...) out of the text.
  bool skip_special_tokens = true;
};

// REPLY body to an EmbedRequest: `count` vectors of `dim` float32, row-major.
// On the wire the vectors are one msgpack bin of little-endian float32.
struct EmbedReply {
  std::string model;
  std::uint32_t version = 0;
  std::string worker;  // which worker computed it (for operators and tests)
  std::uint32_t dim = 0;
  std::uint32_t count = 0;
  std::uint32_t batch_size = 0;  // texts in the largest batch that computed these
  std::vector<float> data;
  // Per text, the tokens the model ran on it: special tokens included, after truncation (what
  // TEI and OpenAI's `usage` count). Empty when not known (a worker or cache entry from before
  // token counts); otherwise exactly `count` entries.
  std::vector<std::uint32_t> tokens;
  // A kScore reply: the model's labels, naming each vector's `dim` scores in order.
  std::vector<std::string> labels{};
  // A kTokenize reply (dim 0, no data): every input's tokens one after another, `tokens[i]` of
  // input i. Per token: its id, its vocabulary string, and the bytes [start, stop) of its input
  // it came from (spans, two per token; {0, 0} for the [CLS] and [SEP] the model adds).
  std::vector<std::uint32_t> token_ids{};
  std::vector<std::string> token_pieces{};
  std::vector<std::uint32_t> token_spans{};
  // A kDecode reply (dim 0, no data): one text per input.
  std::vector<std::string> texts{};
  // A kSparse or kMultiVector reply: how many rows of `dim` floats in `data` each input has,
  // inputs one after another (`data` then holds their sum x dim floats). kSparse: dim 1, a row
  // per entry, its token id in `indices` (one per row), ids ascending within an input; a
  // weight of 0 is no entry. kMultiVector: a row per token but the first ([CLS]).
  std::vector<std::uint32_t> rows{};
  std::vector<std::uint32_t> indices{};
};

// ERROR body.
struct ErrorBody {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
};

// Where a model version is in its life on a worker. Only kReady versions
// receive requests; the others are listed so operators can see a load in
// progress, a version draining, or why a load failed.
enum class ModelState : std::uint8_t { kLoading, kReady, kUnloading, kFailed };
std::string_view ModelStateName(ModelState state);  // "LOADING", "READY", ...

// One model version on a worker, as announced in READY.
struct ModelInfo {
  std::string name;
  std::uint32_t version = 1;
  std::uint32_t dim = 0;
  ModelState state = ModelState::kReady;
  std::uint64_t memory_bytes = 0;  // weights and buffers the backend holds
  std::string message{};           // why a load failed (kFailed)
};

// READY body: a worker registers with the router, and sends it again whenever
// its models change. The router acknowledges each READY with a READY of the
// same request id (and an empty body).
struct ReadyBody {
  std::string device;
  std::uint32_t capacity = 0;  // requests the worker accepts in flight
  double weight = 1.0;         // relative speed, for weighted balancing
  // Random per worker process: a READY with the session the router already
  // has is an update and keeps the worker's requests in flight; a new session
  // means the process restarted and what it had in flight is lost.
  std::uint64_t session = 0;
  std::uint64_t rss_bytes = 0;  // the worker process's resident memory
  std::vector<ModelInfo> models;
  // The router backends this worker is attached to (live links, as the worker names them);
  // with several routers, `capacity` is this router's share (docs/balancing.md "Credits").
  std::vector<std::string> routers{};
  // On the first READY over a fresh connection (the worker's link to this router was closed
  // and opened again, or is new): the router request ids the worker still holds, queued or
  // running. Replies it had for this router while the link was down are lost with the old
  // connection, so the router takes back every other request it has on this worker and sends
  // it again (otherwise its credit leaks and it waits for TIMEOUT). Absent on other READYs:
  // requests may be on the wire to the worker then.
  std::optional<std::vector<std::uint64_t>> holding{};
};

// What a CONTROL asks. From a client to the router: any; from the router to a worker: load
// and unload. On the wire, its name ("status", "list", "load", "unload").
enum class ControlOp : std::uint8_t { kStatus, kList, kLoad, kUnload };
std::string_view ControlOpName(ControlOp op);
std::optional<ControlOp> ParseControlOp(std::string_view name);
// Whether `op` only looks at the cluster (any admitted client may), or changes it (admin).
inline bool ReadOnly(ControlOp op) { return op == ControlOp::kStatus || op == ControlOp::kList; }

// CONTROL body. A name that is not a ControlOp fails to decode (BAD_REQUEST, naming it).
struct ControlRequest {
  ControlOp op = ControlOp::kStatus;
  std::string model{};        // load, unload
  std::uint32_t version = 0;  // load: 0 = the repository's version policy;
                              // unload: 0 = every version
  // Routing ids of the workers to act on; empty: every worker that has the
  // model (load: in its repository; unload: loaded).
  std::vector<std::string> workers{};
  std::uint32_t timeout_ms = 0;  // 0: the router's default for control ops
};

// What one worker did with a load or unload.
struct ControlResult {
  std::string worker{};
  bool ok = false;
  ErrorCode code = ErrorCode::kInternal;  // when !ok (on the wire: its name)
  std::string message{};
  std::uint32_t version = 0;  // the version loaded / unloaded
  std::uint64_t memory_bytes = 0;
  std::uint32_t millis = 0;  // how long the worker took
};

// Reply to CONTROL "load" / "unload": one result per worker acted on.
struct ControlReply {
  ControlOp op = ControlOp::kLoad;
  std::string model;
  std::vector<ControlResult> results;
};

// Reply to CONTROL "status": the router's view of its workers.
struct WorkerStatus {
  std::string id;
  std::string device;
  std::vector<ModelInfo> models;
  std::uint32_t capacity = 0;
  std::uint32_t in_flight = 0;
  std::uint64_t completed = 0;
  std::uint64_t failed = 0;
  std::uint32_t last_seen_ms = 0;  // since its last message
  double weight = 1.0;
  double ewma_ms = 0;  // response time as the router measures it
  double p50_ms = 0;   // over the last 256 replies
  double p99_ms = 0;
  std::uint64_t rss_bytes = 0;  // the worker process's resident memory
  // "healthy", "slow", "erroring" (router/worker_health.h); empty from an
  // older router.
  std::string health{};
  std::vector<std::string> routers{};  // what its READY says it is attached to
};
struct ModelStatus {
  std::string name;
  std::string policy;
  std::uint32_t queued = 0;  // waiting in the router for worker credit
  std::uint32_t workers = 0;
};
struct StatusReply {
  std::string router_version;
  std::uint64_t requests = 0;
  std::vector<WorkerStatus> workers;
  std::vector<ModelStatus> models;
};

std::string Encode(const EmbedRequest& body);
std::string Encode(const EmbedReply& body);
std::string Encode(const ErrorBody& body);
std::string Encode(const ReadyBody& body);
std::string Encode(const ControlRequest& body);
std::string Encode(const StatusReply& body);
std::string Encode(const ControlResult& body);
std::string Encode(const ControlReply& body);

bool Decode(std::string_view bytes, EmbedRequest* out, std::string* error);
bool Decode(std::string_view bytes, EmbedReply* out, std::string* error);
bool Decode(std::string_view bytes, ErrorBody* out, std::string* error);
bool Decode(std::string_view bytes, ReadyBody* out, std::string* error);
bool Decode(std::string_view bytes, ControlRequest* out, std::string* error);
bool Decode(std::string_view bytes, StatusReply* out, std::string* error);
bool Decode(std::string_view bytes, ControlResult* out, std::string* error);
bool Decode(std::string_view bytes, ControlReply* out, std::string* error);

}  // namespace ember::protocol

#endif  // EMBER_COMMON_MESSAGES_H_
