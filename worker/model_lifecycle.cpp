#include "worker/model_lifecycle.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace ember::worker {
namespace {

using protocol::ModelState;

std::string VersionText(std::uint32_t version) {
  return version ? " version " + std::to_string(version) : "";
}

}  // namespace

void Effects::Merge(Effects other) {
  auto append = [](auto& to, auto& from) {
    to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
  };
  append(freed, other.freed);
  append(serve, other.serve);
  append(loads, other.loads);
  append(replies, other.replies);
  announce |= other.announce;
}

ModelLifecycle::ModelLifecycle(std::string worker_id, const ModelRepository* repository,
                               std::chrono::milliseconds fallback)
    : worker_id_(std::move(worker_id)), repository_(repository), fallback_(fallback) {}

protocol::ControlResult ModelLifecycle::Failure(ErrorCode code, std::string message) const {
  return {.worker = worker_id_, .code = code, .message = std::move(message)};
}

Effects ModelLifecycle::Load(const std::string& model, std::uint32_t version,
                             std::uint64_t control_id) {
  Effects effects;
  auto reply = [&](protocol::ControlResult r) {
    if (!r.ok && control_id == 0) spdlog::warn("load {}:{} refused: {}", model, version, r.message);
    if (control_id != 0) effects.replies.emplace_back(control_id, std::move(r));
  };
  if (repository_ == nullptr) {
    // UNKNOWN_MODEL, like a repository without the model: a load sent to every worker leaves
    // out those that cannot have it.
    reply(Failure(ErrorCode::kUnknownModel,
                  "worker '" + worker_id_ + "' has no model repository (--repository)"));
    return effects;
  }
  std::vector<std::uint32_t> versions;
  try {
    versions = repository_->Versions(model);
  } catch (const std::exception& e) {
    reply(Failure(ErrorCode::kInternal, e.what()));
    return effects;
  }
  if (version == 0 && !versions.empty()) version = versions.back();
  if (std::ranges::find(versions, version) == versions.end()) {
    reply(Failure(ErrorCode::kUnknownModel, "model '" + model + "'" + VersionText(version) +
                                                " is not in " + repository_->Describe()));
    return effects;
  }
  const ModelKey key{model, version};
  auto it = slots_.find(key);
  const ModelState state = it == slots_.end() ? ModelState::kFailed : it->second.info.state;
  switch (state) {
    case ModelState::kLoading:
      if (control_id != 0) it->second.load_waiters.push_back(control_id);
      return effects;
    case ModelState::kReady:
    case ModelState::kUnloading: {
      // Serving: still make it the kept version (a rollback). Draining: take it back into
      // service instead of loading it again.
      Slot& slot = it->second;
      if (state == ModelState::kUnloading) CancelUnload(slot, effects);
      effects.announce |= Retire(model, version) || state == ModelState::kUnloading;
      reply({.worker = worker_id_,
             .ok = true,
             .version = version,
             .memory_bytes = slot.info.memory_bytes});
      return effects;
    }
    case ModelState::kFailed:
      break;
  }
  // New, or failed before: read its spec before anything changes.
  ModelSpec spec;
  try {
    spec = repository_->Spec(model, version);
  } catch (const std::exception& e) {
    if (it != slots_.end()) slots_.erase(it);  // the old failure is superseded by this one
    reply(Failure(ErrorCode::kBadRequest, e.what()));
    return effects;
  }
  Slot& slot = slots_[key];
  slot.info = {.name = model, .version = version, .state = ModelState::kLoading};
  if (control_id != 0) slot.load_waiters.push_back(control_id);
  effects.loads.push_back(std::move(spec));
  effects.announce = true;  // operators see LOADING while it runs
  return effects;
}

