#include "worker/model_runner.h"

#include <spdlog/spdlog.h>

#include <array>
#include <charconv>
#include <zmq_addon.hpp>

#include "common/protocol.h"
#include "common/thread_name.h"
#include "engine/pooling.h"
#include "engine/scores.h"
#include "engine/tokenizer/tokenizer_error_code.h"

namespace ember::worker {

ModelRunner::ModelRunner(std::string worker_id, protocol::ModelInfo info, engine::Model model,
                         zmq::context_t& context, std::string results_endpoint,
                         RunnerOptions options)
    : worker_id_(std::move(worker_id)),
      info_(std::move(info)),
      tokenizer_(std::move(model.tokenizer)),
      backend_(std::move(model.backend)),
      slowdown_(std::max(options.slowdown, 1.0)),
      // No pool given: one without threads, which runs each task on the thread that submits.
      tokenizers_(options.tokenizers ? std::move(options.tokenizers)
                                     : std::make_shared<TokenizerPool>(0)),
      batcher_(std::move(options.batcher)),
      in_flight_limit_(std::max(options.batches_in_flight, 1)),
      inference_threads_(in_flight_limit_) {
  scheduler_ = std::thread([this] {
    NameThisThread("ember-schedule");
    ScheduleLoop();
  });
  for (int i = 0; i < in_flight_limit_; ++i) {
    inference_.emplace_back([this] {
      NameThisThread("ember-infer");
      InferLoop();
    });
  }
  replier_ = std::thread([this, &context, results_endpoint] {
    NameThisThread("ember-reply");
    ReplyLoop(context, results_endpoint);
  });
}

ModelRunner::~ModelRunner() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  schedule_cv_.notify_all();
  infer_cv_.notify_all();
  scheduler_.join();
  for (std::thread& t : inference_) t.join();
  replier_.join();
}

void ModelRunner::Submit(Job job) {
  const std::size_t texts = job.request.inputs.size();
  {
    std::lock_guard lock(mu_);
    ++unanswered_;
    // Admission, before any tokenizing: the texts queued and those on their way to the queue
    // stay within max-queue, so a flood is refused at once and waits in no tokenizer queue
    // (shared by every model of the worker). A request larger than the whole queue is
    // Admit's (BAD_REQUEST).
    const std::size_t max_queue = batcher_.options().max_queue;
    if (texts <= max_queue && batcher_.size() + incoming_ + texts > max_queue) {
      std::vector<Outcome> done;
      done.push_back(Outcome{job.request_id,
                             ErrorCode::kOverloaded,
                             "worker queue for model '" + info_.name + "' is full (" +
                                 std::to_string(max_queue) + " texts)",
                             {}});
      HandOver(done);
      return;
    }
    ++tokenizing_;
    incoming_ += texts;
  }
  // The job is tokenized and queued on the worker's tokenizer threads, so the scheduler only
  // ever batches (TokenizerPool::Post: the caller's own thread where the pool has none).
  tokenizers_->Post(
      [this, texts, job = std::make_shared<Job>(std::move(job))] { Intake(*job, texts); });
}

void ModelRunner::Intake(Job& job, std::size_t texts) {
  Request request;
  std::optional<Outcome> answer = Admit(job, &request);  // a refusal, or a kTokenize's tokens
  std::vector<Outcome> done;
  std::lock_guard lock(mu_);
  incoming_ -= texts;
  const bool was_empty = batcher_.size() == 0;
  if (abandoned_) {
    // Dropped, as what was queued (Abandon).
  } else if (answer) {
    done.push_back(std::move(*answer));
  } else {
    Queue(job, std::move(request), &done);
  }
  HandOver(done);
  --tokenizing_;
  // Wake the scheduler only when it has something new to decide: a first text starts its
  // delay, a full queue or a preferred size makes a batch at once, and a stopping runner
  // waits for this task. Notified under the lock: once it is released, the runner may be gone.
  if (stop_ || (!ready_ && (was_empty || batcher_.Formed()))) schedule_cv_.notify_one();
}

