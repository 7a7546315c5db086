// Whether a model fits the memory of the device it is to load on, told from its config's shapes
// before any weight is read: an 8B decoder on a 24 GiB host, or on a GPU that other models
// already fill, is refused with the figures instead of dying in an allocator half-way through
// loading (or being taken by the kernel's OOM killer with the whole worker). No LibTorch.
#ifndef EMBER_ENGINE_ENCODER_MEMORY_FIT_H_
#define EMBER_ENGINE_ENCODER_MEMORY_FIT_H_

#include <cstdint>
#include <optional>
#include <string>

#include "engine/encoder/encoder_config.h"

namespace ember::engine {

// Parameters of a model of these shapes: the token embeddings (and a position table, token
// types), every layer's projections, norms and biases, the final norm. `dense` counts the
// layers' projection weights alone (what a reduced precision stores in fewer bytes).
struct ParameterCount {
  int64_t total = 0, dense = 0;
};
ParameterCount CountParameters(const EncoderConfig& c);

// Bytes the loaded model keeps resident: dense weights at `dense_bytes` each (4 for fp32, 2 for
// bf16 / fp16, 1 for int8), the rest (embeddings, norms, biases) at `other_bytes`.
uint64_t ResidentBytes(const ParameterCount& n, int dense_bytes, int other_bytes);

// Bytes this process may still take on the host: /proc/meminfo's MemAvailable, capped by its
// cgroup v2 memory.max less memory.current where a limit is set (a container's). nullopt where
// neither can be read.
std::optional<uint64_t> AvailableHostMemory();

// "12.3 GiB".
std::string GiB(uint64_t bytes);

}  // namespace ember::engine

#endif  // EMBER_ENGINE_ENCODER_MEMORY_FIT_H_
