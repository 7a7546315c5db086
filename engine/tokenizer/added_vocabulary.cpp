#include "engine/tokenizer/added_vocabulary.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "engine/tokenizer/json_fields.h"

namespace ember::engine {
namespace {

using json_fields::Json;

// The character that ends at byte `end` of `s` (end > 0).
char32_t CharBefore(std::string_view s, std::size_t end) {
  std::size_t start = end - 1;
  while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
  return unicode::DecodeValid(s, start);
}

// Where the run of whitespace that ends `s` begins (HF's \s*$).
std::size_t TrailingSpaceStart(std::string_view s) {
  std::size_t at = s.size();
  while (at > 0) {
    std::size_t start = at - 1;
    while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
    std::size_t i = start;
    if (!hf::IsWhitespace(unicode::DecodeValid(s, i))) break;
    at = start;
  }
  return at;
}

// The bytes of the run of whitespace that starts `s` (HF's ^\s*).
std::size_t LeadingSpaceLength(std::string_view s) {
  std::size_t at = 0;
  while (at < s.size()) {
    std::size_t i = at;
    if (!hf::IsWhitespace(unicode::DecodeValid(s, i))) break;
    at = i;
  }
  return at;
}

}  // namespace

void AddedVocabulary::Matcher::Add(std::string_view pattern, std::int32_t id) {
  if (pattern.empty()) return;
  std::uint32_t node = 0;
  for (const char ch : pattern) {
    const auto c = static_cast<unsigned char>(ch);
    const auto it = nodes_[node].next.find(c);
    if (it != nodes_[node].next.end()) {
      node = it->second;
    } else {
      const auto child = static_cast<std::uint32_t>(nodes_.size());
      nodes_[node].next.emplace(c, child);
      nodes_.emplace_back();
      node = child;
    }
  }
  nodes_[node].id = id;
  const auto lead = static_cast<unsigned char>(pattern[0]);
  first_[lead] = true;
  only_first_ = std::count(first_.begin(), first_.end(), true) == 1 ? lead : -1;
}

std::size_t AddedVocabulary::Matcher::NextStart(std::string_view text, std::size_t at) const {
  if (only_first_ >= 0) {
    const void* hit = std::memchr(text.data() + at, only_first_, text.size() - at);
    return hit == nullptr ? text.size()
                          : static_cast<std::size_t>(static_cast<const char*>(hit) - text.data());
  }
  while (at < text.size() && !first_[static_cast<unsigned char>(text[at])]) ++at;
  return at;
}

std::optional<std::pair<std::size_t, std::int32_t>> AddedVocabulary::Matcher::LongestAt(
    std::string_view text, std::size_t at) const {
  std::optional<std::pair<std::size_t, std::int32_t>> found;
  std::uint32_t node = 0;
  for (std::size_t i = at; i < text.size(); ++i) {
    const auto it = nodes_[node].next.find(static_cast<unsigned char>(text[i]));
    if (it == nodes_[node].next.end()) break;
    node = it->second;
    if (nodes_[node].id >= 0) found = std::pair{i + 1, nodes_[node].id};
  }
  return found;
}

AddedVocabulary::AddedVocabulary(const Json& spec, const TokenModel& model,
                                 const Normalizer* normalizer) {
  id_limit_ = model.id_limit();
  if (spec.is_null()) return;
  if (!spec.is_array()) BadConfig("\"added_tokens\" must be a list");
  const std::size_t model_size = model.vocab_size();
  std::size_t next_id = model_size;
  for (const Json& item : spec) {
    const std::string where = "added token " + item.dump();
    AddedToken token;
    token.content = json_fields::String(item, "content", where);
    token.special = json_fields::Bool(item, "special", false, where);
    token.single_word = json_fields::Bool(item, "single_word", false, where);
    token.lstrip = json_fields::Bool(item, "lstrip", false, where);
    token.rstrip = json_fields::Bool(item, "rstrip", false, where);
    token.normalized = json_fields::Bool(item, "normalized", !token.special, where);
    try {
      unicode::ValidateUtf8(token.content);
    } catch (const TokenizerError&) {
      BadConfig(where + " is not UTF-8");
    }
    if (token.content.empty()) continue;
    if (const auto it = ids_.find(token.content);
        it != ids_.end() && tokens_.at(it->second) == token) {
      continue;
    }
    // The model's id where it has the token, else the next one after its vocabulary.
    std::int32_t id;
    if (const auto known = TokenToId(token.content)) {
      id = *known;
    } else if (const auto in_model = model.TokenToId(token.content)) {
      id = *in_model;
    } else {
      id = static_cast<std::int32_t>(next_id++);
    }
    if (token.normalized && normalizer != nullptr) {
      NormalizedString s(token.content, /*track=*/false);
      normalizer->Normalize(s);
      if (s.get() != token.content) normalized_forms_[id] = s.get();
    }
    ids_.insert_or_assign(token.content, id);
    if (token.special) specials_.insert(token.content);
    tokens_[id] = std::move(token);
    id_limit_ = std::max(id_limit_, static_cast<std::size_t>(id) + 1);
  }
  for (const auto& [id, token] : tokens_) {
    if (!token.normalized) {
      raw_.Add(token.content, id);
    } else {
      const auto form = normalized_forms_.find(id);
      normalized_.Add(form != normalized_forms_.end() ? form->second : token.content, id);
    }
  }
}

std::optional<std::int32_t> AddedVocabulary::TokenToId(std::string_view content) const {
  const auto it = ids_.find(content);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string_view> AddedVocabulary::IdToToken(std::int32_t id) const {
  const auto it = tokens_.find(id);
  if (it == tokens_.end()) return std::nullopt;
  if (const auto form = normalized_forms_.find(id); form != normalized_forms_.end()) {
    return form->second;
  }
  return it->second.content;
}

void AddedVocabulary::SplitOnMatches(NormalizedString&& s, const Matcher& matcher,
                                     std::vector<Split>& out, std::vector<Token>& tokens) const {
  if (s.empty()) return;
  if (matcher.empty()) {
    out.push_back(Split{std::move(s), false, 0, 0});
    return;
  }
  const std::string& text = s.get();
  const auto piece = [&](std::size_t begin, std::size_t end, std::int32_t id) {
    std::optional<NormalizedString> slice = s.Slice(begin, end);
    if (!slice) BadConfig("an added token's split falls inside a character");
    if (slice->empty()) return;
    if (id < 0) {
      out.push_back(Split{std::move(*slice), false, 0, 0});
    } else {
      const auto len = static_cast<std::uint32_t>(slice->len());
      out.push_back(Split{std::move(*slice), true, static_cast<std::uint32_t>(tokens.size()), 1});
      tokens.push_back(Token{id, 0, len, /*literal=*/true});
    }
  };
  // Leftmost-longest matches, without overlaps; each then checked against its token's rules
  // (a match that fails them is not retried shorter).
  std::size_t start_offset = 0;
  for (std::size_t at = matcher.NextStart(text, 0); at < text.size();
       at = matcher.NextStart(text, at)) {
    const auto match = matcher.LongestAt(text, at);
    if (!match) {
      ++at;
      continue;
    }
    std::size_t start = at, stop = match->first;
    at = stop;
    const AddedToken& token = tokens_.at(match->second);
    if (token.single_word) {
      const bool space_before = start == 0 || !hf::IsWordChar(CharBefore(text, start));
      std::size_t next = stop;
      const bool space_after =
          stop == text.size() || !hf::IsWordChar(unicode::DecodeValid(text, next));
      if (!space_before || !space_after) continue;
    }
    if (token.lstrip) {
      start = std::max(TrailingSpaceStart(std::string_view(text).substr(0, start)), start_offset);
    }
    if (token.rstrip) stop += LeadingSpaceLength(std::string_view(text).substr(stop));
    if (start_offset < start) piece(start_offset, start, -1);
    piece(start, stop, match->second);
    start_offset = stop;
  }
  if (start_offset == 0) {
    out.push_back(Split{std::move(s), false, 0, 0});  // no match: the string whole, not a copy
    return;
  }
  if (start_offset != text.size()) piece(start_offset, text.size(), -1);
}

void AddedVocabulary::ExtractAndNormalize(std::string_view text, const Normalizer* normalizer,
                                          bool track, PreTokenizedString& out) const {
  out.Clear();
  std::vector<Split>& splits = out.splits();
  thread_local std::vector<Split> raw;
  raw.clear();
  SplitOnMatches(NormalizedString(text, track), raw_, raw, out.tokens());
  for (Split& s : raw) {
    if (s.tokenized) {
      splits.push_back(std::move(s));
      continue;
    }
    if (normalizer != nullptr) normalizer->Normalize(s.text);
    SplitOnMatches(std::move(s.text), normalized_, splits, out.tokens());
  }
}

}  // namespace ember::engine
