#include "engine/tokenizer/wordpiece_model.h"

#include <nlohmann/json.hpp>

#include "engine/tokenizer/json_fields.h"

namespace ember::engine {
namespace {

bool Continues(unsigned char b) { return (b & 0xC0) == 0x80; }

}  // namespace

WordPieceModel::WordPieceModel(const nlohmann::json& spec)
    : vocab_(Vocabulary::FromJson(json_fields::Required(spec, "vocab", "WordPiece"), "WordPiece")),
      unk_(json_fields::OptionalString(spec, "unk_token", "WordPiece").value_or("[UNK]")),
      prefix_(json_fields::OptionalString(spec, "continuing_subword_prefix", "WordPiece")
                  .value_or("##")),
      max_chars_(json_fields::Unsigned(spec, "max_input_chars_per_word", 100, "WordPiece")) {
  for (const auto& [token, id] : vocab_.ids()) {
    if (token.size() >= prefix_.size() && token.compare(0, prefix_.size(), prefix_) == 0) {
      continuation_.insert_or_assign(token.substr(prefix_.size()), id);
      longest_continuation_ = std::max(longest_continuation_, token.size() - prefix_.size());
    }
  }
}

void WordPieceModel::Unknown(std::string_view word, std::vector<Token>& out) const {
  const auto id = vocab_.Find(unk_);
  if (!id) BadConfig("WordPiece: the unknown token '" + unk_ + "' is not in the vocabulary");
  out.push_back({*id, 0, static_cast<std::uint32_t>(word.size())});
}

void WordPieceModel::Tokenize(std::string_view word, std::vector<Token>& out) const {
  std::size_t chars = 0;
  for (const char c : word) chars += Continues(static_cast<unsigned char>(c)) ? 0u : 1u;
  if (chars > max_chars_) return Unknown(word, out);
  const std::size_t first = out.size();
  std::size_t start = 0;
  while (start < word.size()) {
    // A piece is at most as long as the longest token of its kind.
    const std::size_t longest = start == 0 ? vocab_.longest() : longest_continuation_;
    std::size_t end = std::min(word.size(), start + longest);
    while (end < word.size() && Continues(static_cast<unsigned char>(word[end]))) --end;
    std::optional<std::int32_t> found;
    for (; end > start; --end) {
      if (end < word.size() && Continues(static_cast<unsigned char>(word[end]))) continue;
      const std::string_view piece = word.substr(start, end - start);
      if (start == 0) {
        found = vocab_.Find(piece);
      } else if (const auto it = continuation_.find(piece); it != continuation_.end()) {
        found = it->second;
      }
      if (found) break;
    }
    if (!found) {
      out.resize(first);
      return Unknown(word, out);
    }
    out.push_back({*found, static_cast<std::uint32_t>(start), static_cast<std::uint32_t>(end)});
    start = end;
  }
}

}  // namespace ember::engine
