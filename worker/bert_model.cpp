#include "worker/bert_model.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "worker/safetensors.h"

namespace ember::worker {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

[[noreturn]] void Fail(const std::string& what) { throw std::runtime_error("BertModel: " + what); }

json ReadJson(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail("cannot open " + path.string());
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    Fail("malformed JSON in " + path.string() + ": " + e.what());
  }
}

int64_t GetPositiveInt(const json& j, const char* key, const fs::path& file) {
  auto it = j.find(key);
  if (it == j.end()) Fail(file.string() + ": missing \"" + key + "\"");
  if (!it->is_number_integer() || it->get<int64_t>() <= 0) {
    Fail(file.string() + ": \"" + key + "\" must be a positive integer, got " + it->dump());
  }
  return it->get<int64_t>();
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

enum class Activation { kGeluErf, kGeluTanh, kRelu };

struct Config {
  int64_t hidden = 0, layers = 0, heads = 0, intermediate = 0, vocab = 0, max_pos = 0;
  int64_t type_vocab = 2;
  double eps = 1e-12;
  Activation act = Activation::kGeluErf;
};

Config ParseConfig(const fs::path& file) {
  const json j = ReadJson(file);
  if (!j.is_object()) Fail(file.string() + ": not a JSON object");
  if (auto it = j.find("model_type"); it != j.end()) {
    if (!it->is_string() || it->get<std::string>() != "bert") {
      Fail(file.string() + ": model_type " + it->dump() +
           " is not supported (only \"bert\"; RoBERTa-style models differ in position ids)");
    }
  }
  if (auto it = j.find("position_embedding_type"); it != j.end() && *it != "absolute") {
    Fail(file.string() + ": position_embedding_type " + it->dump() + " is not supported");
  }
  Config c;
  c.hidden = GetPositiveInt(j, "hidden_size", file);
  c.layers = GetPositiveInt(j, "num_hidden_layers", file);
  c.heads = GetPositiveInt(j, "num_attention_heads", file);
  c.intermediate = GetPositiveInt(j, "intermediate_size", file);
  c.vocab = GetPositiveInt(j, "vocab_size", file);
  c.max_pos = GetPositiveInt(j, "max_position_embeddings", file);
  if (j.contains("type_vocab_size")) c.type_vocab = GetPositiveInt(j, "type_vocab_size", file);
  if (c.hidden % c.heads != 0) {
    Fail(file.string() + ": hidden_size " + std::to_string(c.hidden) +
         " is not divisible by num_attention_heads " + std::to_string(c.heads));
  }
  if (auto it = j.find("layer_norm_eps"); it != j.end()) {
    if (!it->is_number() || !(it->get<double>() > 0)) {
      Fail(file.string() + ": layer_norm_eps must be a positive number");
    }
    c.eps = it->get<double>();
  }
  if (auto it = j.find("hidden_act"); it != j.end()) {
    const std::string act = it->is_string() ? it->get<std::string>() : it->dump();
    if (act == "gelu") {
      c.act = Activation::kGeluErf;
    } else if (act == "gelu_new" || act == "gelu_pytorch_tanh" || act == "gelu_fast") {
      c.act = Activation::kGeluTanh;
    } else if (act == "relu") {
      c.act = Activation::kRelu;
    } else {
      Fail(file.string() + ": hidden_act \"" + act + "\" is not supported");
    }
  }
  return c;
}

struct StConfig {  // what the sentence-transformers files say, if present
  fs::path transformer_dir;
  std::optional<Pooling> pooling;
  std::string pooling_problem;  // non-empty if the folder asks for an unsupported pooling
  std::optional<int64_t> max_seq_length;
};

void ParsePoolingConfig(const fs::path& file, StConfig& st) {
  const json j = ReadJson(file);
  if (!j.is_object()) Fail(file.string() + ": not a JSON object");
  std::vector<std::string> on;
  for (const auto& [k, v] : j.items()) {
    if (k.rfind("pooling_mode_", 0) == 0 && v.is_boolean() && v.get<bool>()) on.push_back(k);
  }
  if (on.size() == 1 && on[0] == "pooling_mode_mean_tokens") {
    st.pooling = Pooling::kMean;
  } else if (on.size() == 1 && on[0] == "pooling_mode_cls_token") {
    st.pooling = Pooling::kCls;
  } else {
    std::string modes;
    for (const auto& m : on) modes += (modes.empty() ? "" : ", ") + m;
    st.pooling_problem = file.string() + " asks for pooling {" + modes +
                         "}; only exactly one of pooling_mode_mean_tokens / "
                         "pooling_mode_cls_token is supported (pass an explicit pooling option "
                         "to override)";
  }
}

StConfig ParseSentenceTransformers(const fs::path& dir) {
  StConfig st;
  st.transformer_dir = dir;
  fs::path pooling_file;
  const fs::path modules = dir / "modules.json";
  if (fs::exists(modules)) {
    const json j = ReadJson(modules);
    if (!j.is_array()) Fail(modules.string() + ": expected a JSON array of modules");
    for (const auto& m : j) {
      if (!m.is_object()) Fail(modules.string() + ": module entries must be objects");
      const std::string type = m.value("type", "");
      const std::string path = m.value("path", "");
      auto is = [&](const char* suffix) {
        const std::string s(suffix);
        return type.size() >= s.size() && type.compare(type.size() - s.size(), s.size(), s) == 0;
      };
      if (is("models.Transformer")) {
        st.transformer_dir = dir / path;
      } else if (is("models.Pooling")) {
        pooling_file = dir / path / "config.json";
      } else if (is("models.Normalize")) {
        // Normalisation is controlled by BertOptions::normalize.
      } else {
        Fail(modules.string() + ": module \"" + type + "\" (" + m.value("name", "?") +
             ") is not supported; ember implements Transformer, Pooling and Normalize only");
      }
    }
  } else if (fs::exists(dir / "1_Pooling" / "config.json")) {
    pooling_file = dir / "1_Pooling" / "config.json";
  }
  if (!pooling_file.empty()) {
    if (!fs::exists(pooling_file)) Fail("missing " + pooling_file.string());
    ParsePoolingConfig(pooling_file, st);
  }
  for (const fs::path& p :
       {st.transformer_dir / "sentence_bert_config.json", dir / "sentence_bert_config.json"}) {
    if (fs::exists(p)) {
      const json j = ReadJson(p);
      if (j.is_object() && j.contains("max_seq_length")) {
        st.max_seq_length = GetPositiveInt(j, "max_seq_length", p);
      }
      break;
    }
  }
  return st;
}

// Copies one tensor out of the mapping as float32 (on CPU), checking its shape.
at::Tensor LoadTensor(const SafeTensorsFile& file, const std::string& name,
                      const std::vector<int64_t>& expected) {
  const SafeTensorInfo& info = file.at(name);
  if (info.shape != expected) {
    Fail(file.path().string() + ": tensor '" + name + "' has shape " + ShapeString(info.shape) +
         ", config.json implies " + ShapeString(expected));
  }
  at::ScalarType st;
  if (info.dtype == "F32") {
    st = at::kFloat;
  } else if (info.dtype == "F16") {
    st = at::kHalf;
  } else if (info.dtype == "BF16") {
    st = at::kBFloat16;
  } else if (info.dtype == "F64") {
    st = at::kDouble;
  } else {
    Fail(file.path().string() + ": tensor '" + name + "' has unsupported dtype " + info.dtype +
         " (supported: F32, F16, BF16, F64)");
  }
  // Copy instead of from_blob: the mapping goes away after loading and the data
  // may be unaligned.
  at::Tensor t = at::empty(info.shape, at::TensorOptions().dtype(st));
  std::memcpy(t.data_ptr(), file.data(info), info.nbytes());
  t = t.to(at::kFloat);
  if (!at::isfinite(t).all().item<bool>()) {
    Fail(file.path().string() + ": tensor '" + name + "' contains NaN or Inf");
  }
  return t;
}

struct Layer {
  at::Tensor qkv_w, qkv_b;  // query/key/value fused: [3H, H], [3H]
  at::Tensor attn_out_w, attn_out_b, ln1_w, ln1_b;
  at::Tensor inter_w, inter_b, out_w, out_b, ln2_w, ln2_b;
};

}  // namespace

