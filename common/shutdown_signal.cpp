#include "common/shutdown_signal.h"

#include <pthread.h>
#include <signal.h>

#include <ctime>

namespace ember {
namespace {

sigset_t ShutdownSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

ShutdownSignal::ShutdownSignal() {
  const sigset_t set = ShutdownSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  waiter_ = std::thread([this, set] {
    // Wake up regularly so the destructor never waits long for this thread.
    const timespec tick{0, 100'000'000};
    while (!done_.load()) {
      if (sigtimedwait(&set, nullptr, &tick) > 0) Request();
    }
  });
}

ShutdownSignal::~ShutdownSignal() {
  done_.store(true);
  waiter_.join();
}

}  // namespace ember
