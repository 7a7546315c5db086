// Which of several routers a client talks to, and when it tries a failed one again: the
// client half of running several routers (docs/operations.md "Several routers").
//
// A client starts at a home router (spread: a random one unless told), stays with whatever
// router answers, and moves to the next when one fails (no answer in time, connection lost,
// nothing reachable). A failed router is skipped for a backoff that doubles from
// `Backoff::first` up to `Backoff::max` and resets when it answers again. Away from home, once
// the home router's backoff is over the client may fail back (FailBackDue): it probes home
// in the background and moves there when the probe connects (client/client.cpp), so that
// load spreads again after a router returns, at no request's expense.
// When every router is backing off, the one whose backoff ends first is tried anyway: a
// call is never refused without trying.
//
// Pure logic with the time passed in, so the rules are unit tested on a fake clock
// (tests/router_list_test.cpp).
#ifndef EMBER_CLIENT_ROUTER_LIST_H_
#define EMBER_CLIENT_ROUTER_LIST_H_

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ember {

class RouterList {
 public:
  using Clock = std::chrono::steady_clock;

  struct Backoff {
    std::chrono::milliseconds first{500};
    std::chrono::milliseconds max{5'000};
  };

  // `endpoints` must not be empty; `home` indexes it.
  RouterList(std::vector<std::string> endpoints, std::size_t home, Backoff backoff);
  RouterList(std::vector<std::string> endpoints, std::size_t home)
      : RouterList(std::move(endpoints), home, Backoff{}) {}

  // "tcp://a:5555,tcp://b:5555" -> its endpoints (one without commas: itself).
  static std::vector<std::string> Split(std::string_view list);
  // The home router of `count`: `home` if >= 0 (mod count), else a random one, so that
  // clients spread over the routers.
  static std::size_t PickHome(int home, std::size_t count);

  // The router to use now.
  std::size_t Pick(Clock::time_point now) const;
  // `router` gave no answer, lost its connection or could not be reached.
  void Failed(std::size_t router, Clock::time_point now);
  // `router` answered (or, for a fail-back probe, connected).
  void Answered(std::size_t router);
  // Whether the client is away from home and home's backoff is over: time to probe it.
  bool FailBackDue(Clock::time_point now) const {
    return current_ != home_ && !BackingOff(home_, now);
  }
  std::size_t current() const { return current_; }

  const std::string& endpoint(std::size_t router) const { return routers_[router].endpoint; }
  std::size_t size() const { return routers_.size(); }
  std::size_t home() const { return home_; }
  // Whether `router` is backing off at `now`.
  bool BackingOff(std::size_t router, Clock::time_point now) const {
    return now < routers_[router].retry_at;
  }

 private:
  struct Router {
    std::string endpoint;
    Clock::time_point retry_at{};  // skipped until then
    std::chrono::milliseconds backoff{0};
  };

  std::vector<Router> routers_;
  const std::size_t home_;
  const Backoff backoff_;
  std::size_t current_;  // the one that last answered (or home)
};

}  // namespace ember

#endif  // EMBER_CLIENT_ROUTER_LIST_H_