void ModelRunner::Queue(const Job& job, Request request, std::vector<Outcome>* done) {
  const auto now = Clock::now();
  std::vector<BatchItem> items(request.ids.size());
  const auto deadline = job.request.timeout_ms > 0
                            ? job.received + std::chrono::milliseconds(job.request.timeout_ms)
                            : Clock::time_point::max();
  for (std::size_t i = 0; i < items.size(); ++i) {
    items[i] = {job.request_id, static_cast<std::uint32_t>(i), request.ids[i].size(), now,
                deadline};
  }
  if (!batcher_.Add(items)) {
    done->push_back(Outcome{job.request_id,
                            ErrorCode::kOverloaded,
                            "worker queue for model '" + info_.name + "' is full (" +
                                std::to_string(batcher_.options().max_queue) + " texts)",
                            {}});
    return;
  }
  requests_.emplace(job.request_id, std::move(request));
}

void ModelRunner::Abandon() {
  std::lock_guard lock(mu_);
  abandoned_ = true;
  std::size_t dropped = 0;
  while (batcher_.size() > 0) dropped += batcher_.Take().size();
  if (ready_) dropped += ready_->size();
  ready_.reset();
  // Running batches skip requests no longer here (RunBatch).
  requests_.clear();
  if (dropped > 0) spdlog::info("model {} dropped {} queued texts", info_.name, dropped);
  schedule_cv_.notify_all();
}

bool ModelRunner::Idle() {
  std::lock_guard lock(mu_);
  return unanswered_ == 0;
}

std::optional<ModelRunner::Outcome> ModelRunner::Admit(Job& job, Request* request) {
  if (job.request.task == protocol::Task::kTokenize) return Tokenized(job);
  if (job.request.task == protocol::Task::kDecode) return Decoded(job);
  const auto& inputs = job.request.inputs;
  // More texts than the queue holds could never fit: a permanent refusal, not OVERLOADED
  // (which the router retries), and before any of them is tokenized. (The batcher's options
  // never change after construction, so they are read here without mu_.)
  if (const std::size_t max_queue = batcher_.options().max_queue; inputs.size() > max_queue) {
    return Outcome{job.request_id,
                   ErrorCode::kBadRequest,
                   "request has " + std::to_string(inputs.size()) + " texts; the queue of model '" +
                       info_.name + "' holds at most " + std::to_string(max_queue) + " (max-queue)",
                   {}};
  }
  // A model with labels scores, any other embeds: a request for the other is the client's
  // mistake, told in the terms of the APIs that make each.
  const bool scores = job.request.task == protocol::Task::kScore;
  if (const auto& labels = backend_->labels(); scores != !labels.empty()) {
    return Outcome{job.request_id,
                   ErrorCode::kBadRequest,
                   scores ? "model '" + info_.name +
                                "' embeds texts; scores (rerank, predict) need a cross-encoder "
                                "or classifier"
                          : "model '" + info_.name +
                                "' is a cross-encoder or classifier: it scores texts (rerank, "
                                "predict) and makes no embeddings",
                   {}};
  }
  request->scores = scores;
  request->raw_scores = job.request.raw_scores;
  request->task = job.request.task;
  if (const protocol::Task task = job.request.task;
      (task == protocol::Task::kSparse && !backend_->sparse()) ||
      (task == protocol::Task::kMultiVector && backend_->multi_vector_dim() == 0)) {
    const bool sparse = task == protocol::Task::kSparse;
    return Outcome{job.request_id,
                   ErrorCode::kBadRequest,
                   "model '" + info_.name + "' has no " +
                       (sparse ? "sparse output (a sparse_linear.pt head, as bge-m3's)"
                               : "multi-vector output (a colbert_linear.pt head, as bge-m3's)"),
                   {}};
  }
  if (KindOf(job.request.task) != kPooled && job.request.dimensions != 0) {
    return Outcome{job.request_id,
                   ErrorCode::kBadRequest,
                   "'dimensions' is for dense embeddings, not sparse or multi-vector outputs",
                   {}};
  }
  if (scores && job.request.dimensions != 0) {
    return Outcome{
        job.request_id, ErrorCode::kBadRequest, "'dimensions' is for embeddings, not scores", {}};
  }
  if (const std::uint32_t d = job.request.dimensions; d != 0 && d != info_.dim) {
    std::string why;
    if (d > info_.dim) {
      why = "'dimensions' is " + std::to_string(d) + "; model '" + info_.name + "' gives " +
            std::to_string(info_.dim);
    } else if (!backend_->matryoshka()) {
      why = "model '" + info_.name + "' does not declare Matryoshka dimensions, so 'dimensions' " +
            "must be " + std::to_string(info_.dim) +
            " (matryoshka = true in its version's config.toml declares them)";
    } else {
      request->dimensions = d;
    }
    if (!why.empty()) return Outcome{job.request_id, ErrorCode::kBadRequest, why, {}};
  }
  // The prompt goes before each input, as sentence-transformers puts it: its tokens are
  // embedded and counted with the text's.
  const engine::Backend::Prompts& prompts = backend_->prompts();
  const std::string& prompt_name =
      job.request.prompt_name.empty() ? prompts.default_name : job.request.prompt_name;
  std::string_view prompt;
  if (!prompt_name.empty()) {
    const auto it = prompts.texts.find(prompt_name);
    if (it == prompts.texts.end()) {
      std::string known;
      for (const auto& [name, text] : prompts.texts) known += (known.empty() ? "" : ", ") + name;
      return Outcome{job.request_id,
                     ErrorCode::kBadRequest,
                     "unknown prompt_name '" + prompt_name + "': model '" + info_.name + "' has " +
                         (known.empty() ? std::string("no prompts") : "prompts " + known),
                     {}};
    }
    prompt = it->second;
  }
  const auto& pairs = job.request.text_pairs;  // the decoder checked: none, or one per input
  if (!pairs.empty() && backend_->labels().empty()) {
    return Outcome{job.request_id,
                   ErrorCode::kBadRequest,
                   "model '" + info_.name + "' embeds single texts; it takes no pairs",
                   {}};
  }
  request->ids.reserve(inputs.size());
  request->tokens.reserve(inputs.size());
  if (!pairs.empty()) request->seconds.reserve(inputs.size());
  std::string prompted;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    try {
      if (!prompt.empty()) prompted.assign(prompt).append(inputs[i]);
      const std::string_view text = prompt.empty() ? std::string_view(inputs[i]) : prompted;
      if (pairs.empty()) {
        request->ids.push_back(Ids(text, job.request.truncate));
      } else {
        engine::Encoding pair = Pair(text, pairs[i], job.request.truncate);
        request->ids.push_back(std::move(pair.ids));
        request->seconds.push_back(static_cast<std::uint32_t>(pair.second_start));
      }
      request->tokens.push_back(static_cast<std::uint32_t>(request->ids.back().size()));
    } catch (const Error& e) {
      return Outcome{job.request_id, e.code(), "input " + std::to_string(i) + ": " + e.what(), {}};
    } catch (const std::exception& e) {
      return Outcome{
          job.request_id, ErrorCode::kInternal, "input " + std::to_string(i) + ": " + e.what(), {}};
    }
  }
  request->remaining = inputs.size();
  request->received = job.received;
  if (KindOf(request->task) == kPooled) {
    request->vectors.resize(inputs.size() * info_.dim);
  } else {
    request->rows.resize(inputs.size());
    if (request->task == protocol::Task::kSparse) request->row_ids.resize(inputs.size());
  }
  return std::nullopt;
}

