#include "engine/tokenizer/bpe_model.h"

#include <atomic>
#include <nlohmann/json.hpp>
#include <queue>

#include "engine/tokenizer/json_fields.h"

namespace ember::engine {
namespace {

using json_fields::Json;

// Each model gets a key of its own for the per-thread caches: an address could be reused by a
// later model, a number from here is not.
std::uint64_t NextCacheKey() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

// The per-thread word caches of the last few models used on this thread.
struct WordCache {
  static constexpr std::size_t kCapacity = 10'000;  // words, as HF's
  static constexpr std::size_t kMaxWordBytes = 256;
  std::uint64_t model = 0;
  tsl::hopscotch_map<std::string, std::vector<BpeModel::Symbol>, StringViewHash, std::equal_to<>>
      words;
};
WordCache& CacheOf(std::uint64_t model) {
  constexpr std::size_t kModels = 4;
  thread_local std::vector<WordCache> caches(kModels);
  thread_local std::size_t next_victim = 0;
  for (WordCache& c : caches) {
    if (c.model == model) return c;
  }
  WordCache& c = caches[next_victim];
  next_victim = (next_victim + 1) % kModels;
  c.model = model;
  c.words.clear();
  return c;
}

std::size_t CharLength(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

}  // namespace

BpeModel::BpeModel(const Json& spec)
    : vocab_(Vocabulary::FromJson(json_fields::Required(spec, "vocab", "BPE"), "BPE")),
      prefix_(json_fields::OptionalString(spec, "continuing_subword_prefix", "BPE").value_or("")),
      suffix_(json_fields::OptionalString(spec, "end_of_word_suffix", "BPE").value_or("")),
      fuse_unk_(json_fields::Bool(spec, "fuse_unk", false, "BPE")),
      byte_fallback_(json_fields::Bool(spec, "byte_fallback", false, "BPE")),
      ignore_merges_(json_fields::Bool(spec, "ignore_merges", false, "BPE")),
      cache_key_(NextCacheKey()) {
  if (const Json* dropout = json_fields::Find(spec, "dropout");
      dropout != nullptr && (!dropout->is_number() || dropout->get<double>() != 0.0)) {
    BadConfig("BPE: dropout " + dropout->dump() +
              " makes tokenization random; ember serves deterministic tokenizers (set it to null)");
  }
  if (const auto unk = json_fields::OptionalString(spec, "unk_token", "BPE")) {
    has_unk_ = true;
    unk_token_ = *unk;
    unk_ = vocab_.Find(*unk);
  }
  if (byte_fallback_) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    for (int b = 0; b < 256; ++b) {
      const std::string name = std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">";
      byte_ids_[b] = vocab_.Find(name);
    }
  }
  const Json& merges = json_fields::Required(spec, "merges", "BPE");
  if (!merges.is_array()) BadConfig("BPE: \"merges\" must be a list");
  merges_.reserve(merges.size());
  std::uint32_t rank = 0;
  for (const Json& m : merges) {
    // "a b" (older files) or ["a", "b"].
    std::string a, b;
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const std::size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
        BadConfig("BPE: merge " + std::to_string(rank + 1) + " '" + s + "' is not two tokens");
      }
      a = s.substr(0, space);
      b = s.substr(space + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      a = m[0].get<std::string>();
      b = m[1].get<std::string>();
    } else {
      BadConfig("BPE: merge " + std::to_string(rank + 1) + " is " + m.dump());
    }
    const auto a_id = vocab_.Find(a), b_id = vocab_.Find(b);
    const std::string joined = a + (b.size() >= prefix_.size() ? b.substr(prefix_.size()) : b);
    const auto new_id = vocab_.Find(joined);
    if (!a_id || !b_id || !new_id) {
      BadConfig("BPE: merge " + std::to_string(rank + 1) + " ('" + a + "', '" + b +
                "') uses a token that is not in the vocabulary");
    }
    // A pair merged twice keeps its later rank, as HF's map does.
    merges_.insert_or_assign(Key(*a_id, *b_id), Merge{rank, *new_id});
    ++rank;
  }
}

