#include "common/reply_stats.h"

#include <cstdint>
#include <msgpack.hpp>

#include "common/body_limits.h"

namespace ember::protocol {
namespace {

// Sees every msgpack item in document order; keeps the root map's "batch_size" and the
// elements of its "tokens" array. A bin (the vectors) is seen as a pointer and a size.
class StatsVisitor : public msgpack::null_visitor {
 public:
  explicit StatsVisitor(EmbedReplyStats* out) : out_(out) {}

  bool visit_positive_integer(std::uint64_t v) {
    if (in_key()) return Key({});
    if (depth_ == 1 && field_ == Field::kBatchSize && !batch_size_seen_ && v <= UINT32_MAX) {
      batch_size_seen_ = true;
      out_->batch_size = static_cast<std::uint32_t>(v);
    } else if (depth_ == 2 && in_tokens_) {
      out_->tokens += v;
    }
    return true;
  }
  bool visit_str(const char* v, std::uint32_t size) {
    if (size > limits::kStr) return false;
    return in_key() ? Key(std::string_view(v == nullptr ? "" : v, size)) : true;
  }
  bool visit_bin(const char*, std::uint32_t size) {
    if (size > limits::kBin) return false;
    return in_key() ? Key({}) : true;
  }
  bool visit_nil() { return Other(); }
  bool visit_boolean(bool) { return Other(); }
  bool visit_negative_integer(std::int64_t) { return Other(); }
  bool visit_float32(float) { return Other(); }
  bool visit_float64(double) { return Other(); }
  bool visit_ext(const char*, std::uint32_t) { return Other(); }

  bool start_array(std::uint32_t n) {
    if (n > limits::kArray) return false;
    if (in_key()) Key({});
    // Only the first "tokens" counts, as the full decoder's first occurrence.
    if (depth_ == 1 && field_ == Field::kTokens && !tokens_seen_) {
      tokens_seen_ = in_tokens_ = true;
    }
    return Open(false);
  }
  bool end_array() { return Close(); }
  bool start_map(std::uint32_t n) {
    if (n > limits::kMap) return false;
    if (in_key()) Key({});
    return Open(true);
  }
  bool end_map() { return Close(); }
  bool start_map_key() {
    if (depth_ == 1) key_ = true;
    return true;
  }
  bool end_map_key() {
    if (depth_ == 1) key_ = false;
    return true;
  }
  void parse_error(std::size_t, std::size_t) {}
  void insufficient_bytes(std::size_t, std::size_t) {}

  bool root_is_map() const { return root_is_map_; }

 private:
  enum class Field { kNone, kBatchSize, kTokens };

  bool in_key() const { return depth_ == 1 && key_; }
  bool Key(std::string_view name) {
    field_ = name == "batch_size" ? Field::kBatchSize
             : name == "tokens"   ? Field::kTokens
                                  : Field::kNone;
    return true;
  }
  bool Other() { return in_key() ? Key({}) : true; }
  bool Open(bool is_map) {
    if (depth_ + 1 > limits::kDepth) return false;
    if (depth_ == 0) root_is_map_ = is_map;
    ++depth_;
    return true;
  }
  bool Close() {
    if (--depth_ == 1) in_tokens_ = false;
    return true;
  }

  EmbedReplyStats* out_;
  std::size_t depth_ = 0;
  bool root_is_map_ = false;
  bool key_ = false;
  Field field_ = Field::kNone;  // the field whose value comes next (or is being read)
  bool in_tokens_ = false;
  bool tokens_seen_ = false;
  bool batch_size_seen_ = false;
};

}  // namespace

bool Decode(std::string_view bytes, EmbedReplyStats* out) {
  *out = EmbedReplyStats{};
  StatsVisitor visitor(out);
  std::size_t offset = 0;
  return msgpack::parse(bytes.data(), bytes.size(), offset, visitor) && visitor.root_is_map();
}

}  // namespace ember::protocol
