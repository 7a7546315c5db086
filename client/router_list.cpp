#include "client/router_list.h"

#include <algorithm>
#include <random>
#include <stdexcept>

namespace ember {

RouterList::RouterList(std::vector<std::string> endpoints, std::size_t home, Backoff backoff)
    : home_(home), backoff_(backoff), current_(home) {
  if (endpoints.empty()) throw std::invalid_argument("no router endpoint given");
  if (home >= endpoints.size()) throw std::invalid_argument("home router out of range");
  for (auto& e : endpoints) routers_.push_back({.endpoint = std::move(e)});
}

std::vector<std::string> RouterList::Split(std::string_view list) {
  std::vector<std::string> out;
  while (!list.empty()) {
    const auto comma = list.find(',');
    std::string_view one = list.substr(0, comma);
    while (!one.empty() && one.front() == ' ') one.remove_prefix(1);
    while (!one.empty() && one.back() == ' ') one.remove_suffix(1);
    if (!one.empty()) out.emplace_back(one);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return out;
}

std::size_t RouterList::Pick(Clock::time_point now) const {
  // The one that answered last (at first: home), else the next in order not backing off.
  const std::size_t n = routers_.size();
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = (current_ + k) % n;
    if (!BackingOff(i, now)) return i;
  }
  // All backing off: the one that may be tried soonest.
  std::size_t soonest = 0;
  for (std::size_t i = 1; i < n; ++i) {
    if (routers_[i].retry_at < routers_[soonest].retry_at) soonest = i;
  }
  return soonest;
}

void RouterList::Failed(std::size_t router, Clock::time_point now) {
  Router& r = routers_[router];
  r.backoff = r.backoff.count() == 0 ? backoff_.first : std::min(r.backoff * 2, backoff_.max);
  r.retry_at = now + r.backoff;
  if (current_ == router) current_ = (router + 1) % routers_.size();
}

void RouterList::Answered(std::size_t router) {
  routers_[router].backoff = std::chrono::milliseconds(0);
  routers_[router].retry_at = {};
  current_ = router;
}

std::size_t RouterList::PickHome(int home, std::size_t count) {
  count = std::max<std::size_t>(count, 1);
  if (home >= 0) return static_cast<std::size_t>(home) % count;
  std::random_device rd;
  return rd() % count;
}

}  // namespace ember