std::vector<std::int32_t> ModelRunner::Ids(std::string_view text, bool truncate) const {
  try {
    return tokenizer_->Encode(text, {.truncate = truncate, .max_length = backend_->max_length()})
        .ids;
  } catch (const engine::TokenizerError& e) {
    throw Error(engine::ErrorCodeOf(e), e.what());
  }
}

engine::Encoding ModelRunner::Pair(std::string_view first, std::string_view second,
                                   bool truncate) const {
  try {
    return tokenizer_->EncodePair(first, second,
                                  {.truncate = truncate, .max_length = backend_->max_length()});
  } catch (const engine::TokenizerError& e) {
    throw Error(engine::ErrorCodeOf(e), e.what());
  }
}

protocol::EmbedReply ModelRunner::ReplyTo(const Job& job) const {
  protocol::EmbedReply reply;
  reply.model = info_.name;
  reply.version = info_.version;
  reply.worker = worker_id_;
  reply.count = static_cast<std::uint32_t>(job.request.inputs.size());
  return reply;
}

ModelRunner::Outcome ModelRunner::Tokenized(const Job& job) const {
  protocol::EmbedReply reply = ReplyTo(job);
  for (std::size_t i = 0; i < job.request.inputs.size(); ++i) {
    try {
      // Cut to the model's limit as embeddings are; each id with its vocabulary entry and the
      // bytes of the text it came from ({0, 0}: a special token the tokenizer added).
      const engine::Encoding e =
          tokenizer_->Encode(job.request.inputs[i], {.truncate = job.request.truncate,
                                                     .max_length = backend_->max_length(),
                                                     .offsets = true});
      reply.tokens.push_back(static_cast<std::uint32_t>(e.ids.size()));
      reply.token_ids.insert(reply.token_ids.end(), e.ids.begin(), e.ids.end());
      for (std::size_t k = 0; k < e.ids.size(); ++k) {
        reply.token_pieces.emplace_back(tokenizer_->IdToToken(e.ids[k]));
        reply.token_spans.push_back(e.spans[k].start);
        reply.token_spans.push_back(e.spans[k].stop);
      }
    } catch (const engine::TokenizerError& e) {
      return Outcome{job.request_id,
                     engine::ErrorCodeOf(e),
                     "input " + std::to_string(i) + ": " + e.what(),
                     {}};
    } catch (const Error& e) {
      return Outcome{job.request_id, e.code(), "input " + std::to_string(i) + ": " + e.what(), {}};
    } catch (const std::exception& e) {
      return Outcome{
          job.request_id, ErrorCode::kInternal, "input " + std::to_string(i) + ": " + e.what(), {}};
    }
  }
  return Outcome{job.request_id, std::nullopt, {}, {}, protocol::Encode(reply)};
}

