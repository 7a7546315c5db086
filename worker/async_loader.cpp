#include "worker/async_loader.h"

#include <malloc.h>
#include <spdlog/spdlog.h>

#include <new>

namespace ember::worker {
namespace {

// While a model loads, large allocations (its weights) come straight from
// mmap, so that freeing them on unload returns the memory to the system at
// once. Left to itself glibc raises its mmap threshold after the first large
// free and puts later weights on the heap, where fragments of them can stay
// resident after an unload (measured: RSS after unload varied by ~20 MiB
// from cycle to cycle for an 86 MiB model). Afterwards the threshold is
// fixed high, as glibc's own adaptation would end up, so inference
// activations reuse heap memory instead of faulting in fresh pages.
class WeightsFromMmap {
 public:
  WeightsFromMmap() { mallopt(M_MMAP_THRESHOLD, 256 << 10); }
  ~WeightsFromMmap() { mallopt(M_MMAP_THRESHOLD, 32 << 20); }
  WeightsFromMmap(const WeightsFromMmap&) = delete;
  WeightsFromMmap& operator=(const WeightsFromMmap&) = delete;
};

}  // namespace

AsyncLoader::AsyncLoader(zmq::context_t& context, std::string wake_endpoint, LoadFn load)
    : load_(std::move(load)),
      thread_([this, &context, endpoint = std::move(wake_endpoint)] { Loop(context, endpoint); }) {}

AsyncLoader::~AsyncLoader() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void AsyncLoader::Start(ModelSpec spec) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(spec));
  }
  cv_.notify_one();
}

std::vector<LoadResult> AsyncLoader::TakeDone() {
  std::lock_guard lock(mu_);
  return std::exchange(done_, {});
}

void AsyncLoader::Loop(zmq::context_t& context, const std::string& endpoint) {
  zmq::socket_t wake(context, zmq::socket_type::push);
  wake.set(zmq::sockopt::linger, 0);
  wake.connect(endpoint);
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    LoadResult result;
    result.spec = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    const auto start = std::chrono::steady_clock::now();
    spdlog::info("loading model {} version {} from {}", result.spec.name, result.spec.version,
                 result.spec.path.string());
    try {
      WeightsFromMmap mmap_weights;
      result.model = load_(result.spec);
    } catch (const Error& e) {
      result.code = e.code();
      result.error = e.what();
    } catch (const std::bad_alloc&) {
      result.error = "out of memory while loading";
    } catch (const std::exception& e) {
      result.error = e.what();
    }
    result.took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    if (result.model.backend) {
      spdlog::info("model {} version {} loaded in {} ms ({} MiB)", result.spec.name,
                   result.spec.version, result.took.count(),
                   result.model.backend->memory_bytes() >> 20);
    } else {
      spdlog::error("model {} version {} failed to load: {}", result.spec.name, result.spec.version,
                    result.error);
    }
    lock.lock();
    done_.push_back(std::move(result));
    wake.send(zmq::message_t(), zmq::send_flags::dontwait);
  }
}

}  // namespace ember::worker
