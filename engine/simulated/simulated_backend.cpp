#include "engine/simulated/simulated_backend.h"

#include <chrono>
#include <cmath>
#include <thread>

namespace ember::engine {
namespace {

struct SimulatedParams {
  std::int64_t dim = 384;
  std::chrono::microseconds batch{2000};
  std::chrono::nanoseconds per_token{0};
  int batches_in_flight = 2;
  std::size_t max_length = 256;
};

class SimulatedBackend final : public Backend {
 public:
  explicit SimulatedBackend(SimulatedParams params) : params_(params) {}

  std::int64_t dim() const override { return params_.dim; }
  bool pads() const override { return false; }  // as the packing CUDA encoder
  int batches_in_flight() const override { return params_.batches_in_flight; }
  bool normalizes() const override { return true; }

  std::size_t max_length() const override { return params_.max_length; }

  std::vector<float> Embed(const TokenBatch& batch) override {
    const auto done = std::chrono::steady_clock::now() + params_.batch +
                      params_.per_token * static_cast<std::int64_t>(batch.tokens());
    const auto dim = static_cast<std::size_t>(params_.dim);
    std::vector<float> out(batch.size() * dim);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      // Cheap (O(dim), as copying a real vector out) and a function of the sequence: its length
      // and first and last ids pick the vector.
      const auto ids = batch.sequence(i);
      const auto first = static_cast<std::uint32_t>(ids.empty() ? 0 : ids.front());
      const auto last = static_cast<std::uint32_t>(ids.empty() ? 0 : ids.back());
      const std::uint32_t seed =
          static_cast<std::uint32_t>(ids.size()) * 2654435761u ^ first * 40503u ^ last;
      float* v = out.data() + i * dim;
      double norm = 0;
      for (std::size_t j = 0; j < dim; ++j) {
        v[j] = static_cast<float>((seed >> (j % 24)) % 17) - 8.0f + 0.5f;
        norm += double{v[j]} * v[j];
      }
      const auto scale = static_cast<float>(1.0 / std::sqrt(norm));
      for (std::size_t j = 0; j < dim; ++j) v[j] *= scale;
    }
    std::this_thread::sleep_until(done);  // the device's time; the thread idle meanwhile
    return out;
  }

 private:
  const SimulatedParams params_;
};

}  // namespace

std::unique_ptr<Backend> LoadSimulatedBackend(BackendParams params) {
  SimulatedParams p;
  if (const auto v = params.TakeInt("dim", 1, 65536)) p.dim = *v;
  if (const auto v = params.TakeInt("batch-us", 0, 10'000'000)) {
    p.batch = std::chrono::microseconds(*v);
  }
  if (const auto v = params.TakeInt("token-ns", 0, 1'000'000'000)) {
    p.per_token = std::chrono::nanoseconds(*v);
  }
  if (const auto v = params.TakeInt("batches-in-flight", 1, 64)) {
    p.batches_in_flight = static_cast<int>(*v);
  }
  if (const auto v = params.TakeInt("max-length", 2, 1'000'000)) {
    p.max_length = static_cast<std::size_t>(*v);
  }
  params.RejectUnused("simulated", "dim, batch-us, token-ns, batches-in-flight, max-length");
  return std::make_unique<SimulatedBackend>(p);
}

}  // namespace ember::engine