struct BertModel::Impl {
  Config cfg;
  Pooling pooling = Pooling::kMean;
  bool normalize = true;
  int threads = 0;
  int64_t max_length = 0;
  at::Device device{at::kCPU};
  at::Tensor word_emb, pos_emb, type_emb0, emb_ln_w, emb_ln_b;
  std::vector<Layer> layers;

  at::Tensor Activate(const at::Tensor& x) const {
    switch (cfg.act) {
      case Activation::kGeluTanh:
        return at::gelu(x, "tanh");
      case Activation::kRelu:
        return at::relu(x);
      case Activation::kGeluErf:
        break;
    }
    return at::gelu(x);  // exact erf GELU, as HF "gelu"
  }

  // ids: [B, L] int64, mask: [B, L] float (1 = token, 0 = padding). Returns [B, H].
  at::Tensor Forward(const at::Tensor& ids, const at::Tensor& mask) const {
    const int64_t b = ids.size(0), len = ids.size(1), h = cfg.hidden, nh = cfg.heads;
    const int64_t hd = h / nh;
    const double scale = 1.0 / std::sqrt(static_cast<double>(hd));

    at::Tensor x = at::embedding(word_emb, ids) + pos_emb.narrow(0, 0, len) + type_emb0;
    x = at::layer_norm(x.view({b * len, h}), {h}, emb_ln_w, emb_ln_b, cfg.eps);

    // Additive key mask, broadcast over heads and query positions: [B, 1, 1, L].
    const at::Tensor key_bias =
        (1.0 - mask).mul(std::numeric_limits<float>::lowest()).view({b, 1, 1, len});
    for (const Layer& l : layers) {
      // [B*L, 3H] -> [3, B, nh, L, hd]
      const at::Tensor qkv =
          at::linear(x, l.qkv_w, l.qkv_b).view({b, len, 3, nh, hd}).permute({2, 0, 3, 1, 4});
      const at::Tensor q = qkv[0].mul(scale), k = qkv[1], v = qkv[2];
      at::Tensor scores = at::matmul(q, k.transpose(-2, -1));  // [B, nh, L, L]
      scores.add_(key_bias);
      const at::Tensor probs = at::softmax(scores, -1);
      const at::Tensor ctx = at::matmul(probs, v).permute({0, 2, 1, 3}).reshape({b * len, h});
      x = at::layer_norm(at::linear(ctx, l.attn_out_w, l.attn_out_b).add_(x), {h}, l.ln1_w, l.ln1_b,
                         cfg.eps);
      const at::Tensor inter = Activate(at::linear(x, l.inter_w, l.inter_b));
      x = at::layer_norm(at::linear(inter, l.out_w, l.out_b).add_(x), {h}, l.ln2_w, l.ln2_b,
                         cfg.eps);
    }
    x = x.view({b, len, h});

    at::Tensor pooled;
    if (pooling == Pooling::kCls) {
      pooled = x.select(1, 0);
    } else {
      const at::Tensor m = mask.unsqueeze(-1);  // [B, L, 1]
      pooled = (x * m).sum(1) / m.sum(1).clamp_min(1e-9);
    }
    if (normalize) pooled = pooled / pooled.norm(2, {1}, true).clamp_min(1e-12);
    return pooled;
  }
};

