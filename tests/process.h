// A child process for tests: started with fork/exec, ended (SIGTERM, then
// SIGKILL after a grace period) when the object goes out of scope, and killed
// by the kernel if the test process dies first (PR_SET_PDEATHSIG), so a
// failing or crashing test never leaves a router or worker running. (The
// kernel sends that signal when the *thread* that started the child exits:
// start processes from the test's main thread.)
#ifndef EMBER_TESTS_PROCESS_H_
#define EMBER_TESTS_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace ember::testing {

class Process {
 public:
  // Starts `argv[0]` with arguments; stdout/stderr go to `log_path` if set.
  explicit Process(std::vector<std::string> argv, const std::string& log_path = "");
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  bool running();
  // Sends `signal`; with SIGKILL the process is also reaped.
  void Signal(int signal);
  // Sends SIGTERM and waits up to `grace` for an exit, then SIGKILL. Returns
  // the exit status (as from waitpid) or -1 if it had to be killed.
  int Stop(std::chrono::milliseconds grace = std::chrono::seconds(5));

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
};

}  // namespace ember::testing

#endif  // EMBER_TESTS_PROCESS_H_
