#include "common/request_header.h"

#include <limits>
#include <msgpack.hpp>
#include <optional>

#include "common/body_limits.h"
#include "common/messages.h"

namespace ember::protocol {
namespace {

enum class Field {
  kNone,
  kModel,
  kVersion,
  kInputs,
  kTimeout,
  kTruncate,
  kDimensions,
  kPromptName,
  kTask,
  kTextPairs,
  kRawScores,
  kSkipSpecialTokens,
};

Field FieldNamed(std::string_view key) {
  if (key == "model") return Field::kModel;
  if (key == "version") return Field::kVersion;
  if (key == "inputs") return Field::kInputs;
  if (key == "timeout_ms") return Field::kTimeout;
  if (key == "truncate") return Field::kTruncate;
  if (key == "dimensions") return Field::kDimensions;
  if (key == "prompt_name") return Field::kPromptName;
  if (key == "task") return Field::kTask;
  if (key == "text_pairs") return Field::kTextPairs;
  if (key == "raw_scores") return Field::kRawScores;
  if (key == "skip_special_tokens") return Field::kSkipSpecialTokens;
  return Field::kNone;
}

// A SAX-style pass over the body (msgpack::parse calls these in document order). It keeps the
// rules of the full decoder: the body is one map; of each field only its first occurrence
// counts (as messages.cpp's Find); strings may be msgpack str or bin; integers must fit
// uint32; the same size and depth limits, checked at the same points.
class HeaderVisitor : public msgpack::null_visitor {
 public:
  explicit HeaderVisitor(EmbedRequestHeader* out) : out_(out) {}

  bool visit_nil() { return Scalar(Kind::kOther); }
  bool visit_boolean(bool v) {
    boolean_ = v;
    return Scalar(Kind::kBool);
  }
  bool visit_positive_integer(std::uint64_t v) {
    integer_ = v;
    return Scalar(Kind::kUint);
  }
  bool visit_negative_integer(std::int64_t) { return Scalar(Kind::kOther); }
  bool visit_float32(float) { return Scalar(Kind::kOther); }
  bool visit_float64(double) { return Scalar(Kind::kOther); }
  bool visit_str(const char* v, std::uint32_t size) {
    if (size > limits::kStr) return Fail("str size overflow");
    text_ = std::string_view(v == nullptr ? "" : v, size);
    return Scalar(Kind::kText);
  }
  bool visit_bin(const char* v, std::uint32_t size) {
    if (size > limits::kBin) return Fail("bin size overflow");
    text_ = std::string_view(v == nullptr ? "" : v, size);
    // A bin key is no field name (Find matches str keys only); a bin value reads as a string.
    return Scalar(in_key() ? Kind::kOther : Kind::kText);
  }
  bool visit_ext(const char*, std::uint32_t size) {
    if (size > limits::kExt) return Fail("ext size overflow");
    return Scalar(Kind::kOther);
  }

  bool start_array(std::uint32_t n) {
    if (n > limits::kArray) return Fail("array size overflow");
    return Open(/*is_map=*/false, n);
  }
  bool end_array() { return Close(); }
  bool start_map(std::uint32_t n) {
    if (n > limits::kMap) return Fail("map size overflow");
    return Open(/*is_map=*/true, n);
  }
  bool end_map() { return Close(); }
  bool start_map_key() {
    if (depth_ == 1) {
      in_key_ = true;
      key_ = Field::kNone;
    }
    return true;
  }
  bool end_map_key() {
    if (depth_ == 1) {
      in_key_ = false;
      // Only a field's first occurrence counts.
      field_ = Field::kNone;
      if (key_ != Field::kNone && !Slot(key_).seen) {
        field_ = key_;
        Slot(key_).seen = true;
      }
    }
    return true;
  }
  void parse_error(std::size_t, std::size_t) { Fail("parse error"); }
  void insufficient_bytes(std::size_t, std::size_t) { Fail("insufficient bytes"); }

  // After the parse: the first reason the full decoder would give, in its order of fields.
  bool Finish(std::string* error) const {
    if (!error_.empty()) {
      *error = error_;
      return false;
    }
    if (!root_is_map_) {
      *error = "body must be a msgpack map";
      return false;
    }
    const auto check = [&](Field f, std::string_view name, bool required) {
      const FieldSlot& s = slots_[static_cast<int>(f)];
      if (!s.seen && required) {
        *error = "missing field '" + std::string(name) + "'";
        return false;
      }
      if (s.seen && !s.ok) {
        *error = "field '" + std::string(name) + "' has the wrong type";
        return false;
      }
      return true;
    };
    return check(Field::kModel, "model", true) && check(Field::kVersion, "version", false) &&
           check(Field::kInputs, "inputs", true) && check(Field::kTimeout, "timeout_ms", false) &&
           check(Field::kTruncate, "truncate", false) &&
           check(Field::kDimensions, "dimensions", false) &&
           check(Field::kPromptName, "prompt_name", false) && check(Field::kTask, "task", false) &&
           CheckTaskName(error) && check(Field::kTextPairs, "text_pairs", false) &&
           check(Field::kRawScores, "raw_scores", false) &&
           check(Field::kSkipSpecialTokens, "skip_special_tokens", false) &&
           CheckPairs(out_->task, out_->count, Slot(Field::kTextPairs).seen, out_->pairs, error);
  }

 private:
  enum class Kind { kText, kUint, kBool, kOther };
  struct FieldSlot {
    bool seen = false;
    bool ok = false;
  };

