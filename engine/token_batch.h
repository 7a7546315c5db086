// The one shape of a batch that every backend runs (as TEI's core builds one `Batch` per
// forward): the token ids of all sequences back to back, and where each sequence starts. The
// serving core builds it once per batch; a backend never re-pads or re-copies per sequence
// unless its runtime needs padding (and then it pads from this, in one pass).
//
// `offsets` is what flash attention calls cu_seqlens: offsets[0] == 0, sequence i occupies
// ids[offsets[i], offsets[i+1]), and offsets.back() == ids.size(). Header-only, free of any
// runtime, so serving code builds it without linking a backend.
//
// A sequence may be a pair (a cross-encoder's [CLS] query [SEP] passage [SEP]): its tokens from
// second_start(i) on are the second segment, token type 1; all others are token type 0.
#ifndef EMBER_ENGINE_TOKEN_BATCH_H_
#define EMBER_ENGINE_TOKEN_BATCH_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ember::engine {

class TokenBatch {
 public:
  TokenBatch() = default;
  // A batch of these sequences, in order (tests and tools; the worker uses Add).
  static TokenBatch Of(const std::vector<std::vector<std::int32_t>>& sequences) {
    TokenBatch batch;
    std::size_t tokens = 0;
    for (const auto& s : sequences) tokens += s.size();
    batch.Reserve(sequences.size(), tokens);
    for (const auto& s : sequences) batch.Add(s);
    return batch;
  }

  void Reserve(std::size_t sequences, std::size_t tokens) {
    offsets_.reserve(sequences + 1);
    seconds_.reserve(sequences);
    ids_.reserve(tokens);
  }
  // Appends one sequence, whose second segment starts at `second_start` (0: it has none; else
  // in (0, sequence.size())). An empty one is kept (it is the backend's to refuse).
  void Add(std::span<const std::int32_t> sequence, std::size_t second_start = 0) {
    ids_.insert(ids_.end(), sequence.begin(), sequence.end());
    offsets_.push_back(static_cast<std::int32_t>(ids_.size()));
    seconds_.push_back(static_cast<std::int32_t>(second_start));
    max_length_ = std::max(max_length_, sequence.size());
    pairs_ = pairs_ || second_start != 0;
  }

  std::size_t size() const { return offsets_.size() - 1; }  // sequences
  bool empty() const { return size() == 0; }
  std::size_t tokens() const { return ids_.size(); }
  std::size_t max_length() const { return max_length_; }
  std::size_t length(std::size_t i) const {
    return static_cast<std::size_t>(offsets_[i + 1] - offsets_[i]);
  }
  std::span<const std::int32_t> sequence(std::size_t i) const {
    return std::span<const std::int32_t>(ids_).subspan(static_cast<std::size_t>(offsets_[i]),
                                                       length(i));
  }
  const std::vector<std::int32_t>& ids() const { return ids_; }
  const std::vector<std::int32_t>& offsets() const { return offsets_; }  // size() + 1 entries
  // Where sequence i's second segment starts (0: it has none), and whether any sequence has one.
  std::size_t second_start(std::size_t i) const { return static_cast<std::size_t>(seconds_[i]); }
  bool has_pairs() const { return pairs_; }

  // Each token's position within its own sequence (0, 1, ... again for every sequence) into
  // out[0, tokens()): the position ids a packed forward adds to the token embeddings.
  void Positions(std::int32_t* out) const {
    for (std::size_t i = 0; i < size(); ++i) {
      for (std::int32_t t = offsets_[i], p = 0; t < offsets_[i + 1]; ++t, ++p) out[t] = p;
    }
  }

 private:
  std::vector<std::int32_t> ids_;
  std::vector<std::int32_t> offsets_{0};
  std::vector<std::int32_t> seconds_;
  std::size_t max_length_ = 0;
  bool pairs_ = false;
};

}  // namespace ember::engine

#endif  // EMBER_ENGINE_TOKEN_BATCH_H_
