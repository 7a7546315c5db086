// How far a model's load has come, as the runtime reports it while it reads the weights (the
// encoder runtime: after each layer), so that the minutes a 7-8B decoder takes to load show in
// the worker's log instead of a silence. Header-only, no runtime.
#ifndef EMBER_ENGINE_LOAD_PROGRESS_H_
#define EMBER_ENGINE_LOAD_PROGRESS_H_

#include <cstdint>
#include <functional>

namespace ember::engine {

struct LoadProgress {
  std::int64_t layers_loaded = 0, layers = 0;
  // Bytes of the checkpoint read so far, and in all (the files' tensor data).
  std::uint64_t bytes_read = 0, bytes_total = 0;
};

// Called on the loading thread; it must not throw. Empty: nobody listens.
using LoadProgressFn = std::function<void(const LoadProgress&)>;

}  // namespace ember::engine

#endif  // EMBER_ENGINE_LOAD_PROGRESS_H_