Effects ModelLifecycle::LoadFinished(const LoadOutcome& outcome) {
  Effects effects;
  auto it = slots_.find(outcome.key);
  if (it == slots_.end() || it->second.info.state != ModelState::kLoading) return effects;
  Slot& slot = it->second;
  protocol::ControlResult result{.worker = worker_id_,
                                 .version = outcome.key.second,
                                 .millis = static_cast<std::uint32_t>(outcome.took.count())};
  if (!outcome.ok) {
    // The versions already serving are untouched: a failed load only leaves a FAILED entry
    // saying why.
    slot.info.state = ModelState::kFailed;
    slot.info.message = outcome.error;
    result.code = outcome.code;
    result.message = outcome.error;
  } else {
    slot.info.dim = outcome.dim;
    slot.info.memory_bytes = outcome.memory_bytes;
    slot.info.state = ModelState::kReady;
    slot.info.message.clear();
    result.ok = true;
    result.memory_bytes = outcome.memory_bytes;
    effects.serve.push_back(outcome.key);
    Retire(outcome.key.first, outcome.key.second);
  }
  effects.announce = true;
  for (std::uint64_t id : std::exchange(slot.load_waiters, {})) {
    effects.replies.emplace_back(id, result);
  }
  return effects;
}

Effects ModelLifecycle::Unload(const std::string& model, std::uint32_t version,
                               std::uint64_t control_id) {
  Effects effects;
  // Validate first: a refused unload leaves every version as it was.
  std::vector<ModelKey> matched;
  for (auto it = slots_.lower_bound({model, 0}); it != slots_.end() && it->first.first == model;
       ++it) {
    if (version != 0 && it->first.second != version) continue;
    if (it->second.info.state == ModelState::kLoading) {
      // A load cannot be interrupted mid-file; say so rather than wait.
      effects.replies.emplace_back(
          control_id, Failure(ErrorCode::kUnavailable,
                              "model '" + model + "' version " + std::to_string(it->first.second) +
                                  " is still loading; unload it when it is ready"));
      return effects;
    }
    matched.push_back(it->first);
  }
  if (matched.empty()) {
    effects.replies.emplace_back(
        control_id, Failure(ErrorCode::kUnknownModel, "worker '" + worker_id_ + "' has no model '" +
                                                          model + "'" + VersionText(version)));
    return effects;
  }
  // Then act: failed entries go at once, serving ones drain.
  std::size_t draining = 0;
  for (const ModelKey& key : matched) {
    Slot& slot = slots_.at(key);
    if (slot.info.state == ModelState::kFailed) {
      slots_.erase(key);
      effects.announce = true;
      continue;
    }
    if (slot.info.state == ModelState::kReady) {
      StartDraining(slot);
      effects.announce = true;
    }
    slot.unload_waiters.push_back(control_id);
    ++draining;
  }
  const protocol::ControlResult ok{.worker = worker_id_, .ok = true, .version = version};
  if (draining == 0) {
    effects.replies.emplace_back(control_id, ok);
  } else {
    unload_replies_[control_id] = {.remaining = draining, .result = ok};
  }
  return effects;
}

void ModelLifecycle::Announced(std::uint64_t seq, std::chrono::steady_clock::time_point now) {
  for (auto& [key, slot] : slots_) {
    if (slot.info.state == ModelState::kUnloading && slot.unload_seq == 0) {
      slot.unload_seq = seq;
      slot.unloading_since = now;
    }
  }
}

void ModelLifecycle::Acked(std::uint64_t seq) { acked_ = std::max(acked_, seq); }

