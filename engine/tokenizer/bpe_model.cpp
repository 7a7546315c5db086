#include "engine/tokenizer/bpe_model.h"

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>

#include "engine/tokenizer/json_fields.h"

namespace ember::engine {
namespace {

using json_fields::Json;

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
      ignore_merges_(json_fields::Bool(spec, "ignore_merges", false, "BPE")) {
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
  // SentencePiece BPE (Llama, Mistral) merges a whole text at once, its spaces written "▁".
  // Where no token has a "▁" right after another character, no merge can join the symbols on
  // either side of such a "▁", so the runs between them merge alone to the same tokens. (With
  // ignore_merges or a prefix or suffix a run would not be the same as a part of the word.)
  cut_before_metaspace_ =
      prefix_.empty() && suffix_.empty() && !ignore_merges_ && vocab_.Find(kMetaspace).has_value();
  for (const auto& [token, id] : vocab_.ids()) {
    for (std::size_t at = token.find(kMetaspace, 1);
         cut_before_metaspace_ && at != std::string::npos; at = token.find(kMetaspace, at + 1)) {
      if (at < 3 || token.compare(at - 3, 3, kMetaspace) != 0) cut_before_metaspace_ = false;
    }
  }
  short_chars_.assign(0x800, -1);
  for (const auto& [token, id] : vocab_.ids()) {
    if (token.size() == 1) {
      short_chars_[static_cast<unsigned char>(token[0])] = id;
    } else if (token.size() == 2 && (static_cast<unsigned char>(token[0]) & 0xE0) == 0xC0) {
      const std::size_t code = ((static_cast<unsigned char>(token[0]) & 0x1Fu) << 6) |
                               (static_cast<unsigned char>(token[1]) & 0x3Fu);
      short_chars_[code] = id;
    }
  }
  const Json& merges = json_fields::Required(spec, "merges", "BPE");
  if (!merges.is_array()) BadConfig("BPE: \"merges\" must be a list");
  merges_.Reserve(merges.size());
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
    merges_.Put(*a_id, *b_id, Merge{rank, *new_id});
    ++rank;
  }
}

void BpeModel::Initial(std::string_view word, std::vector<Symbol>& symbols) const {
  std::optional<Symbol> unk;
  std::string s;
  for (std::size_t i = 0; i < word.size();) {
    const std::size_t n = CharLength(static_cast<unsigned char>(word[i]));
    const bool first = i == 0, last = i + n >= word.size();
    // The character as the vocabulary spells it: with the prefix after the first, the suffix
    // on the last.
    const auto spell = [&] {
      s.clear();
      if (!first) s += prefix_;
      s.append(word.substr(i, n));
      if (last) s += suffix_;
    };
    std::optional<std::int32_t> id;
    if (n <= 2 && (first || prefix_.empty()) && (!last || suffix_.empty())) {
      // One or two bytes and nothing added: the id from the table, without hashing.
      const auto b0 = static_cast<unsigned char>(word[i]);
      const std::size_t code =
          n == 1 ? b0 : ((b0 & 0x1Fu) << 6) | (static_cast<unsigned char>(word[i + 1]) & 0x3Fu);
      if (const std::int32_t known = short_chars_[code]; known >= 0) id = known;
      if (!id) spell();
    } else {
      spell();
      id = vocab_.Find(s);
    }
    i += n;
    if (id) {
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
  // Per-thread buffers: no allocation per word.
  struct Node {
    std::int64_t prev, next;
  };
  struct Candidate {
    std::uint32_t rank;
    std::uint32_t pos;
    std::int32_t id;
    std::int32_t left, right;  // the pair when it was queued
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  thread_local std::vector<Node> links;
  thread_local std::vector<Candidate> heap;
  links.resize(n);
  heap.clear();
  for (std::size_t i = 0; i < n; ++i) {
    links[i] = {static_cast<std::int64_t>(i) - 1,
                i + 1 < n ? static_cast<std::int64_t>(i + 1) : -1};
  }
  const auto push = [&](const Candidate& c) {
    heap.push_back(c);
    std::push_heap(heap.begin(), heap.end(), std::greater<>{});
  };
  for (std::size_t i = 0; i + 1 < n; ++i) {
    if (const auto m = FindMerge(symbols[i].id, symbols[i + 1].id)) {
      push({m->rank, static_cast<std::uint32_t>(i), m->id, symbols[i].id, symbols[i + 1].id});
    }
  }
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>{});
    const Candidate top = heap.back();
    heap.pop_back();
    Symbol& left = symbols[top.pos];
    if (left.bytes == 0 || links[top.pos].next < 0) continue;  // merged away, or last
    const auto right_pos = static_cast<std::size_t>(links[top.pos].next);
    Symbol& right = symbols[right_pos];
    // An entry made stale by an earlier merge (HF's test: the pair there now merges into the
    // same token; the same pair as queued certainly does).
    if (left.id != top.left || right.id != top.right) {
      const auto m = FindMerge(left.id, right.id);
      if (!m || m->id != top.id) continue;
    }
    left.id = top.id;
    left.bytes += right.bytes;
    right.bytes = 0;
    links[top.pos].next = links[right_pos].next;
    if (links[right_pos].next >= 0) {
      links[static_cast<std::size_t>(links[right_pos].next)].prev =
          static_cast<std::int64_t>(top.pos);
    }
    if (const std::int64_t prev = links[top.pos].prev; prev >= 0) {
      const Symbol& p = symbols[static_cast<std::size_t>(prev)];
      if (const auto pm = FindMerge(p.id, left.id)) {
        push({pm->rank, static_cast<std::uint32_t>(prev), pm->id, p.id, left.id});
      }
    }
    if (const std::int64_t next = links[top.pos].next; next >= 0) {
      const Symbol& q = symbols[static_cast<std::size_t>(next)];
      if (const auto nm = FindMerge(left.id, q.id)) {
        push({nm->rank, top.pos, nm->id, left.id, q.id});
      }
    }
  }
  std::erase_if(symbols, [](const Symbol& s) { return s.bytes == 0; });
}

void BpeModel::Tokenize(std::string_view word, std::vector<Token>& out) const {
  if (word.empty()) return;
  if (cut_before_metaspace_) {
    // Each run from a "▁" that follows another character on is merged alone: the same tokens
    // (no merge can join across such a "▁"; see the constructor), and cached run by run.
    std::size_t begin = 0;
    for (std::size_t at = word.find(kMetaspace, 1); at != std::string_view::npos;
         at = word.find(kMetaspace, at + 1)) {
      if (at >= begin + 3 && word.compare(at - 3, 3, kMetaspace) == 0) continue;  // "▁▁"
      TokenizeRun(word.substr(begin, at - begin), static_cast<std::uint32_t>(begin), out);
      begin = at;
    }
    TokenizeRun(word.substr(begin), static_cast<std::uint32_t>(begin), out);
    return;
  }
  TokenizeRun(word, 0, out);
}

void BpeModel::TokenizeRun(std::string_view word, std::uint32_t base,
                           std::vector<Token>& out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    if (const auto id = vocab_.Find(word)) {
      out.push_back({*id, base, base + static_cast<std::uint32_t>(word.size())});
      return;
    }
  }
  thread_local std::vector<Symbol> symbols;
  if (!cache_.Get(word, symbols)) {
    symbols.clear();
    Initial(word, symbols);
    MergeAll(symbols);
    cache_.Put(word, symbols);
  }
  std::uint32_t at = base;
  for (const Symbol& s : symbols) {
    out.push_back({s.id, at, at + s.bytes});
    at += s.bytes;
  }
}

}  // namespace ember::engine