  FieldSlot& Slot(Field f) { return slots_[static_cast<int>(f)]; }
  const FieldSlot& Slot(Field f) const { return slots_[static_cast<int>(f)]; }
  bool CheckTaskName(std::string* error) const {
    if (!bad_task_) return true;
    *error = TaskError(*bad_task_);
    return false;
  }
  bool in_key() const { return depth_ == 1 && in_key_; }
  // A value of the root map (not a key, not nested).
  bool at_value() const { return depth_ == 1 && !in_key_ && field_ != Field::kNone; }
  // An element of the first "inputs" or "text_pairs" array.
  bool at_input() const { return depth_ == 2 && (in_inputs_ || in_pairs_); }

  bool Fail(std::string_view why) {
    if (error_.empty()) error_ = "body is not valid msgpack: " + std::string(why);
    return false;
  }

  bool Scalar(Kind kind) {
    if (depth_ == 0) return true;  // the root is a scalar: not a map
    if (in_key()) {
      key_ = kind == Kind::kText ? FieldNamed(text_) : Field::kNone;
      return true;
    }
    if (at_input()) {
      // A pair's text counts as its input's: the limit on a text's bytes holds for both.
      std::size_t& index = in_pairs_ ? pair_index_ : input_index_;
      if (kind != Kind::kText) {
        Slot(in_pairs_ ? Field::kTextPairs : Field::kInputs).ok = false;
      } else if (text_.size() > out_->longest_bytes) {
        out_->longest_bytes = text_.size();
        out_->longest_index = index;
      }
      ++index;
      return true;
    }
    if (!at_value()) return true;
    FieldSlot& slot = Slot(field_);
    switch (field_) {
      case Field::kModel:
        slot.ok = kind == Kind::kText;
        if (slot.ok) out_->model.assign(text_);
        break;
      case Field::kVersion:
      case Field::kTimeout:
      case Field::kDimensions:
        slot.ok = kind == Kind::kUint && integer_ <= std::numeric_limits<std::uint32_t>::max();
        if (slot.ok) {
          (field_ == Field::kVersion   ? out_->version
           : field_ == Field::kTimeout ? out_->timeout_ms
                                       : out_->dimensions) = static_cast<std::uint32_t>(integer_);
        }
        break;
      case Field::kPromptName:  // the worker's to read; the router only checks its type
        slot.ok = kind == Kind::kText;
        break;
      case Field::kTask:
        slot.ok = kind == Kind::kText;
        if (slot.ok) {
          if (const auto task = ParseTask(text_)) {
            out_->task = *task;
          } else {
            bad_task_ = std::string(text_);  // an error: the one allocation is no matter
          }
        }
        break;
      case Field::kRawScores:  // the worker's to read, as is skip_special_tokens
      case Field::kSkipSpecialTokens:
        slot.ok = kind == Kind::kBool;
        break;
      case Field::kTruncate:
        slot.ok = kind == Kind::kBool;
        if (slot.ok) out_->truncate = boolean_;
        break;
      case Field::kInputs:  // a scalar where an array belongs
      case Field::kTextPairs:
      case Field::kNone:
        slot.ok = false;
        break;
    }
    return true;
  }

  bool Open(bool is_map, std::uint32_t n) {
    // As the full decoder counts it: the root aggregate is depth 1.
    if (depth_ + 1 > limits::kDepth) return Fail("depth size overflow");
    if (depth_ == 0) {
      root_is_map_ = is_map;
    } else if (in_key()) {
      key_ = Field::kNone;  // an aggregate key names no field
    } else if (at_input()) {
      // A text must be a string.
      Slot(in_pairs_ ? Field::kTextPairs : Field::kInputs).ok = false;
      ++(in_pairs_ ? pair_index_ : input_index_);
    } else if (at_value()) {
      const bool texts = (field_ == Field::kInputs || field_ == Field::kTextPairs) && !is_map;
      Slot(field_).ok = texts;
      if (texts && field_ == Field::kInputs) {
        in_inputs_ = true;
        out_->count = n;
      } else if (texts) {
        in_pairs_ = true;
        out_->pairs = n;
      }
    }
    ++depth_;
    return true;
  }

  bool Close() {
    --depth_;
    if (depth_ == 1) in_inputs_ = in_pairs_ = false;
    return true;
  }

  EmbedRequestHeader* out_;
  std::string error_;
  std::size_t depth_ = 0;  // aggregates open
  bool root_is_map_ = false;
  bool in_key_ = false;
  Field key_ = Field::kNone;    // the key being read names this field
  Field field_ = Field::kNone;  // the value being read is this field's
  bool in_inputs_ = false;
  bool in_pairs_ = false;
  std::size_t input_index_ = 0;
  std::size_t pair_index_ = 0;
  std::optional<std::string> bad_task_;  // a "task" that names no Task
  FieldSlot slots_[12]{};
  // The last scalar seen.
  std::string_view text_;
  std::uint64_t integer_ = 0;
  bool boolean_ = false;
};

}  // namespace

bool Decode(std::string_view bytes, EmbedRequestHeader* out, std::string* error) {
  // Reset, but keep the model string's buffer: a caller that reads every request into one
  // header allocates nothing for names past std::string's inline size.
  std::string model = std::move(out->model);
  model.clear();
  *out = EmbedRequestHeader{};
  out->model = std::move(model);
  HeaderVisitor visitor(out);
  std::size_t offset = 0;
  const bool parsed = msgpack::parse(bytes.data(), bytes.size(), offset, visitor);
  if (parsed && offset != bytes.size()) {
    *error = "body has trailing bytes after the msgpack map";
    return false;
  }
  return visitor.Finish(error);
}

}  // namespace ember::protocol
