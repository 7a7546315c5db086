#include "tests/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>
#include <thread>

namespace ember::testing {

Process::Process(std::vector<std::string> argv, const std::string& log_path) {
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("cannot fork for " + argv[0]);
  if (pid_ == 0) {
    // Die with the test process, even if it crashes before our destructor
    // runs, so a failed test never leaves a router or worker behind.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    if (!log_path.empty()) {
      const int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
      }
    }
    execv(args[0], args.data());
    _exit(127);
  }
}

Process::~Process() { Stop(std::chrono::seconds(5)); }

bool Process::running() {
  if (reaped_) return false;
  if (waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
  return !reaped_;
}

void Process::Signal(int signal) {
  if (!running()) return;
  kill(pid_, signal);
  if (signal == SIGKILL) {
    waitpid(pid_, &status_, 0);
    reaped_ = true;
  }
}

int Process::Stop(std::chrono::milliseconds grace) {
  if (!running()) return status_;
  kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!running()) return status_;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Signal(SIGKILL);
  return -1;
}

}  // namespace ember::testing