ModelRunner::Outcome ModelRunner::Decoded(const Job& job) const {
  protocol::EmbedReply reply = ReplyTo(job);
  std::vector<std::int32_t> ids;
  for (std::size_t i = 0; i < job.request.inputs.size(); ++i) {
    // Decimal token ids separated by spaces.
    const std::string& input = job.request.inputs[i];
    ids.clear();
    for (std::size_t at = input.find_first_not_of(' '); at != std::string::npos;
         at = input.find_first_not_of(' ', at)) {
      std::int32_t id = 0;
      const auto [end, ec] = std::from_chars(input.data() + at, input.data() + input.size(), id);
      const std::size_t stop = static_cast<std::size_t>(end - input.data());
      if (ec != std::errc() || id < 0 || (stop < input.size() && input[stop] != ' ')) {
        return Outcome{job.request_id,
                       ErrorCode::kBadRequest,
                       "input " + std::to_string(i) + ": token ids must be decimal numbers " +
                           "separated by spaces",
                       {}};
      }
      ids.push_back(id);
      at = stop;
    }
    try {
      reply.texts.push_back(tokenizer_->Decode(ids, job.request.skip_special_tokens));
    } catch (const engine::TokenizerError& e) {
      return Outcome{job.request_id,
                     ErrorCode::kBadRequest,
                     "input " + std::to_string(i) + ": " + e.what(),
                     {}};
    } catch (const Error& e) {
      return Outcome{job.request_id, e.code(), "input " + std::to_string(i) + ": " + e.what(), {}};
    }
  }
  return Outcome{job.request_id, std::nullopt, {}, {}, protocol::Encode(reply)};
}

void ModelRunner::Fail(std::uint64_t request_id, ErrorCode code, const std::string& message,
                       std::vector<Outcome>* done) {
  auto it = requests_.find(request_id);
  if (it == requests_.end()) return;  // already answered
  batcher_.Remove(request_id);
  requests_.erase(it);
  done->push_back(Outcome{request_id, code, message, {}});
}

void ModelRunner::HandOver(std::vector<Outcome>& done) {
  if (done.empty()) return;
  for (Outcome& o : done) replies_.push_back(std::move(o));
  done.clear();
  reply_cv_.notify_one();
}

void ModelRunner::ScheduleLoop() {
  std::vector<Outcome> done;
  std::unique_lock lock(mu_);
  for (;;) {
    const auto now = Clock::now();
    for (const BatchItem& item : batcher_.TakeExpired(now)) {
      Fail(item.request, ErrorCode::kTimeout, "deadline passed while queued in the worker", &done);
    }
    // Form the next batch: by the batcher's rules while fewer than the limit run; at the
    // limit, only a full batch (waiting longer can only grow it).
    Clock::time_point wake = Clock::time_point::max();
    if (!ready_) {
      const bool slot_free = running_ < in_flight_limit_;
      if (slot_free && stop_) {
        if (batcher_.size() > 0) ready_ = batcher_.Take();  // draining: no waiting
      } else if (slot_free) {
        ready_ = batcher_.Next(now, &wake);
      } else if (batcher_.Full()) {
        ready_ = batcher_.Take();
      }
      if (ready_) {
        ready_at_ = now;
        infer_cv_.notify_one();
      }
    }
    HandOver(done);
    if (stop_ && tokenizing_ == 0 && batcher_.size() == 0 && !ready_ && running_ == 0) break;
    schedule_cv_.wait_until(lock, wake);
  }
  scheduler_done_ = true;
  infer_cv_.notify_all();
}

