// A BPE model's merges: (left token, right token) -> (rank, merged token), looked up several
// times per word. An open-addressing table of 16-byte slots with linear probing at most half
// full, keys mixed by a multiplicative hash: a lookup is one cache line. Built once, then
// read-only (internal to engine/tokenizer/).
#ifndef EMBER_ENGINE_TOKENIZER_PAIR_TABLE_H_
#define EMBER_ENGINE_TOKENIZER_PAIR_TABLE_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ember::engine {

class PairTable {
 public:
  struct Value {
    std::uint32_t rank;
    std::int32_t id;
  };

  // Room for `pairs` pairs.
  void Reserve(std::size_t pairs) {
    const std::size_t size = std::bit_ceil(std::max<std::size_t>(16, pairs * 2));
    slots_.assign(size, Slot{kEmpty, {}});
    mask_ = size - 1;
  }

  // Sets the value of (a, b) (a later one replaces an earlier one). Reserve first.
  void Put(std::int32_t a, std::int32_t b, Value value) {
    const std::uint64_t key = Key(a, b);
    for (std::size_t i = Hash(key) & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].key == kEmpty) ++size_;
      if (slots_[i].key == kEmpty || slots_[i].key == key) {
        slots_[i] = {key, value};
        return;
      }
    }
  }

  const Value* Find(std::int32_t a, std::int32_t b) const {
    const std::uint64_t key = Key(a, b);
    for (std::size_t i = Hash(key) & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == key) return &s.value;
      if (s.key == kEmpty) return nullptr;
    }
  }

  std::size_t size() const { return size_; }

 private:
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};  // no pair of ids is this
  struct Slot {
    std::uint64_t key;
    Value value;
  };
  static std::uint64_t Key(std::int32_t a, std::int32_t b) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) |
           static_cast<std::uint32_t>(b);
  }
  static std::size_t Hash(std::uint64_t key) {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ULL) >> 20);
  }

  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

}  // namespace ember::engine

#endif  // EMBER_ENGINE_TOKENIZER_PAIR_TABLE_H_
