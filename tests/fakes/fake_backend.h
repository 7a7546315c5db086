// A Backend without a model and a tokenizer without a vocabulary, for tests of the serving code
// (worker, lifecycle, batcher): each text becomes one id per byte (FakeTokenizer), and each
// sequence's vector is [length, tag, 0, ...], so a test can tell which backend (tag) computed
// which text. Model(backend) pairs a backend with a FakeTokenizer, as the worker serves them.
#ifndef EMBER_TESTS_FAKES_FAKE_BACKEND_H_
#define EMBER_TESTS_FAKES_FAKE_BACKEND_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "engine/backend.h"
#include "engine/model.h"
#include "engine/tokenizer/tokenizer.h"

namespace ember::testing {

// A gate a loader (or batch) thread waits at until the test opens it, so a test can hold a
// load in LOADING, or a batch running, for as long as it needs (bounded: Wait gives up after
// `limit`).
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

class FakeBackend : public engine::Backend {
 public:
  // With `hold`, every batch waits for it to open (at most 30 s) before it is computed.
  explicit FakeBackend(float tag = 1, std::int64_t dim = 4, Gate* hold = nullptr)
      : tag_(tag), dim_(dim), hold_(hold) {}

  std::int64_t dim() const override { return dim_; }
  std::uint64_t memory_bytes() const override { return 1 << 20; }
  std::size_t max_length() const override { return 1'000'000; }
  std::vector<float> Embed(const engine::TokenBatch& batch) override {
    if (hold_ != nullptr) hold_->Wait(std::chrono::seconds(30));
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
  Gate* const hold_;
};

class FakeTokenizer : public engine::Tokenizer {
 public:
  engine::Encoding Encode(std::string_view text, const engine::EncodeOptions&) const override {
    if (text.empty())
      throw engine::TokenizerError(engine::TokenizerErrorCode::kBadUtf8, "empty text");
    engine::Encoding out;
    out.ids.assign(text.begin(), text.end());
    out.spans.resize(out.ids.size());
    return out;
  }
  engine::Encoding EncodePair(std::string_view first, std::string_view second,
                              const engine::EncodeOptions& options) const override {
    engine::Encoding out = Encode(first, options);
    out.second_start = out.ids.size();
    const engine::Encoding b = Encode(second, options);
    out.ids.insert(out.ids.end(), b.ids.begin(), b.ids.end());
    return out;
  }
  std::string Decode(std::span<const std::int32_t> ids, bool) const override {
    return std::string(ids.begin(), ids.end());
  }
  std::size_t vocab_size() const override { return 256; }
  std::string_view IdToToken(std::int32_t) const override { return "x"; }
  std::optional<std::int32_t> TokenToId(std::string_view) const override { return std::nullopt; }
  bool IsSpecial(std::int32_t) const override { return false; }
  std::size_t max_length() const override { return 0; }
};

// `backend` with a FakeTokenizer.
inline engine::Model Model(std::unique_ptr<engine::Backend> backend) {
  return engine::Model{std::make_unique<FakeTokenizer>(), std::move(backend)};
}

}  // namespace ember::testing

#endif  // EMBER_TESTS_FAKES_FAKE_BACKEND_H_
