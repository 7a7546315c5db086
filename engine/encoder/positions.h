// Which row of the position table each token of a sequence adds (EncoderConfig): its index plus
// the family's offset; in RoBERTa's scheme (a padding id) a token with the padding id takes row
// padding_idx (position_offset - 1) and does not count for the tokens after it, as HF's
// create_position_ids_from_input_ids has it. Header-only, no runtime.
#ifndef EMBER_ENGINE_ENCODER_POSITIONS_H_
#define EMBER_ENGINE_ENCODER_POSITIONS_H_

#include <algorithm>
#include <cstdint>
#include <span>

namespace ember::engine {

// Whether any token of `seq` has the padding id (pad_id < 0: the family has none), so that its
// positions are not simply offset, offset + 1, ...
inline bool HasPaddingToken(std::span<const std::int32_t> seq, std::int64_t pad_id) {
  return pad_id >= 0 && std::find(seq.begin(), seq.end(), pad_id) != seq.end();
}

// out[t]: the position-table row of token t of `seq`.
template <typename Row>
void PositionRows(std::span<const std::int32_t> seq, std::int64_t offset, std::int64_t pad_id,
                  Row* out) {
  std::int64_t next = offset;
  for (std::size_t t = 0; t < seq.size(); ++t) {
    out[t] = static_cast<Row>(pad_id >= 0 && seq[t] == pad_id ? offset - 1 : next++);
  }
}

}  // namespace ember::engine

#endif  // EMBER_ENGINE_ENCODER_POSITIONS_H_
