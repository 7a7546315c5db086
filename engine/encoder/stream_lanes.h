// The streams of one model on one accelerator, one per batch in flight: each Embed call leases
// a stream no other call is using, so that two batches' kernels and copies run side by side
// instead of queueing behind each other on one stream (and a call waiting for its result never
// waits for the other's work too). Device-generic (c10's guard registry), so it compiles
// against a CPU-only LibTorch.
#ifndef EMBER_ENGINE_ENCODER_STREAM_LANES_H_
#define EMBER_ENGINE_ENCODER_STREAM_LANES_H_

#include <c10/core/Device.h>
#include <c10/core/Stream.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <mutex>
#include <vector>

namespace ember::engine {

class StreamLanes {
 public:
  explicit StreamLanes(c10::Device device) : device_(device) {}

  // A stream for the caller alone until the lease ends: a free one, or a new one from
  // LibTorch's pool when every stream is leased (as many streams as calls ever ran at once).
  class Lease {
   public:
    Lease(StreamLanes& lanes, c10::Stream stream) : lanes_(&lanes), stream_(stream) {}
    ~Lease() {
      if (lanes_) lanes_->Release(stream_);
    }
    Lease(Lease&& other) noexcept : lanes_(other.lanes_), stream_(other.stream_) {
      other.lanes_ = nullptr;
    }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Lease& operator=(Lease&&) = delete;
    c10::Stream stream() const { return stream_; }

   private:
    StreamLanes* lanes_;
    c10::Stream stream_;
  };

  Lease Acquire() {
    std::lock_guard lock(mu_);
    if (free_.empty()) {
      const c10::impl::VirtualGuardImpl guard_impl(device_.type());
      return Lease(*this, guard_impl.getStreamFromGlobalPool(device_));
    }
    const c10::Stream stream = free_.back();
    free_.pop_back();
    return Lease(*this, stream);
  }

 private:
  void Release(c10::Stream stream) {
    std::lock_guard lock(mu_);
    free_.push_back(stream);
  }

  const c10::Device device_;
  std::mutex mu_;
  std::vector<c10::Stream> free_;  // guarded by mu_
};

}  // namespace ember::engine

#endif  // EMBER_ENGINE_ENCODER_STREAM_LANES_H_