void ModelRunner::InferLoop() {
  std::vector<Outcome> done;
  std::unique_lock lock(mu_);
  for (;;) {
    infer_cv_.wait(lock, [this] { return ready_.has_value() || scheduler_done_; });
    if (!ready_) break;
    std::vector<BatchItem> batch = std::move(*ready_);
    ready_.reset();
    ++running_;
    schedule_cv_.notify_one();  // the slot is empty: the scheduler may fill it meanwhile
    RunBatch(std::move(batch), ready_at_, lock, &done);
    --running_;
    schedule_cv_.notify_one();  // a batch fewer runs: the scheduler may form the next
    HandOver(done);  // encoding and sending is the reply thread's: the next batch goes on
  }
  if (--inference_threads_ == 0) reply_cv_.notify_one();
}

void ModelRunner::ReplyLoop(zmq::context_t& context, const std::string& endpoint) {
  zmq::socket_t results(context, zmq::socket_type::push);
  results.set(zmq::sockopt::linger, 0);
  // No high-water mark: a send never blocks, so a runner stopping after the worker stopped
  // reading never hangs (what it sends is bounded by what it admitted, max-queue).
  results.set(zmq::sockopt::sndhwm, 0);
  results.connect(endpoint);
  std::vector<Outcome> outcomes;
  std::unique_lock lock(mu_);
  for (;;) {
    reply_cv_.wait(lock, [this] { return !replies_.empty() || inference_threads_ == 0; });
    if (replies_.empty()) return;  // the inference threads are gone and nothing is left
    outcomes.assign(std::make_move_iterator(replies_.begin()),
                    std::make_move_iterator(replies_.end()));
    replies_.clear();
    lock.unlock();
    Send(results, outcomes);
    lock.lock();
  }
}

ModelRunner::Kind ModelRunner::KindOf(protocol::Task task) {
  if (task == protocol::Task::kSparse) return kSparse;
  if (task == protocol::Task::kMultiVector) return kMultiVector;
  return kPooled;
}

void ModelRunner::RunBatch(std::vector<BatchItem> batch, Clock::time_point formed,
                           std::unique_lock<std::mutex>& lock, std::vector<Outcome>* done) {
  // Fail expired texts' requests before they cost any compute, then skip
  // texts of requests that failed (now or meanwhile).
  const auto now = Clock::now();
  const int running = running_;
  for (const BatchItem& item : batch) {
    if (item.deadline <= now) {
      Fail(item.request, ErrorCode::kTimeout, "deadline passed before inference", done);
    }
  }
  // The packed batch of each kind the backend runs.
  std::array<Run, kKinds> runs;
  std::size_t tokens = 0;
  for (const BatchItem& item : batch) tokens += item.tokens;
  runs[kPooled].ids.Reserve(batch.size(), tokens);
  std::size_t texts = 0;
  for (const BatchItem& item : batch) {
    auto it = requests_.find(item.request);
    if (it == requests_.end()) continue;
    std::vector<std::int32_t>& text = it->second.ids[item.index];
    const auto& seconds = it->second.seconds;
    Run& run = runs[KindOf(it->second.task)];
    run.ids.Add(text, seconds.empty() ? 0 : seconds[item.index]);
    text = {};  // its memory back now; reply sizes use only ids.size()
    run.items.push_back(item);
    ++texts;
  }
  if (texts == 0) return;

  lock.unlock();
  const auto start = Clock::now();
  for (std::size_t k = 0; k < kKinds; ++k) {
    if (!runs[k].items.empty()) Infer(static_cast<Kind>(k), runs[k]);
  }
  const auto took = Clock::now() - start;
  if (slowdown_ > 1.0) std::this_thread::sleep_for(took * (slowdown_ - 1.0));
  lock.lock();
  // The trace is for --log-level debug: without it, none of its work is done under the lock.
  const bool tracing = spdlog::should_log(spdlog::level::debug);
  BatchTrace trace{.texts = texts,
                   .tokens = 0,
                   .running = running,
                   .formed = formed,
                   .picked = now,
                   .start = start,
                   .ran = took,
                   .locked = Clock::now()};
  for (std::size_t k = 0; k < kKinds; ++k) {
    Run& run = runs[k];
    trace.tokens += run.ids.tokens();
    if (run.items.empty()) continue;
    if (!run.failure.empty()) {
      spdlog::error("model {} failed a batch of {}: {}", info_.name, run.items.size(), run.failure);
      for (const BatchItem& item : run.items) {
        Fail(item.request, ErrorCode::kInternal, "model failed: " + run.failure, done);
      }
      continue;
    }
    if (tracing) {
      for (const BatchItem& item : run.items) {
        trace.oldest = std::min(trace.oldest, item.enqueued);
        trace.newest = std::max(trace.newest, item.enqueued);
      }
    }
    Distribute(static_cast<Kind>(k), run, texts, &trace, tracing, done);
  }
  if (tracing) LogBatch(trace);
}