void BpeModel::Initial(std::string_view word, std::vector<Symbol>& symbols) const {
  std::optional<Symbol> unk;
  std::string s;
  for (std::size_t i = 0; i < word.size();) {
    const std::size_t n = CharLength(static_cast<unsigned char>(word[i]));
    const bool first = i == 0, last = i + n >= word.size();
    s.clear();
    if (!first) s += prefix_;
    s.append(word.substr(i, n));
    if (last) s += suffix_;
    i += n;
    if (const auto id = vocab_.Find(s)) {
      if (unk) {
        symbols.push_back(*unk);
        unk.reset();
      }
      symbols.push_back({*id, static_cast<std::uint32_t>(n)});
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (const char c : s) all = all && byte_ids_[static_cast<unsigned char>(c)].has_value();
      if (all) {
        // (A pending unknown token stays pending here, as in HF.)
        for (const char c : s) symbols.push_back({*byte_ids_[static_cast<unsigned char>(c)], 1});
        continue;
      }
    }
    if (!has_unk_) continue;  // no unknown token: the character is dropped, as in HF
    if (!unk_) BadConfig("BPE: the unknown token '" + unk_token_ + "' is not in the vocabulary");
    if (unk && fuse_unk_) {
      unk->bytes += static_cast<std::uint32_t>(n);
    } else {
      if (unk) symbols.push_back(*unk);
      unk = Symbol{*unk_, static_cast<std::uint32_t>(n)};
    }
  }
  if (unk) symbols.push_back(*unk);
}

void BpeModel::MergeAll(std::vector<Symbol>& symbols) const {
  const std::size_t n = symbols.size();
  if (n < 2) return;
  struct Node {
    std::int64_t prev, next;
  };
  std::vector<Node> links(n);
  for (std::size_t i = 0; i < n; ++i) {
    links[i] = {static_cast<std::int64_t>(i) - 1,
                i + 1 < n ? static_cast<std::int64_t>(i + 1) : -1};
  }
  struct Candidate {
    std::uint32_t rank;
    std::size_t pos;
    std::int32_t id;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  for (std::size_t i = 0; i + 1 < n; ++i) {
    if (const auto m = FindMerge(symbols[i].id, symbols[i + 1].id)) queue.push({m->rank, i, m->id});
  }
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (left.bytes == 0 || links[top.pos].next < 0) continue;  // merged away, or last
    const auto right_pos = static_cast<std::size_t>(links[top.pos].next);
    Symbol& right = symbols[right_pos];
    // An entry made stale by an earlier merge.
    const auto m = FindMerge(left.id, right.id);
    if (!m || m->id != top.id) continue;
    left.id = top.id;
    left.bytes += right.bytes;
    right.bytes = 0;
    links[top.pos].next = links[right_pos].next;
    if (links[right_pos].next >= 0) {
      links[static_cast<std::size_t>(links[right_pos].next)].prev =
          static_cast<std::int64_t>(top.pos);
    }
    if (const std::int64_t prev = links[top.pos].prev; prev >= 0) {
      if (const auto pm = FindMerge(symbols[static_cast<std::size_t>(prev)].id, left.id)) {
        queue.push({pm->rank, static_cast<std::size_t>(prev), pm->id});
      }
    }
    if (const std::int64_t next = links[top.pos].next; next >= 0) {
      if (const auto nm = FindMerge(left.id, symbols[static_cast<std::size_t>(next)].id)) {
        queue.push({nm->rank, top.pos, nm->id});
      }
    }
  }
  std::erase_if(symbols, [](const Symbol& s) { return s.bytes == 0; });
}

void BpeModel::Tokenize(std::string_view word, std::vector<Token>& out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    if (const auto id = vocab_.Find(word)) {
      out.push_back({*id, 0, static_cast<std::uint32_t>(word.size())});
      return;
    }
  }
  WordCache& cache = CacheOf(cache_key_);
  const std::vector<Symbol>* symbols = nullptr;
  thread_local std::vector<Symbol> fresh;
  if (const auto it = cache.words.find(word); it != cache.words.end()) {
    symbols = &it->second;
  } else {
    fresh.clear();
    Initial(word, fresh);
    MergeAll(fresh);
    symbols = &fresh;
    if (word.size() < WordCache::kMaxWordBytes && cache.words.size() < WordCache::kCapacity) {
      symbols = &cache.words.emplace(std::string(word), fresh).first->second;
    }
  }
  std::uint32_t at = 0;
  for (const Symbol& s : *symbols) {
    out.push_back({s.id, at, at + s.bytes});
    at += s.bytes;
  }
}

}  // namespace ember::engine