BertModel::BertModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BertModel::~BertModel() = default;

std::unique_ptr<BertModel> BertModel::Load(const fs::path& dir, const BertOptions& options) {
  if (!fs::is_directory(dir)) Fail("model folder " + dir.string() + " does not exist");
  auto impl = std::make_unique<Impl>();

  try {
    impl->device = at::Device(options.device);
  } catch (const std::exception&) {
    Fail("invalid device \"" + options.device + "\" (expected e.g. \"cpu\" or \"cuda:0\")");
  }
  if (impl->device.is_cuda() && !at::hasCUDA()) {
    Fail("device \"" + options.device + "\" requested but this LibTorch build has no usable CUDA");
  }
  if (options.threads > 0) at::set_num_threads(options.threads);

  StConfig st;
  try {
    st = ParseSentenceTransformers(dir);
    const fs::path config_file = st.transformer_dir / "config.json";
    if (!fs::exists(config_file)) Fail("missing " + config_file.string());
    impl->cfg = ParseConfig(config_file);
  } catch (const json::exception& e) {  // a value of the wrong JSON type
    Fail("unexpected JSON content in the model folder " + dir.string() + ": " + e.what());
  }
  const fs::path& mdir = st.transformer_dir;
  const Config& c = impl->cfg;

  switch (options.pooling) {
    case Pooling::kMean:
    case Pooling::kCls:
      impl->pooling = options.pooling;
      break;
    case Pooling::kAuto:
      if (!st.pooling_problem.empty()) Fail(st.pooling_problem);
      impl->pooling = st.pooling.value_or(Pooling::kMean);
      break;
  }
  impl->normalize = options.normalize;
  impl->threads = options.threads;
  impl->max_length = std::min(c.max_pos, st.max_seq_length.value_or(c.max_pos));

  const fs::path weights = mdir / "model.safetensors";
  if (!fs::exists(weights)) {
    if (fs::exists(mdir / "model.safetensors.index.json")) {
      Fail(mdir.string() +
           " holds a sharded checkpoint (model.safetensors.index.json); ember "
           "needs a single model.safetensors");
    }
    if (fs::exists(mdir / "pytorch_model.bin")) {
      Fail("missing " + weights.string() +
           "; the folder only has pytorch_model.bin (a Python pickle ember does not read). "
           "Convert it once, e.g. python3 -c \"import torch; from safetensors.torch import "
           "save_file; sd = torch.load('pytorch_model.bin', map_location='cpu'); "
           "save_file({k: v.contiguous() for k, v in sd.items()}, 'model.safetensors')\"");
    }
    Fail("missing " + weights.string());
  }

  try {
    const SafeTensorsFile file = SafeTensorsFile::Open(weights);
    // Checkpoints saved from BertForXxx / older sentence-transformers use "bert.".
    const std::string prefix =
        file.contains("bert.embeddings.word_embeddings.weight") ? "bert." : "";
    auto load = [&](const std::string& name, const std::vector<int64_t>& shape) {
      return LoadTensor(file, prefix + name, shape).to(impl->device);
    };
    const int64_t h = c.hidden, in = c.intermediate;
    impl->word_emb = load("embeddings.word_embeddings.weight", {c.vocab, h});
    impl->pos_emb = load("embeddings.position_embeddings.weight", {c.max_pos, h});
    // Single-segment input: token_type_ids are all 0.
    impl->type_emb0 = load("embeddings.token_type_embeddings.weight", {c.type_vocab, h})[0];
    impl->emb_ln_w = load("embeddings.LayerNorm.weight", {h});
    impl->emb_ln_b = load("embeddings.LayerNorm.bias", {h});
    for (int64_t i = 0; i < c.layers; ++i) {
      const std::string p = "encoder.layer." + std::to_string(i) + ".";
      Layer l;
      l.qkv_w = at::cat({load(p + "attention.self.query.weight", {h, h}),
                         load(p + "attention.self.key.weight", {h, h}),
                         load(p + "attention.self.value.weight", {h, h})});
      l.qkv_b = at::cat({load(p + "attention.self.query.bias", {h}),
                         load(p + "attention.self.key.bias", {h}),
                         load(p + "attention.self.value.bias", {h})});
      l.attn_out_w = load(p + "attention.output.dense.weight", {h, h});
      l.attn_out_b = load(p + "attention.output.dense.bias", {h});
      l.ln1_w = load(p + "attention.output.LayerNorm.weight", {h});
      l.ln1_b = load(p + "attention.output.LayerNorm.bias", {h});
      l.inter_w = load(p + "intermediate.dense.weight", {in, h});
      l.inter_b = load(p + "intermediate.dense.bias", {in});
      l.out_w = load(p + "output.dense.weight", {h, in});
      l.out_b = load(p + "output.dense.bias", {h});
      l.ln2_w = load(p + "output.LayerNorm.weight", {h});
      l.ln2_b = load(p + "output.LayerNorm.bias", {h});
      impl->layers.push_back(std::move(l));
    }
    if (file.contains(prefix + "encoder.layer." + std::to_string(c.layers) +
                      ".attention.self.query.weight")) {
      Fail(weights.string() + " has more encoder layers than num_hidden_layers=" +
           std::to_string(c.layers) + " in config.json");
    }
  } catch (const c10::Error& e) {
    Fail("loading " + weights.string() + ": " + e.what_without_backtrace());
  }
  return std::unique_ptr<BertModel>(new BertModel(std::move(impl)));
}

