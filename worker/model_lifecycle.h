// The life of each model version on a worker, in the manner of Triton's model_lifecycle: which
// versions are LOADING, READY, UNLOADING or FAILED, and the rules that move them. Pure state:
// no sockets, no threads, no clock of its own (callers pass `now`), so every rule is unit
// tested alone (tests/model_lifecycle_test.cpp).
//
// Each operation validates first and changes nothing when it refuses. It returns the Effects
// the caller must carry out, in this order: destroy the runners of `freed` versions, create
// runners for `serve` versions (from the backends their loads produced), start `loads`,
// announce the new state to the router (a READY with Snapshot()) when `announce`, then send
// `replies`. So an announcement never names a version the worker cannot serve, and a client
// that hears "loaded" or "unloaded" finds the router already routing accordingly.
//
// Draining: a version taken out of service (unload, or retired by its model's version policy
// when a newer one is READY) becomes UNLOADING. The router may still send it requests until it
// has seen the announcement; the announcement is stamped with its READY sequence number when
// it is sent (Announced), and the router acknowledges each READY (Acked). A version is freed
// once the acknowledgement of its announcement is in (or, with no router to acknowledge,
// `fallback` after it) and its runner is idle.
#ifndef EMBER_WORKER_MODEL_LIFECYCLE_H_
#define EMBER_WORKER_MODEL_LIFECYCLE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/error_code.h"
#include "common/messages.h"
#include "worker/model_repository.h"

namespace ember::worker {

using ModelKey = std::pair<std::string, std::uint32_t>;  // (model, version)

struct Effects {
  std::vector<ModelKey> freed;   // destroy these runners (they are idle)
  std::vector<ModelKey> serve;   // create runners for these, from their loads' backends
  std::vector<ModelSpec> loads;  // start these loads
  bool announce = false;         // send READY with Snapshot()
  std::vector<std::pair<std::uint64_t, protocol::ControlResult>> replies;  // (control id, result)

  void Merge(Effects other);
};

// How a load ended (the backend itself stays with the caller).
struct LoadOutcome {
  ModelKey key;
  bool ok = false;
  std::uint32_t dim = 0;
  std::uint64_t memory_bytes = 0;
  ErrorCode code = ErrorCode::kInternal;  // when !ok
  std::string error{};
  std::chrono::milliseconds took{0};
};

class ModelLifecycle {
 public:
  // `repository` (may be null: then every load is refused) says which versions exist, how to
  // load them and how many of a model's versions to keep. `fallback`: how long an unannounced
  // drain waits for an acknowledgement that may never come (the router's liveness).
  ModelLifecycle(std::string worker_id, const ModelRepository* repository,
                 std::chrono::milliseconds fallback);

  // Load `version` of `model` (0: the newest in the repository) for control request
  // `control_id` (0: nobody waits, as at startup).
  Effects Load(const std::string& model, std::uint32_t version, std::uint64_t control_id);
  // A load started by Load() ended.
  Effects LoadFinished(const LoadOutcome& outcome);
  // Take `version` of `model` (0: every version) out of service; answered when freed.
  // Refused, changing nothing, while any matching version is still LOADING.
  Effects Unload(const std::string& model, std::uint32_t version, std::uint64_t control_id);

  // A READY with sequence number `seq` went out at `now`, announcing Snapshot().
  void Announced(std::uint64_t seq, std::chrono::steady_clock::time_point now);
  // The router acknowledged READY `seq` (and so every one before it).
  void Acked(std::uint64_t seq);
  // Frees the UNLOADING versions that nothing can reach any more and whose runner is idle.
  Effects FreeDrained(std::chrono::steady_clock::time_point now,
                      const std::function<bool(const ModelKey&)>& idle);

  // The version a request for (model, version) runs on: `version` itself while READY or
  // draining; for 0, the newest READY version. nullopt: not served here.
  std::optional<ModelKey> Route(const std::string& model, std::uint32_t version) const;
  // Every version and its state, as READY announces them.
  std::vector<protocol::ModelInfo> Snapshot() const;
  std::optional<protocol::ModelState> StateOf(const ModelKey& key) const;

 private:
  struct Slot {
    protocol::ModelInfo info;
    std::vector<std::uint64_t> load_waiters;    // control ids answered when the load ends
    std::vector<std::uint64_t> unload_waiters;  // ... when the slot is freed
    // The READY that announced UNLOADING; 0 while that announcement has not gone out.
    std::uint64_t unload_seq = 0;
    std::chrono::steady_clock::time_point unloading_since;  // when it went out
  };
  // An unload of several versions is answered when the last one is freed.
  struct UnloadReply {
    std::size_t remaining = 0;
    protocol::ControlResult result;
  };

  // Starts draining the READY versions of `model` beyond its policy's limit, keeping
  // `keep_first` and then the newest. Returns whether any changed.
  bool Retire(const std::string& model, std::uint32_t keep_first);
  void StartDraining(Slot& slot);
  // Takes a draining slot back into service, failing the unloads that wait on it.
  void CancelUnload(Slot& slot, Effects& effects);
  protocol::ControlResult Failure(ErrorCode code, std::string message) const;

  const std::string worker_id_;
  const ModelRepository* const repository_;
  const std::chrono::milliseconds fallback_;
  std::map<ModelKey, Slot> slots_;
  std::map<std::uint64_t, UnloadReply> unload_replies_;  // by control id
  std::uint64_t acked_ = 0;                              // highest READY acknowledged
};

}  // namespace ember::worker

#endif  // EMBER_WORKER_MODEL_LIFECYCLE_H_