Effects ModelLifecycle::FreeDrained(std::chrono::steady_clock::time_point now,
                                    const std::function<bool(const ModelKey&)>& idle) {
  Effects effects;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> freed;  // (control id, bytes)
  for (auto it = slots_.begin(); it != slots_.end();) {
    Slot& slot = it->second;
    // Unreachable once the router has seen the announcement; without an acknowledgement
    // (router gone) nothing can arrive for it either once liveness has run out.
    const bool unreachable = slot.unload_seq != 0 &&
                             (acked_ >= slot.unload_seq || now - slot.unloading_since >= fallback_);
    if (slot.info.state != ModelState::kUnloading || !unreachable || !idle(it->first)) {
      ++it;
      continue;
    }
    spdlog::info("model {} version {} unloaded ({} MiB freed)", slot.info.name, slot.info.version,
                 slot.info.memory_bytes >> 20);
    for (std::uint64_t id : slot.unload_waiters) freed.emplace_back(id, slot.info.memory_bytes);
    effects.freed.push_back(it->first);
    it = slots_.erase(it);
  }
  if (effects.freed.empty()) return effects;
  effects.announce = true;
  for (const auto& [id, bytes] : freed) {
    auto reply = unload_replies_.find(id);
    if (reply == unload_replies_.end()) continue;
    reply->second.result.memory_bytes += bytes;
    if (--reply->second.remaining == 0) {
      effects.replies.emplace_back(id, std::move(reply->second.result));
      unload_replies_.erase(reply);
    }
  }
  return effects;
}

std::optional<ModelKey> ModelLifecycle::Route(const std::string& model,
                                              std::uint32_t version) const {
  if (version != 0) {
    // A draining version still answers what the router sent before it learned it was going.
    auto it = slots_.find({model, version});
    if (it == slots_.end()) return std::nullopt;
    const ModelState s = it->second.info.state;
    if (s != ModelState::kReady && s != ModelState::kUnloading) return std::nullopt;
    return it->first;
  }
  std::optional<ModelKey> newest;
  for (auto it = slots_.lower_bound({model, 0}); it != slots_.end() && it->first.first == model;
       ++it) {
    if (it->second.info.state == ModelState::kReady) newest = it->first;
  }
  return newest;
}

std::vector<protocol::ModelInfo> ModelLifecycle::Snapshot() const {
  std::vector<protocol::ModelInfo> models;
  models.reserve(slots_.size());
  for (const auto& [key, slot] : slots_) models.push_back(slot.info);
  return models;
}

std::optional<protocol::ModelState> ModelLifecycle::StateOf(const ModelKey& key) const {
  auto it = slots_.find(key);
  if (it == slots_.end()) return std::nullopt;
  return it->second.info.state;
}

bool ModelLifecycle::Retire(const std::string& model, std::uint32_t keep_first) {
  const std::size_t keep = repository_ ? repository_->PolicyFor(model).Keep() : 0;
  if (keep == 0) return false;
  std::vector<Slot*> versions;  // ascending
  for (auto it = slots_.lower_bound({model, 0}); it != slots_.end() && it->first.first == model;
       ++it) {
    versions.push_back(&it->second);
  }
  std::size_t kept = 1;  // keep_first
  bool changed = false;
  for (auto s = versions.rbegin(); s != versions.rend(); ++s) {
    Slot& slot = **s;
    if (slot.info.version == keep_first || slot.info.state != ModelState::kReady) continue;
    if (kept < keep) {
      ++kept;
      continue;
    }
    spdlog::info("model {} version {} retired by version {} (policy keeps {})", model,
                 slot.info.version, keep_first, keep);
    StartDraining(slot);
    changed = true;
  }
  return changed;
}

void ModelLifecycle::StartDraining(Slot& slot) {
  slot.info.state = ModelState::kUnloading;
  slot.unload_seq = 0;  // stamped by Announced() when the announcement goes out
}

void ModelLifecycle::CancelUnload(Slot& slot, Effects& effects) {
  for (std::uint64_t id : std::exchange(slot.unload_waiters, {})) {
    if (unload_replies_.erase(id) == 0) continue;
    effects.replies.emplace_back(
        id, Failure(ErrorCode::kUnavailable, "model '" + slot.info.name + "' version " +
                                                 std::to_string(slot.info.version) +
                                                 " was loaded again before it drained"));
  }
  slot.info.state = ModelState::kReady;
  slot.unload_seq = 0;
}

}  // namespace ember::worker
