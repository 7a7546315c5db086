// A Backend without a model, for tests of the serving code (worker, lifecycle, batcher):
// each text becomes one id per byte, and each sequence's vector is [length, tag, 0, ...], so a
// test can tell which backend (tag) computed which text.
#ifndef EMBER_TESTS_FAKES_FAKE_BACKEND_H_
#define EMBER_TESTS_FAKES_FAKE_BACKEND_H_

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "common/error_code.h"
#include "engine/backend.h"

namespace ember::testing {

class FakeBackend : public engine::Backend {
 public:
  explicit FakeBackend(float tag = 1, std::int64_t dim = 4) : tag_(tag), dim_(dim) {}

  std::int64_t dim() const override { return dim_; }
  std::uint64_t memory_bytes() const override { return 1 << 20; }
  std::vector<std::int32_t> Tokenize(std::string_view text, bool /*truncate*/) const override {
    if (text.empty()) throw Error(ErrorCode::kBadRequest, "empty text");
    return std::vector<std::int32_t>(text.begin(), text.end());
  }
  std::vector<float> Embed(const engine::TokenBatch& batch) override {
    std::vector<float> out(batch.size() * static_cast<std::size_t>(dim_), 0.0f);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      out[i * static_cast<std::size_t>(dim_)] = static_cast<float>(batch.length(i));
      if (dim_ > 1) out[i * static_cast<std::size_t>(dim_) + 1] = tag_;
    }
    return out;
  }

 private:
  const float tag_;
  const std::int64_t dim_;
};

// A gate a loader thread waits at until the test opens it, so a test can hold a load in
// LOADING for as long as it needs (bounded: Wait gives up after `limit`).
class Gate {
 public:
  void Open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  // Returns whether the gate opened within `limit`.
  template <typename Duration>
  bool Wait(Duration limit) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [this] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

}  // namespace ember::testing

#endif  // EMBER_TESTS_FAKES_FAKE_BACKEND_H_
