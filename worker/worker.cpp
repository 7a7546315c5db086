#include "worker/worker.h"

#include <malloc.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>
#include <zmq_addon.hpp>

#include "common/protocol.h"

namespace ember::worker {
namespace {

using protocol::Command;
using protocol::ModelState;

constexpr char kResultsEndpoint[] = "inproc://ember-worker-results";
constexpr char kLoadsEndpoint[] = "inproc://ember-worker-loads";

std::uint64_t RandomSession() {
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^ static_cast<std::uint64_t>(getpid());
}

// Resident set size of this process, from /proc (0 where unavailable).
std::uint64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace

Worker::Worker(WorkerOptions options, ModelSource source)
    : options_(std::move(options)),
      session_(RandomSession()),
      results_(context_, zmq::socket_type::pull),
      loads_(context_, zmq::socket_type::pull),
      repository_(std::move(source.repository)),
      startup_(std::move(source.startup)),
      lifecycle_(options_.id, repository_.get(), options_.heartbeat_interval * options_.liveness),
      tokenizers_(std::make_shared<TokenizerPool>(options_.tokenizer_threads > 0
                                                      ? options_.tokenizer_threads
                                                      : TokenizerPool::DefaultThreads())) {
  if (options_.routers.empty()) throw std::invalid_argument("a worker needs at least one router");
  results_.set(zmq::sockopt::linger, 0);
  results_.set(zmq::sockopt::rcvhwm, 0);  // the runners' replies never block (ReplyLoop)
  results_.bind(kResultsEndpoint);
  loads_.set(zmq::sockopt::linger, 0);
  loads_.bind(kLoadsEndpoint);
  for (const std::string& endpoint : options_.routers) {
    links_.push_back(std::make_unique<RouterLink>(
        context_, RouterLink::Options{.endpoint = endpoint,
                                      .id = options_.id,
                                      .heartbeat_interval = options_.heartbeat_interval,
                                      .liveness = options_.liveness,
                                      .curve = options_.curve}));
  }
  if (repository_) {
    loader_ = std::make_unique<AsyncLoader>(context_, kLoadsEndpoint, std::move(source.load));
  }
}

Worker::~Worker() {
  loader_.reset();  // finishes a load in progress
  // What is still queued was given back to the routers (Run's DISCONNECT): not computed.
  for (auto& [key, runner] : runners_) runner->Abandon();
  runners_.clear();  // joins runner threads before their sockets' context goes
}

std::size_t Worker::LiveLinks(Clock::time_point now) const {
  return static_cast<std::size_t>(std::count_if(
      links_.begin(), links_.end(), [now](const auto& link) { return link->Live(now); }));
}

std::uint32_t Worker::ShareFor(std::size_t link, Clock::time_point now) const {
  // A link not yet live is counted as joining, so that it never gets more than its share.
  const std::size_t sharing = LiveLinks(now) + (links_[link]->Live(now) ? 0 : 1);
  return std::max<std::uint32_t>(1, options_.capacity / static_cast<std::uint32_t>(sharing));
}

protocol::ReadyBody Worker::ReadyNow(Clock::time_point now) const {
  protocol::ReadyBody ready;
  ready.device = options_.device;
  ready.weight = options_.weight;
  ready.session = session_;
  ready.rss_bytes = ResidentBytes();
  ready.models = lifecycle_.Snapshot();
  for (const auto& l : links_) {
    if (l->Live(now)) ready.routers.push_back(l->endpoint());
  }
  return ready;
}

void Worker::SendReady(std::size_t link, std::uint64_t seq) {
  const auto now = Clock::now();
  protocol::ReadyBody ready = ReadyNow(now);
  // A fresh connection: what we answered this router over the old one may be lost, so it
  // learns what we still hold and sends the rest again (ReadyBody::holding).
  ready.holding.emplace();
  for (const auto& [job, origin] : jobs_) {
    if (origin.link == link) ready.holding->push_back(origin.id);
  }
  SendReady(link, seq, ready, now);
}

void Worker::SendReady(std::size_t link, std::uint64_t seq, protocol::ReadyBody& ready,
                       Clock::time_point now) {
  ready.capacity = ShareFor(link, now);
  links_[link]->Send(Command::kReady, seq, protocol::Encode(ready));
  spdlog::debug("worker '{}' sent READY {} to {} (capacity {}, {} model versions)", options_.id,
                seq, links_[link]->endpoint(), ready.capacity, ready.models.size());
}

void Worker::AnnounceAll() {
  const std::uint64_t seq = ++ready_seq_;
  const auto now = Clock::now();
  // The same state for every router; only its share of our capacity differs.
  protocol::ReadyBody ready = ReadyNow(now);
  for (std::size_t i = 0; i < links_.size(); ++i) {
    if (links_[i]->socket() != nullptr) SendReady(i, seq, ready, now);
  }
  // Stamped now that it has gone out: drains it announced wait for its acknowledgement.
  lifecycle_.Announced(seq, now);
  live_announced_ = LiveLinks(now);
}

void Worker::UpdateAcked(Clock::time_point now) {
  // Every live router must have seen the announcement before a drained version goes; a
  // silent one is left to the lifecycle's fallback (and re-registers from scratch).
  std::uint64_t acked = 0;
  bool any = false;
  for (const auto& link : links_) {
    if (!link->Live(now)) continue;
    acked = any ? std::min(acked, link->acked()) : link->acked();
    any = true;
  }
  if (any) lifecycle_.Acked(acked);
}

void Worker::Run(const std::atomic<bool>& stop) {
  const auto start = Clock::now();
  for (std::size_t i = 0; i < links_.size(); ++i) {
    links_[i]->Connect(start);
    SendReady(i, ++ready_seq_);
    spdlog::info("worker '{}' registering with router {}", options_.id, links_[i]->endpoint());
  }
  for (const auto& [model, version] : startup_) Apply(lifecycle_.Load(model, version, 0));
  const auto tick = std::min<std::chrono::milliseconds>(options_.heartbeat_interval,
                                                        std::chrono::milliseconds(50));
  std::vector<zmq::pollitem_t> items;
  std::vector<std::size_t> polled;  // link index of each router item
  for (;;) {
    if (!stopping_ && stop.load()) {
      // Stopping: refuse new work (HandleRequest), answer what we hold for at most the grace.
      stopping_ = true;
      leave_at_ = Clock::now() + options_.shutdown_grace;
      spdlog::info("worker '{}' stopping: answering its {} requests for at most {} ms", options_.id,
                   jobs_.size(), options_.shutdown_grace.count());
    }
    if (stopping_ && (jobs_.empty() || Clock::now() >= leave_at_)) break;
    items.clear();
    polled.clear();
    items.push_back({results_.handle(), 0, ZMQ_POLLIN, 0});
    items.push_back({loads_.handle(), 0, ZMQ_POLLIN, 0});
    for (std::size_t i = 0; i < links_.size(); ++i) {
      if (zmq::socket_t* socket = links_[i]->socket()) {
        items.push_back({socket->handle(), 0, ZMQ_POLLIN, 0});
        polled.push_back(i);
      }
    }
    zmq::poll(items.data(), items.size(), tick);
    for (std::size_t k = 0; k < polled.size(); ++k) {
      if (items[k + 2].revents & ZMQ_POLLIN) HandleRouter(polled[k]);
    }
    if (items[0].revents & ZMQ_POLLIN) ForwardResults();
    if (items[1].revents & ZMQ_POLLIN) FinishLoads();

    const auto now = Clock::now();
    for (std::size_t i = 0; i < links_.size(); ++i) {
      // A dropped link changes the live set (below); a reopened one registers afresh.
      if (links_[i]->Tick(now) == RouterLink::Step::kReconnect) SendReady(i, ++ready_seq_);
      if (links_[i]->HeartbeatDue(now)) links_[i]->Send(Command::kHeartbeat, 0, {});
    }
    // A router joined or fell silent: every router's share of our capacity changed.
    if (LiveLinks(now) != live_announced_) AnnounceAll();
    UpdateAcked(now);
    Apply(lifecycle_.FreeDrained(now, [this](const ModelKey& key) {
      auto it = runners_.find(key);
      return it == runners_.end() || it->second->Idle();
    }));
  }
  // Best effort and never blocking: a router that is down, or whose CURVE handshake never
  // completed, has nobody to tell. Each router sends again what we still hold.
  for (const auto& link : links_) link->Send(Command::kDisconnect, 0, {});
  spdlog::info("worker '{}' stopping; {} requests given back to the routers", options_.id,
               jobs_.size());
}

void Worker::HandleRouter(std::size_t link) {
  RouterLink& from = *links_[link];
  for (int i = 0; i < 256 && from.socket() != nullptr; ++i) {
    std::string error;
    auto received = protocol::ReceiveDealt(*from.socket(), &error);
    if (!received) return;
    from.Heard(Clock::now());
    if (!*received) {
      spdlog::warn("malformed message from router {}: {}", from.endpoint(), error);
      continue;
    }
    const protocol::Message& message = **received;
    switch (message.command) {
      case Command::kRequest:
        HandleRequest(link, message);
        break;
      case Command::kControl:
        HandleControl(link, message);
        break;
      case Command::kReady:
        // The router acknowledges a READY: every request it sent before seeing that READY
        // has arrived by now.
        from.Acked(message.request_id);
        break;
      case Command::kHeartbeat:
        break;
      case Command::kDisconnect:
        // The router does not know us (it restarted) or is going away: register again; if
        // it is going, liveness will take over.
        SendReady(link, ++ready_seq_);
        break;
      default:
        spdlog::warn("router {} sent unexpected {}", from.endpoint(),
                     protocol::CommandName(message.command));
    }
  }
}

void Worker::HandleRequest(std::size_t link, const protocol::Message& message) {
  const Origin origin{link, message.request_id};
  Job job;
  std::string error;
  if (!protocol::Decode(message.body(), &job.request, &error)) {
    SendError(origin, ErrorCode::kBadRequest, error);
    return;
  }
  if (job.request.inputs.empty()) {
    SendError(origin, ErrorCode::kBadRequest, "no inputs to embed");
    return;
  }
  if (message.budget_ms > 0) {
    // The router answers the client TIMEOUT then: give up on the request at the same time
    // (the body's timeout_ms is the client's, from before the request waited in the router).
    const std::uint32_t own = job.request.timeout_ms;
    job.request.timeout_ms = own == 0 ? message.budget_ms : std::min(own, message.budget_ms);
  }
  if (stopping_) {
    // Not the client's error: the router sends it to another worker (OVERLOADED from a
    // worker puts the request back in the router's queue).
    SendError(origin, ErrorCode::kOverloaded, "worker '" + options_.id + "' is stopping");
    return;
  }
  const auto key = lifecycle_.Route(job.request.model, job.request.version);
  auto runner = key ? runners_.find(*key) : runners_.end();
  if (runner == runners_.end()) {
    SendError(origin, ErrorCode::kUnknownModel,
              "worker '" + options_.id + "' does not serve model '" + job.request.model + "'");
    return;
  }
  job.request_id = ++next_id_;
  jobs_.emplace(job.request_id, origin);
  runner->second->Submit(std::move(job));
}

void Worker::HandleControl(std::size_t link, const protocol::Message& message) {
  const Origin origin{link, message.request_id};
  protocol::ControlRequest control;
  std::string error;
  if (!protocol::Decode(message.body(), &control, &error)) {
    SendError(origin, ErrorCode::kBadRequest, error);
    return;
  }
  const std::uint64_t id = ++next_id_;
  controls_.emplace(id, origin);
  switch (control.op) {
    case protocol::ControlOp::kLoad:
      Apply(lifecycle_.Load(control.model, control.version, id));
      return;
    case protocol::ControlOp::kUnload:
      Apply(lifecycle_.Unload(control.model, control.version, id));
      return;
    case protocol::ControlOp::kStatus:
    case protocol::ControlOp::kList:
      break;
  }
  SendResult(id, {.worker = options_.id,
                  .code = ErrorCode::kBadRequest,
                  .message = "a worker takes load and unload, not " +
                             std::string(protocol::ControlOpName(control.op))});
}

void Worker::FinishLoads() {
  zmq::message_t cue;
  while (loads_.recv(cue, zmq::recv_flags::dontwait)) {
  }
  if (!loader_) return;
  for (LoadResult& done : loader_->TakeDone()) {
    const ModelKey key{done.spec.name, done.spec.version};
    LoadOutcome outcome{.key = key,
                        .ok = done.model.backend != nullptr,
                        .code = done.code,
                        .error = done.error,
                        .took = done.took};
    if (done.model.backend) {
      outcome.dim = static_cast<std::uint32_t>(done.model.backend->dim());
      outcome.memory_bytes = done.model.backend->memory_bytes();
      loaded_[key] = {std::move(done.model), std::move(done.spec.batcher)};
    }
    Apply(lifecycle_.LoadFinished(outcome));
    loaded_.erase(key);  // not served after all (the version went away meanwhile)
  }
}

void Worker::Apply(Effects effects) {
  for (const ModelKey& key : effects.freed) runners_.erase(key);  // joins its threads
  if (!effects.freed.empty()) {
    // glibc keeps freed heap pages for reuse; give them back so that memory after an unload
    // is what operators (and the RSS test) expect.
    malloc_trim(0);
  }
  for (const ModelKey& key : effects.serve) {
    auto loaded = loaded_.find(key);
    if (loaded == loaded_.end()) continue;
    auto& [model, batcher] = loaded->second;
    const engine::Backend& backend = *model.backend;
    RunnerOptions runner{.batcher = std::move(batcher),
                         .tokenizers = tokenizers_,
                         .slowdown = options_.slowdown,
                         .batches_in_flight = options_.batches_in_flight > 0
                                                  ? options_.batches_in_flight
                                                  : backend.batches_in_flight()};
    // The backend says whether padding costs it compute: the token budget follows.
    runner.batcher.padded = backend.pads();
    const protocol::ModelInfo info{
        .name = key.first, .version = key.second, .dim = static_cast<std::uint32_t>(backend.dim())};
    runners_[key] = std::make_unique<ModelRunner>(options_.id, info, std::move(model), context_,
                                                  kResultsEndpoint, std::move(runner));
    loaded_.erase(loaded);
  }
  for (ModelSpec& spec : effects.loads) loader_->Start(std::move(spec));
  if (effects.announce) AnnounceAll();
  for (const auto& [id, result] : effects.replies) SendResult(id, result);
}

void Worker::ForwardResults() {
  for (int i = 0; i < 256; ++i) {
    std::vector<zmq::message_t> frames;
    if (!zmq::recv_multipart(results_, std::back_inserter(frames), zmq::recv_flags::dontwait)) {
      return;
    }
    const auto id = protocol::RequestIdOf(frames);
    auto job = id ? jobs_.find(*id) : jobs_.end();
    if (job == jobs_.end()) {
      spdlog::error("a runner answered job {} that nobody asked for", id.value_or(0));
      continue;
    }
    const Origin origin = job->second;
    jobs_.erase(job);
    protocol::SetRequestId(frames, origin.id);
    if (!links_[origin.link]->Send(frames)) {
      // That router has stopped hearing us; it re-dispatches what we had when it declares us
      // dead, so this reply is not the request's only chance.
      spdlog::warn("router {} unreachable: dropped a reply (it re-dispatches the request)",
                   links_[origin.link]->endpoint());
    }
  }
}

void Worker::SendError(const Origin& to, ErrorCode code, const std::string& message) {
  links_[to.link]->Send(Command::kError, to.id,
                        protocol::Encode(protocol::ErrorBody{code, message}));
}

void Worker::SendResult(std::uint64_t control_id, const protocol::ControlResult& result) {
  if (control_id == 0) return;  // a startup load: nobody asked
  auto control = controls_.find(control_id);
  if (control == controls_.end()) return;
  const Origin origin = control->second;
  controls_.erase(control);
  if (!result.ok) spdlog::warn("control {} refused: {}", origin.id, result.message);
  protocol::ControlResult r = result;
  r.worker = options_.id;
  links_[origin.link]->Send(Command::kReply, origin.id, protocol::Encode(r));
}

}  // namespace ember::worker
