// Runs one model version: intake, dynamic batching, inference and replies on three
// threads of its own, so the worker's socket thread never blocks.
//
//   socket thread --Submit--> the worker's TokenizerPool: tokenizes, queues the
//                             texts in the Batcher (or answers a refusal)
//                             --> scheduler thread: drops expired texts, forms batches
//                             --one-slot hand-off--> inference threads (one per
//                             batch in flight): run the backend, assemble each
//                             request's vectors
//                             --queue--> reply thread: encodes and sends them,
//                             and the scheduler's refusals and timeouts
//
// With N batches in flight (Backend::batches_in_flight, 2 on a GPU) the scheduler forms a
// batch by the batcher's rules while fewer than N run, and only a full one when N run (waiting
// longer can only grow it): on a GPU the next batch's packing and copies overlap the current
// one's compute, and the card never waits for the host between batches.
//
// A request's texts may run in different batches; its reply goes out when the
// last one is done, in input order. Every submitted request gets exactly one
// reply, pushed (already encoded as protocol frames) to the worker's inproc
// results socket: the vectors, or a typed error (BAD_REQUEST, TOO_LONG,
// OVERLOADED when the queue is full, TIMEOUT past the deadline, INTERNAL).
#ifndef EMBER_WORKER_MODEL_RUNNER_H_
#define EMBER_WORKER_MODEL_RUNNER_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>
#include <zmq.hpp>

#include "common/error_code.h"
#include "common/messages.h"
#include "engine/model.h"
#include "worker/batcher.h"
#include "worker/tokenizer_pool.h"

namespace ember::worker {

struct Job {
  std::uint64_t request_id = 0;
  protocol::EmbedRequest request;
  Clock::time_point received = Clock::now();
};

struct RunnerOptions {
  BatcherOptions batcher;
  // Tokenizes the requests of an intake on several threads (shared by the worker's models);
  // null: on the scheduler thread alone.
  std::shared_ptr<TokenizerPool> tokenizers;
  // Makes every batch take `slowdown` times as long (by sleeping), to emulate
  // slower hardware in balancing benchmarks and tests. 1 = off.
  double slowdown = 1.0;
  // Batches run at once, each on an inference thread of its own (>= 1).
  int batches_in_flight = 1;
};

class ModelRunner {
 public:
  // `results_endpoint` is an inproc endpoint in `context` bound by the caller.
  ModelRunner(std::string worker_id, protocol::ModelInfo info, engine::Model model,
              zmq::context_t& context, std::string results_endpoint, RunnerOptions options);
  ~ModelRunner();  // answers what is queued (unless abandoned), then joins the threads
  ModelRunner(const ModelRunner&) = delete;
  ModelRunner& operator=(const ModelRunner&) = delete;

  const protocol::ModelInfo& info() const { return info_; }

  // Queues a job. Thread-safe; never blocks on inference.
  void Submit(Job job);

  // Whether every submitted job has been answered (its reply pushed to the
  // results socket). Thread-safe. A runner being unloaded is destroyed only
  // when idle, so draining it loses nothing.
  bool Idle();

  // Drops what waits (queued texts, a formed batch, jobs still being tokenized) without
  // computing or answering it: the worker is leaving and has told its routers, which send
  // those requests elsewhere. Batches already running finish. Thread-safe.
  void Abandon();

 private:
  // A request being assembled from its texts' vectors.
  struct Request {
    std::vector<std::vector<std::int32_t>> ids;  // per text, moved out when batched
    std::vector<std::uint32_t> seconds;          // per text, a pair's second start; or empty
    std::vector<std::uint32_t> tokens;           // per text: ids' length, for the reply
    std::uint32_t dimensions = 0;  // < dim: the reply cuts each vector to it (Matryoshka)
    bool scores = false;           // a kScore request: the reply has labels
    bool raw_scores = false;       // ... and the logits as they are
    // kEmbed, kScore: a pooled vector per text; kSparse, kMultiVector: rows per text.
    protocol::Task task = protocol::Task::kEmbed;
    std::vector<float> vectors;  // count x dim (kEmbed, kScore)
    // kSparse: per text its weights and their token ids; kMultiVector: per text its token
    // vectors (Backend::multi_vector_dim floats each).
    std::vector<std::vector<float>> rows;
    std::vector<std::vector<std::uint32_t>> row_ids;
    std::size_t remaining = 0;
    std::size_t largest_batch = 0;
    Clock::time_point received;  // by the worker (Job::received): for the batch trace
  };
  // A reply ready to send, built under the lock and sent outside it.
  struct Outcome {
    std::uint64_t request_id;
    std::optional<ErrorCode> error;  // nullopt: success
    std::string message;
    Request request;
    std::string reply{};  // a success already encoded (a kTokenize reply): sent as it is
  };

