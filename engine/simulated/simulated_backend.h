// A runtime without a model, to measure the serving path at a GPU's rate on any machine
// (bench/worker_cpu.sh). The worker tokenizes with the folder's real tokenizer (tokenizer.json or
// vocab.txt; engine/backend_factory.h opens it), and this forward only takes the time a device
// would: batch-us per batch plus
// token-ns per token, the calling thread asleep meanwhile, as a worker's inference thread is
// while a GPU computes. It returns unit vectors of `dim` floats that depend on each sequence's
// ids. So the worker's own CPU per text (tokenize, batch, copy out, reply, send) shows at the
// rate a GPU would serve, without the GPU.
//
// A version selects it with `backend = "simulated"` in its config.toml; its parameters:
//   dim                 vector length (default 384, MiniLM's)
//   batch-us            time of one batch, whatever its size (default 2000: the median backend
//                       call of 153 one-text requests on an H200, docs/performance.md)
//   token-ns            time per token on top (default 0)
//   batches-in-flight   batches it runs at once (default 2, as the CUDA encoder)
//   max-length          tokens per text at most (default 256)
#ifndef EMBER_ENGINE_SIMULATED_SIMULATED_BACKEND_H_
#define EMBER_ENGINE_SIMULATED_SIMULATED_BACKEND_H_

#include <memory>

#include "engine/backend.h"
#include "engine/backend_params.h"

namespace ember::engine {

// Throws ember::Error (BAD_REQUEST) for a bad or unknown parameter.
std::unique_ptr<Backend> LoadSimulatedBackend(BackendParams params);

}  // namespace ember::engine

#endif  // EMBER_ENGINE_SIMULATED_SIMULATED_BACKEND_H_