void ModelRunner::Infer(Kind kind, Run& run) {
  const std::size_t n = run.items.size();
  try {
    switch (kind) {
      case kPooled:
        run.vectors = backend_->Embed(run.ids);
        if (run.vectors.size() != n * info_.dim) {
          run.failure = "backend returned " + std::to_string(run.vectors.size()) + " floats for " +
                        std::to_string(n) + " texts of dim " + std::to_string(info_.dim);
        }
        break;
      case kSparse:
        run.sparse = backend_->EmbedSparse(run.ids);
        if (run.sparse.offsets.size() != n + 1 ||
            run.sparse.weights.size() != run.sparse.ids.size() ||
            run.sparse.offsets.back() != run.sparse.ids.size()) {
          run.failure =
              "backend returned sparse vectors that do not fit " + std::to_string(n) + " texts";
        }
        break;
      case kMultiVector:
        run.vectors = backend_->EmbedMultiVector(run.ids);
        if (run.vectors.size() !=
            (run.ids.tokens() - n) * static_cast<std::size_t>(backend_->multi_vector_dim())) {
          run.failure = "backend returned " + std::to_string(run.vectors.size()) +
                        " floats for the token vectors of " + std::to_string(n) + " texts";
        }
        break;
      case kKinds:
        break;
    }
  } catch (const std::exception& e) {
    run.failure = e.what();
  }
}

void ModelRunner::Distribute(Kind kind, Run& run, std::size_t batch_texts, BatchTrace* trace,
                             bool tracing, std::vector<Outcome>* done) {
  const std::size_t dim = info_.dim;
  const auto row_dim = static_cast<std::size_t>(backend_->multi_vector_dim());
  std::size_t row = 0;  // kMultiVector: the first token vector of text k
  for (std::size_t k = 0; k < run.items.size(); ++k) {
    const BatchItem& item = run.items[k];
    const std::size_t token_rows = kind == kMultiVector ? run.ids.length(k) - 1 : 0;
    row += token_rows;
    auto it = requests_.find(item.request);
    if (it == requests_.end()) continue;  // failed while we ran
    Request& r = it->second;
    if (kind == kPooled) {
      std::copy_n(run.vectors.begin() + static_cast<std::ptrdiff_t>(k * dim), dim,
                  r.vectors.begin() + static_cast<std::ptrdiff_t>(item.index * dim));
    } else if (kind == kSparse) {
      const auto first = static_cast<std::ptrdiff_t>(run.sparse.offsets[k]),
                 last = static_cast<std::ptrdiff_t>(run.sparse.offsets[k + 1]);
      r.rows[item.index].assign(run.sparse.weights.begin() + first,
                                run.sparse.weights.begin() + last);
      r.row_ids[item.index].assign(run.sparse.ids.begin() + first, run.sparse.ids.begin() + last);
    } else {
      const auto from =
          run.vectors.begin() + static_cast<std::ptrdiff_t>((row - token_rows) * row_dim);
      r.rows[item.index].assign(from, from + static_cast<std::ptrdiff_t>(token_rows * row_dim));
    }
    r.largest_batch = std::max(r.largest_batch, batch_texts);
    if (--r.remaining == 0) {
      if (tracing) {
        const auto stay = trace->locked - r.received;
        trace->stay_sum += stay;
        trace->stay_max = std::max(trace->stay_max, stay);
        ++trace->answered;
      }
      done->push_back(Outcome{it->first, std::nullopt, {}, std::move(r)});
      requests_.erase(it);
    }
  }
}

