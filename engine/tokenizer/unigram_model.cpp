#include "engine/tokenizer/unigram_model.h"

#include <algorithm>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "engine/tokenizer/json_fields.h"

namespace ember::engine {
namespace {

using json_fields::Json;

constexpr double kUnkPenalty = 10.0;

std::size_t CharLength(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

}  // namespace

UnigramModel::UnigramModel(const Json& spec)
    : byte_fallback_(json_fields::Bool(spec, "byte_fallback", false, "Unigram")) {
  const Json& vocab = json_fields::Required(spec, "vocab", "Unigram");
  if (!vocab.is_array() || vocab.empty()) {
    BadConfig("Unigram: \"vocab\" must be a non-empty list of [piece, score]");
  }
  scores_.reserve(vocab.size());
  double min_score = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < vocab.size(); ++i) {
    const Json& entry = vocab[i];
    if (!entry.is_array() || entry.size() != 2 || !entry[0].is_string() || !entry[1].is_number()) {
      BadConfig("Unigram: vocab entry " + std::to_string(i) + " is not [piece, score]");
    }
    vocab_.Add(entry[0].get<std::string>(), static_cast<std::int32_t>(i));
    scores_.push_back(entry[1].get<double>());
    min_score = std::min(min_score, scores_.back());
  }
  unk_score_ = min_score - kUnkPenalty;
  if (const Json* unk = json_fields::Find(spec, "unk_id")) {
    if (!unk->is_number_unsigned() || unk->get<std::uint64_t>() >= scores_.size()) {
      BadConfig("Unigram: unk_id " + unk->dump() + " is not an id of the vocabulary");
    }
    unk_id_ = static_cast<std::int32_t>(unk->get<std::uint64_t>());
  }
  if (byte_fallback_) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    for (int b = 0; b < 256; ++b) {
      byte_ids_[b] = vocab_.Find(std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">");
    }
  }
  // The trie, built breadth-first from the pieces in byte order, with the id HF's map gives
  // each piece (the last of repeated ones).
  std::vector<std::pair<std::string_view, std::int32_t>> pieces;
  pieces.reserve(vocab_.size());
  for (const auto& [piece, id] : vocab_.ids()) {
    if (!piece.empty()) pieces.emplace_back(piece, id);
  }
  std::sort(pieces.begin(), pieces.end());
  // Each node: the range of `pieces` that pass through it, and its depth.
  struct Pending {
    std::size_t lo, hi, depth;
    std::int32_t value;
  };
  std::vector<Pending> queue{{0, pieces.size(), 0, -1}};
  for (std::size_t n = 0; n < queue.size(); ++n) {
    const Pending node = queue[n];
    value_.push_back(node.value);
    first_.push_back(static_cast<std::uint32_t>(labels_.size()));
    std::size_t i = node.lo;
    // A piece that ends here sorts first among those of the node.
    while (i < node.hi && pieces[i].first.size() == node.depth) ++i;
    while (i < node.hi) {
      const unsigned char label = static_cast<unsigned char>(pieces[i].first[node.depth]);
      std::size_t j = i;
      std::int32_t value = -1;
      while (j < node.hi && static_cast<unsigned char>(pieces[j].first[node.depth]) == label) {
        if (pieces[j].first.size() == node.depth + 1) value = pieces[j].second;
        ++j;
      }
      labels_.push_back(label);
      targets_.push_back(static_cast<std::uint32_t>(queue.size()));
      queue.push_back({i, j, node.depth + 1, value});
      i = j;
    }
  }
  first_.push_back(static_cast<std::uint32_t>(labels_.size()));
}

void UnigramModel::Segment(std::string_view word, std::vector<Piece>& pieces) const {
  struct Best {
    double score = 0;
    std::int64_t starts_at = -1;
    std::int32_t id = 0;
  };
  thread_local std::vector<Best> best;
  const std::size_t size = word.size();
  best.assign(size + 1, Best{});
  for (std::size_t start = 0; start < size;) {
    const double here = best[start].score;
    const std::size_t char_len = CharLength(static_cast<unsigned char>(word[start]));
    bool single = false;
    // Every piece that starts here, shortest first.
    std::uint32_t node = 0;
    for (std::size_t at = start; at < size; ++at) {
      const auto c = static_cast<unsigned char>(word[at]);
      const auto begin = labels_.begin() + first_[node], end = labels_.begin() + first_[node + 1];
      const auto it = std::lower_bound(begin, end, c);
      if (it == end || *it != c) break;
      node = targets_[static_cast<std::size_t>(it - labels_.begin())];
      const std::int32_t id = value_[node];
      if (id < 0) continue;
      const std::size_t key = at + 1;
      const double candidate = scores_[static_cast<std::size_t>(id)] + here;
      Best& target = best[key];
      if (target.starts_at < 0 || candidate > target.score) {
        target = {candidate, static_cast<std::int64_t>(start), id};
      }
      single = single || key - start == char_len;
    }
    if (!single) {
      if (!unk_id_) BadConfig("Unigram: a character has no piece and the model has no unk_id");
      Best& target = best[start + char_len];
      const double candidate = unk_score_ + here;
      if (target.starts_at < 0 || candidate > target.score) {
        target = {candidate, static_cast<std::int64_t>(start), *unk_id_};
      }
    }
    start += char_len;
  }
  // Back from the end; runs of the unknown piece are fused into one.
  pieces.clear();
  std::optional<std::uint32_t> fused_end;
  std::size_t end = size;
  while (end > 0) {
    const Best& node = best[end];
    const auto start = static_cast<std::size_t>(node.starts_at);
    if (unk_id_ && node.id == *unk_id_) {
      if (!fused_end) fused_end = static_cast<std::uint32_t>(end);
    } else {
      if (fused_end) {
        pieces.push_back({static_cast<std::uint32_t>(end), *fused_end, -1});
        fused_end.reset();
      }
      pieces.push_back(
          {static_cast<std::uint32_t>(start), static_cast<std::uint32_t>(end), node.id});
    }
    end = start;
  }
  if (fused_end) pieces.push_back({0, *fused_end, -1});
  std::reverse(pieces.begin(), pieces.end());
}

void UnigramModel::Tokenize(std::string_view word, std::vector<Token>& out) const {
  if (word.empty()) return;
  thread_local std::vector<Piece> pieces;
  if (!cache_.Get(word, pieces)) {
    Segment(word, pieces);
    cache_.Put(word, pieces);
  }
  for (const Piece& p : pieces) {
    if (p.id >= 0) {
      out.push_back({p.id, p.begin, p.end});
      continue;
    }
    // A fused unknown run: the piece of that text if there is one, else its bytes' tokens
    // (each spanning the whole run), else the unknown token.
    const std::string_view text = word.substr(p.begin, p.end - p.begin);
    if (const auto id = vocab_.Find(text)) {
      out.push_back({*id, p.begin, p.end});
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (const char c : text) all = all && byte_ids_[static_cast<unsigned char>(c)].has_value();
      if (all) {
        for (const char c : text) {
          out.push_back({*byte_ids_[static_cast<unsigned char>(c)], p.begin, p.end});
        }
        continue;
      }
    }
    out.push_back({*unk_id_, p.begin, p.end, /*literal=*/true});
  }
}

}  // namespace ember::engine