  void ScheduleLoop();
  void InferLoop();
  // Encodes and sends every finished request (the scheduler's refusals and timeouts, the
  // inference thread's results), so that neither waits on the results socket.
  void ReplyLoop(zmq::context_t& context, const std::string& endpoint);
  // Moves `done` to the reply thread's queue. Requires mu_.
  void HandOver(std::vector<Outcome>& done);
  // A tokenizer task for a job of `texts` texts (admitted by Submit): Admit, then Queue under
  // the lock, and wake the scheduler if it can act.
  void Intake(Job& job, std::size_t texts);
  // Checks a job (texts beyond max-queue, dimensions, prompt) and tokenizes it, outside the
  // lock; a refusal or a tokenizer error becomes an Outcome, and so does a kTokenize or
  // kDecode job's answer (Tokenized, Decoded), which never reaches the batcher.
  std::optional<Outcome> Admit(Job& job, Request* request);
  Outcome Tokenized(const Job& job) const;
  // A text's ids, special tokens added, cut to (or, without `truncate`, refused past) the
  // model's limit; a pair's with its second segment. Tokenizer errors become ember::Error.
  std::vector<std::int32_t> Ids(std::string_view text, bool truncate) const;
  engine::Encoding Pair(std::string_view first, std::string_view second, bool truncate) const;
  Outcome Decoded(const Job& job) const;
  // A reply to `job` naming this version and worker, with a place for each of its inputs.
  protocol::EmbedReply ReplyTo(const Job& job) const;
  // Queues the admitted request's texts in the batcher, or refuses it into `done` when the
  // queue is full (OVERLOADED). Requires mu_.
  void Queue(const Job& job, Request request, std::vector<Outcome>* done);
  // Runs one batch; called with `lock` held, releases it around inference.
  void RunBatch(std::vector<BatchItem> batch, Clock::time_point formed,
                std::unique_lock<std::mutex>& lock, std::vector<Outcome>* done);
  // Where one batch's time went, logged at debug level and read by bench/gpu/batch_trace.py
  // (docs/performance.md "The tokenizer pool takes the intake"): queued -> formed -> picked
  // by an inference thread -> packed (start) -> ran -> the lock again (locked) -> vectors
  // copied into their requests.
  struct BatchTrace {
    std::size_t texts = 0, tokens = 0;
    int running = 0;  // batches running when this one was picked, itself included
    Clock::time_point formed, picked, start;
    Clock::duration ran{};
    Clock::time_point locked;
    Clock::time_point oldest = Clock::time_point::max(), newest = Clock::time_point::min();
    std::size_t answered = 0;                // requests this batch completed
    Clock::duration stay_sum{}, stay_max{};  // their time in the worker so far
  };
  void LogBatch(const BatchTrace& trace) const;
  // What a batch's texts ask of the backend, each kind one run of it: pooled vectors (kEmbed,
  // kScore), sparse weights, token vectors. A batch mixing them runs the model once per kind.
  enum Kind : std::size_t { kPooled, kSparse, kMultiVector, kKinds };
  static Kind KindOf(protocol::Task task);
  // One kind's run: its texts, the batch of their ids, and what the backend gave (or why not).
  struct Run {
    std::vector<BatchItem> items;
    engine::TokenBatch ids;
    std::vector<float> vectors;  // kPooled: items x dim; kMultiVector: (tokens - items) x D
    engine::Backend::SparseVectors sparse;
    std::string failure;
  };
  // Runs the backend on `run` (without the lock), filling its output or failure.
  void Infer(Kind kind, Run& run);
  // Hands each text's output to its request (requires mu_); a request whose last text this
  // was goes to `done`, counted in the trace.
  void Distribute(Kind kind, Run& run, std::size_t batch_texts, BatchTrace* trace, bool tracing,
                  std::vector<Outcome>* done);
  void Fail(std::uint64_t request_id, ErrorCode code, const std::string& message,
            std::vector<Outcome>* done);  // requires mu_
  void Send(zmq::socket_t& results, std::vector<Outcome>& outcomes);
  // Keeps the first `dimensions` components of each of `count` vectors of `data`, and
  // L2-normalises them again if the backend normalises.
  void Cut(std::vector<float>& data, std::size_t count, std::uint32_t dimensions) const;

  const std::string worker_id_;
  const protocol::ModelInfo info_;
  const std::unique_ptr<const engine::Tokenizer> tokenizer_;
  const std::unique_ptr<engine::Backend> backend_;
  const double slowdown_;
  const std::shared_ptr<TokenizerPool> tokenizers_;

  std::mutex mu_;
  std::condition_variable schedule_cv_;  // texts queued, a slot free, stop
  std::condition_variable infer_cv_;     // a batch is ready, stop
  std::condition_variable reply_cv_;     // replies_ gained some, or the end
  int tokenizing_ = 0;                   // submitted jobs not yet queued or refused; guarded by mu_
  std::size_t incoming_ = 0;             // ... and their texts, counted against max-queue
  Batcher batcher_;                      // guarded by mu_
  std::unordered_map<std::uint64_t, Request> requests_;  // guarded by mu_
  std::optional<std::vector<BatchItem>> ready_;          // guarded by mu_
  Clock::time_point ready_at_;   // when ready_ was formed (the batch trace); guarded by mu_
  std::size_t unanswered_ = 0;   // guarded by mu_
  const int in_flight_limit_;    // batches run at once
  int running_ = 0;              // batches running; guarded by mu_
  bool stop_ = false;            // guarded by mu_
  bool abandoned_ = false;       // guarded by mu_
  bool scheduler_done_ = false;  // guarded by mu_
  std::deque<Outcome> replies_;  // finished requests for the reply thread; guarded by mu_
  int inference_threads_ = 0;    // inference threads not yet done; guarded by mu_
  std::thread scheduler_;
  std::vector<std::thread> inference_;
  std::thread replier_;
};

}  // namespace ember::worker

#endif  // EMBER_WORKER_MODEL_RUNNER_H_