void ModelRunner::LogBatch(const BatchTrace& t) const {
  // One line per batch, parsed by bench/gpu/batch_trace.py: times in microseconds.
  const auto us = [](Clock::duration d) {
    return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
  };
  spdlog::debug(
      "batch model={} texts={} tokens={} running={} queued_oldest={} queued_newest={} "
      "slot_wait={} pack={} embed={} lock_wait={} unpack={} answered={} stay_mean={} "
      "stay_max={} end={}",
      info_.name, t.texts, t.tokens, t.running, us(t.picked - t.oldest), us(t.picked - t.newest),
      us(t.picked - t.formed), us(t.start - t.picked), us(t.ran), us(t.locked - t.start - t.ran),
      us(Clock::now() - t.locked), t.answered,
      t.answered ? us(t.stay_sum) / static_cast<long>(t.answered) : 0, us(t.stay_max),
      us(Clock::now().time_since_epoch()));
}

void ModelRunner::Send(zmq::socket_t& results, std::vector<Outcome>& outcomes) {
  for (Outcome& o : outcomes) {
    if (!o.reply.empty()) {
      zmq::send_multipart(results,
                          protocol::Encode(protocol::Command::kReply, o.request_id, o.reply));
      continue;
    }
    if (o.error) {
      zmq::send_multipart(
          results, protocol::Encode(protocol::Command::kError, o.request_id,
                                    protocol::Encode(protocol::ErrorBody{*o.error, o.message})));
      continue;
    }
    protocol::EmbedReply reply;
    reply.model = info_.name;
    reply.version = info_.version;
    reply.worker = worker_id_;
    reply.dim = info_.dim;
    reply.count = static_cast<std::uint32_t>(o.request.ids.size());
    if (o.request.dimensions != 0) {
      Cut(o.request.vectors, reply.count, o.request.dimensions);
      reply.dim = o.request.dimensions;
    }
    if (o.request.scores) {
      if (!o.request.raw_scores) {
        for (std::size_t i = 0; i < reply.count; ++i) {
          engine::ActivateScores(std::span(o.request.vectors).subspan(i * reply.dim, reply.dim));
        }
      }
      reply.labels = backend_->labels();
    }
    reply.batch_size = static_cast<std::uint32_t>(o.request.largest_batch);
    reply.data = std::move(o.request.vectors);
    if (KindOf(o.request.task) != kPooled) {
      // Each text's rows one after another, and a sparse text's token ids beside its weights.
      const bool sparse = o.request.task == protocol::Task::kSparse;
      reply.dim = sparse ? 1 : static_cast<std::uint32_t>(backend_->multi_vector_dim());
      for (std::size_t i = 0; i < o.request.rows.size(); ++i) {
        const auto& rows = o.request.rows[i];
        reply.rows.push_back(static_cast<std::uint32_t>(rows.size() / reply.dim));
        reply.data.insert(reply.data.end(), rows.begin(), rows.end());
        if (sparse) {
          reply.indices.insert(reply.indices.end(), o.request.row_ids[i].begin(),
                               o.request.row_ids[i].end());
        }
      }
    }
    reply.tokens = std::move(o.request.tokens);
    zmq::send_multipart(results, protocol::Encode(protocol::Command::kReply, o.request_id,
                                                  protocol::Encode(reply)));
  }
  {
    std::lock_guard lock(mu_);
    unanswered_ -= outcomes.size();
  }
  outcomes.clear();
}

void ModelRunner::Cut(std::vector<float>& data, std::size_t count, std::uint32_t dimensions) const {
  const std::size_t dim = info_.dim, d = dimensions;
  for (std::size_t i = 0; i < count; ++i) {
    // In place, front to back: row i's new place lies before its old one, and after every
    // row already moved (row 0 stays where it is).
    float* const to = data.data() + i * d;
    const float* const from = data.data() + i * dim;
    if (i > 0) std::copy(from, from + d, to);
    if (backend_->normalizes()) engine::NormalizeRow(std::span(to, d));
  }
  data.resize(count * d);
}

}  // namespace ember::worker