std::vector<float> BertModel::Embed(const std::vector<std::vector<int32_t>>& ids) const {
  const Impl& m = *impl_;
  const int64_t b = static_cast<int64_t>(ids.size());
  if (b == 0) return {};
  size_t longest = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i].empty()) {
      throw std::invalid_argument("BertModel::Embed: sequence " + std::to_string(i) + " is empty");
    }
    if (static_cast<int64_t>(ids[i].size()) > m.cfg.max_pos) {
      throw std::invalid_argument("BertModel::Embed: sequence " + std::to_string(i) + " has " +
                                  std::to_string(ids[i].size()) +
                                  " tokens, more than max_position_embeddings " +
                                  std::to_string(m.cfg.max_pos));
    }
    for (int32_t id : ids[i]) {
      if (id < 0 || id >= m.cfg.vocab) {
        throw std::invalid_argument("BertModel::Embed: sequence " + std::to_string(i) +
                                    " has token id " + std::to_string(id) + " outside [0, " +
                                    std::to_string(m.cfg.vocab) + ")");
      }
    }
    longest = std::max(longest, ids[i].size());
  }
  const auto len = static_cast<int64_t>(longest);
  if (m.threads > 0) {
    // at::set_num_threads also sets the calling thread's OpenMP ICV, which
    // OpenBLAS/OpenMP read per thread: a thread other than the loading one would
    // otherwise run BLAS with the OpenMP default (all cores). Once per thread.
    thread_local int applied = 0;
    if (applied != m.threads) {
      at::set_num_threads(m.threads);
      applied = m.threads;
    }
  }

  c10::InferenceMode guard;
  at::Tensor id_t = at::zeros({b, len}, at::kLong);  // pad id 0; masked out anyway
  at::Tensor mask_t = at::zeros({b, len}, at::kFloat);
  auto* id_p = id_t.data_ptr<int64_t>();
  auto* mask_p = mask_t.data_ptr<float>();
  for (int64_t i = 0; i < b; ++i) {
    const auto& seq = ids[static_cast<size_t>(i)];
    std::copy(seq.begin(), seq.end(), id_p + i * len);
    std::fill_n(mask_p + i * len, seq.size(), 1.0f);
  }
  try {
    at::Tensor out =
        m.Forward(id_t.to(m.device), mask_t.to(m.device)).to(at::kCPU, at::kFloat).contiguous();
    const float* p = out.data_ptr<float>();
    return std::vector<float>(p, p + out.numel());
  } catch (const c10::Error& e) {
    throw std::runtime_error(std::string("BertModel::Embed: ") + e.what_without_backtrace());
  }
}

int64_t BertModel::dim() const { return impl_->cfg.hidden; }

uint64_t BertModel::memory_bytes() const {
  const Impl& m = *impl_;
  uint64_t bytes = 0;
  for (const at::Tensor* t : {&m.word_emb, &m.pos_emb, &m.type_emb0, &m.emb_ln_w, &m.emb_ln_b}) {
    bytes += t->nbytes();
  }
  for (const Layer& l : m.layers) {
    for (const at::Tensor* t :
         {&l.qkv_w, &l.qkv_b, &l.attn_out_w, &l.attn_out_b, &l.ln1_w, &l.ln1_b, &l.inter_w,
          &l.inter_b, &l.out_w, &l.out_b, &l.ln2_w, &l.ln2_b}) {
      bytes += t->nbytes();
    }
  }
  return bytes;
}
int64_t BertModel::max_length() const { return impl_->max_length; }
int64_t BertModel::max_position_embeddings() const { return impl_->cfg.max_pos; }
int64_t BertModel::vocab_size() const { return impl_->cfg.vocab; }
Pooling BertModel::pooling() const { return impl_->pooling; }
bool BertModel::normalize() const { return impl_->normalize; }
std::string BertModel::device() const { return impl_->device.str(); }

}  // namespace ember::worker
