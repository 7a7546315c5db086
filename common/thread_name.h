// Names the calling thread as `top -H`, /proc/PID/task/*/comm and profilers show it, so that
// a worker's CPU can be told apart per role (bench/gpu/thread_cpu.py): scheduler, inference,
// replies, tokenizers. Linux keeps 15 characters; longer names are cut.
#ifndef EMBER_COMMON_THREAD_NAME_H_
#define EMBER_COMMON_THREAD_NAME_H_

#include <pthread.h>

#include <string>

namespace ember {

inline void NameThisThread(std::string name) {
  if (name.size() > 15) name.resize(15);
  pthread_setname_np(pthread_self(), name.c_str());  // only fails for names over 15
}

}  // namespace ember

#endif  // EMBER_COMMON_THREAD_NAME_H_
