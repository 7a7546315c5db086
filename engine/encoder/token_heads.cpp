#include "engine/encoder/token_heads.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

#include "engine/encoder/config_json.h"
#include "engine/encoder/torch_state_dict.h"
#include "engine/pooling.h"

namespace ember::engine {
namespace {

namespace fs = std::filesystem;

// A torch.save'd Linear state dict: its weight [out, in] and bias [out], float32 on the host.
struct Linear {
  at::Tensor weight, bias;
};

Linear ReadLinear(const fs::path& file, std::int64_t in, std::int64_t out /* 0: any */) {
  const auto fail = [&](const std::string& why) -> Linear {
    throw std::runtime_error(file.string() + ": " + why);
  };
  Linear linear;
  for (auto& [key, tensor] : ReadTorchStateDict(file)) {
    if (key == "weight") linear.weight = tensor.to(at::kFloat).contiguous();
    if (key == "bias") linear.bias = tensor.to(at::kFloat).contiguous();
  }
  if (!linear.weight.defined()) return fail("has no tensor 'weight'");
  const auto& w = linear.weight;
  if (w.dim() != 2 || w.size(1) != in || (out != 0 && w.size(0) != out) || w.size(0) < 1) {
    return fail("'weight' has shape " + std::string(c10::str(w.sizes())) + "; expected [" +
                (out != 0 ? std::to_string(out) : std::string("D")) + ", " + std::to_string(in) +
                "] for the model's hidden size " + std::to_string(in));
  }
  if (!linear.bias.defined()) linear.bias = at::zeros({w.size(0)}, at::kFloat);
  if (linear.bias.dim() != 1 || linear.bias.size(0) != w.size(0)) {
    return fail("'bias' has shape " + std::string(c10::str(linear.bias.sizes())) + "; expected [" +
                std::to_string(w.size(0)) + "]");
  }
  return linear;
}

}  // namespace

TokenHeads TokenHeads::Load(const fs::path& dir, std::int64_t hidden,
                            std::vector<std::int32_t> skip_ids, bool normalize) {
  TokenHeads heads;
  heads.hidden_ = hidden;
  heads.normalize_ = normalize;
  std::ranges::sort(skip_ids);
  heads.skip_ids_ = std::move(skip_ids);
  if (const fs::path file = dir / "sparse_linear.pt"; fs::exists(file)) {
    Linear l = ReadLinear(file, hidden, 1);
    heads.sparse_w_ = std::move(l.weight);
    heads.sparse_b_ = std::move(l.bias);
  }
  if (const fs::path file = dir / "colbert_linear.pt"; fs::exists(file)) {
    Linear l = ReadLinear(file, hidden, 0);
    heads.colbert_w_ = std::move(l.weight);
    heads.colbert_b_ = std::move(l.bias);
  }
  return heads;
}

Backend::SparseVectors TokenHeads::Sparse(const float* states, const TokenBatch& batch) const {
  if (!sparse()) throw std::logic_error("TokenHeads::Sparse: the model has no sparse head");
  const auto tokens = static_cast<std::int64_t>(batch.tokens());
  // relu(w . state + b) for every token of the batch at once: one GEMV.
  const at::Tensor x = at::from_blob(const_cast<float*>(states), {tokens, hidden_}, at::kFloat);
  const at::Tensor weights = at::relu(at::linear(x, sparse_w_, sparse_b_)).contiguous();
  const float* w = weights.data_ptr<float>();

  Backend::SparseVectors out;
  out.offsets.reserve(batch.size() + 1);
  std::map<std::int32_t, float> largest;  // by id, ascending
  for (std::size_t i = 0; i < batch.size(); ++i) {
    largest.clear();
    const auto seq = batch.sequence(i);
    const float* wi = w + batch.offsets()[i];
    for (std::size_t t = 0; t < seq.size(); ++t) {
      if (wi[t] <= 0 || std::ranges::binary_search(skip_ids_, seq[t])) continue;
      float& best = largest[seq[t]];
      best = std::max(best, wi[t]);
    }
    for (const auto& [id, weight] : largest) {
      out.ids.push_back(id);
      out.weights.push_back(weight);
    }
    out.offsets.push_back(out.ids.size());
  }
  return out;
}

std::vector<float> TokenHeads::MultiVector(const float* states, const TokenBatch& batch) const {
  if (multi_vector_dim() == 0) {
    throw std::logic_error("TokenHeads::MultiVector: the model has no multi-vector head");
  }
  // Every token but each sequence's first, gathered into one matrix for one GEMM.
  const auto rows = static_cast<std::int64_t>(batch.tokens() - batch.size());
  if (rows == 0) return {};
  at::Tensor x = at::empty({rows, hidden_}, at::kFloat);
  float* to = x.data_ptr<float>();
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const auto n = static_cast<std::int64_t>(batch.length(i)) - 1;
    std::copy_n(states + (batch.offsets()[i] + 1) * hidden_, n * hidden_, to);
    to += n * hidden_;
  }
  const at::Tensor y = at::linear(x, colbert_w_, colbert_b_).contiguous();
  std::vector<float> out(y.data_ptr<float>(), y.data_ptr<float>() + y.numel());
  if (normalize_) {
    const auto d = static_cast<std::size_t>(multi_vector_dim());
    for (std::size_t r = 0; r < static_cast<std::size_t>(rows); ++r) {
      NormalizeRow(std::span(out.data() + r * d, d));
    }
  }
  return out;
}

std::vector<std::int32_t> SparseSkipIds(const fs::path& dir, const Tokenizer& tokenizer) {
  config_json::Json names;
  for (const char* file : {"special_tokens_map.json", "tokenizer_config.json"}) {
    if (fs::exists(dir / file)) {
      names = config_json::Read(dir / file);
      break;
    }
  }
  std::vector<std::int32_t> ids;
  if (!names.is_object()) return ids;
  for (const char* role : {"cls_token", "eos_token", "pad_token", "unk_token"}) {
    const auto it = names.find(role);
    if (it == names.end()) continue;
    // A token's text, or an AddedToken's {"content": text, ...}.
    const config_json::Json* text = &*it;
    if (it->is_object() && it->contains("content")) text = &(*it)["content"];
    if (!text->is_string()) continue;
    if (const auto id = tokenizer.TokenToId(text->get<std::string>())) ids.push_back(*id);
  }
  return ids;
}

}  // namespace ember::engine
