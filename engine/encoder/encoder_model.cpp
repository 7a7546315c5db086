#include "engine/encoder/encoder_model.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/InferenceMode.h>
#include <c10/core/StreamGuard.h>
#include <malloc.h>

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

#include "engine/encoder/aten_dense.h"
#include "engine/encoder/checkpoint.h"
#include "engine/encoder/classifier_head.h"
#include "engine/encoder/cpu/cpu_encoder.h"
#include "engine/encoder/encoder_config.h"
#include "engine/encoder/encoder_families.h"
#include "engine/encoder/memory_fit.h"
#include "engine/encoder/positions.h"
#include "engine/encoder/relative_attention_bias.h"
#include "engine/encoder/rotary_embedding.h"
#include "engine/encoder/sentence_transformers_config.h"
#include "engine/encoder/stream_lanes.h"
#ifdef EMBER_HAVE_CUDA_ENCODER
#include "engine/encoder/cuda/aten_kernels.h"
#include "engine/encoder/cuda/cuda_decoder.h"
#include "engine/encoder/cuda/cuda_encoder.h"
#endif

namespace ember::engine {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void Fail(const std::string& what) {
  throw std::runtime_error("EncoderModel: " + what);
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

// Copies one tensor out of the mapping in its stored dtype (on CPU), checking its shape and that
// every value is finite.
at::Tensor LoadTensor(const Checkpoint& checkpoint, const std::string& name,
                      const std::vector<int64_t>& expected) {
  const auto [file_ptr, info_ptr] = checkpoint.at(name);
  const SafeTensorsFile& file = *file_ptr;
  const SafeTensorInfo& info = *info_ptr;
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
  file.Release(info);  // the copy is what the model keeps (checkpoint.h)
  if (!at::isfinite(t).all().item<bool>()) {
    Fail(file.path().string() + ": tensor '" + name + "' contains NaN or Inf");
  }
  return t;
}

// The same as float32, for what runs in float32 on the host (a classifier's head, MPNet's
// relative bias table).
at::Tensor LoadFloat(const Checkpoint& checkpoint, const std::string& name,
                     const std::vector<int64_t>& expected) {
  return LoadTensor(checkpoint, name, expected).to(at::kFloat);
}

struct Layer {
  // Query/key/value fused: [q_width + 2 kv_width, H] and its bias; query rows pre-scaled by
  // 1/sqrt(hd) (with q_norm: that norm's weights instead).
  Dense qkv;
  Dense attn_out, inter, out;
  at::Tensor ln1_w, ln1_b, ln2_w, ln2_b;  // pre-norm: ln1 undefined in a layer without it
  at::Tensor q_norm_w, k_norm_w;  // Qwen3's per-head RMSNorms, float32 [head_dim]; or undefined
};

// Refuses, before any weight is read, a model whose weights in the compute precision would not
// fit what the device has free (memory_fit.h), naming both figures and, for fp32, what bf16
// would take.
void RequireMemory(const fs::path& dir, const EncoderConfig& c, const at::Device& device,
                   Precision precision) {
  const bool cuda = device.is_cuda();
  const ParameterCount n = CountParameters(c);
  const auto bytes = [&](Precision p) {
    const int dense = p == Precision::kFp32 ? 4 : p == Precision::kInt8 ? 1 : 2;
    // On CPU only the dense layers take the reduced precision (EncoderOptions::precision), and
    // a bf16 checkpoint's embeddings (Load), counted so.
    const bool half_rest = p == Precision::kBf16 || (cuda && p == Precision::kFp16);
    return ResidentBytes(n, dense, half_rest ? 2 : 4);
  };
  std::optional<uint64_t> available;
#ifdef EMBER_HAVE_CUDA_ENCODER
  if (cuda) available = FreeDeviceMemory(device.has_index() ? device.index() : 0);
#endif
  if (!cuda) available = AvailableHostMemory();
  const uint64_t need = bytes(precision);
  if (!available || need <= *available) return;
  std::string hint;
  if (precision == Precision::kFp32 && bytes(Precision::kBf16) <= *available) {
    hint = "; precision = \"bf16\" would take about " + GiB(bytes(Precision::kBf16));
  }
  Fail(dir.string() + ": this " + c.family + " model (" + std::to_string(n.total / 1'000'000) +
       "M parameters) needs about " + GiB(need) + " in " + PrecisionName(precision) + " on " +
       device.str() + ", which has " + GiB(*available) + " free" + hint);
}

}  // namespace

struct EncoderModel::Impl {
  EncoderConfig cfg;
  EncoderLayout layout;
  Pooling pooling = Pooling::kMean;
  bool normalize = true;
  int threads = 0;
  int64_t max_length = 0;
  at::Device device{at::kCPU};
  Precision precision = Precision::kFp32;
  bool cuda_decoder_kernels = false;  // EncoderOptions::cuda_decoder_kernels, on CUDA
  // Dtype of the hidden states between layers: float32 on CPU (reduced precision is only in
  // the GEMMs there), the compute dtype on CUDA.
  at::ScalarType act_dtype = at::kFloat;
  // CUDA: streams of this model's own, one per call in flight, so that its kernels and input
  // copies queue neither behind other work on the device's default stream nor behind each
  // other. nullopt on CPU. Mutable: leasing (thread-safe) is no change to the model.
  mutable std::optional<StreamLanes> streams;
  at::Tensor word_emb, pos_emb, type_emb, emb_ln_w, emb_ln_b;
  at::Tensor type_emb0;  // type_emb's row 0, the token type of single texts
  // MPNet: the relative attention bias by distance (relative_attention_bias.h), float32
  // [heads, 2 * max_tokens - 1] on the host for the CPU paths; rel_bias_device the same on the
  // device in the compute dtype. Undefined: none.
  at::Tensor rel_bias, rel_bias_device;
  // RoPE (EncoderConfig::rope_theta): the global and sliding-window layers' tables, float32 on
  // the device [max_tokens, head_dim / 2].
  RotaryTable rope, sliding_rope;
  std::vector<Layer> layers;
  at::Tensor final_ln_w, final_ln_b;  // pre-norm: after the last layer
  // A sequence classifier's pooler and classifier (EncoderConfig::labels); nullopt for an encoder.
  std::optional<ClassifierHead> head;
  // fp32 / bf16 on CPU with EncoderOptions::fused: the encoder CpuEncode runs. It owns the packed
  // dense layers (the Dense members of `layers` stay empty) and points into the tensors above.
  std::optional<CpuEncoderWeights> fused;
#ifdef EMBER_HAVE_CUDA_ENCODER
  // fp32 / fp16 / bf16 on CUDA with EncoderOptions::fused: the encoder CudaEncode runs. Its dense
  // weights are its own (the Dense members of `layers` stay empty); the rest is shared.
  std::optional<CudaEncoderWeights> cuda_fused;
  // A decoder on CUDA with EncoderOptions::fused and cuda_decoder_kernels: the packed forward
  // CudaDecode runs, owning its dense weights as cuda_fused does.
  std::optional<CudaDecoderWeights> cuda_decoder;
#endif

  at::Tensor Activate(const at::Tensor& x) const {
    switch (cfg.act) {
      case Activation::kGeluTanh:
        return at::gelu(x, "tanh");
      case Activation::kRelu:
        return at::relu(x);
      case Activation::kSilu:
        return at::silu(x);
      case Activation::kGeluErf:
        break;
    }
    return at::gelu(x);  // exact erf GELU, as HF "gelu"
  }

  // ids: [B, L] int64, mask: [B, L] float (1 = token, 0 = padding), lens[b]: tokens of
  // sequence b; positions: [B, L] int64 rows of the position table (positions.h); types:
  // [B, L] int64 token types, or undefined for all 0. Returns the last hidden states, float32
  // [B, L, H] on the device.
  at::Tensor Forward(const at::Tensor& ids, const at::Tensor& mask,
                     const std::vector<int64_t>& lens, const at::Tensor& positions,
                     const at::Tensor& types) const {
    const int64_t b = ids.size(0), len = ids.size(1), h = cfg.hidden, nh = cfg.heads;
    const int64_t hd = cfg.head_size(), nkv = cfg.kv_head_count(), qw = cfg.q_width(),
                  kvw = cfg.kv_width();
    const bool cpu = device.is_cpu();

    at::Tensor x = at::embedding(word_emb, ids).to(act_dtype);
    if (emb_ln_w.defined()) {
      x = x + (types.defined() ? at::embedding(type_emb, types) : type_emb0);
      if (pos_emb.defined()) x.add_(at::embedding(pos_emb, positions));
      x = at::layer_norm(x.view({b * len, h}), {h}, emb_ln_w, emb_ln_b, cfg.eps);
    } else {
      x = x.reshape({b * len, h});  // a decoder's: the token embeddings as they are
    }

    // Other devices: additive key mask, broadcast over heads and query positions [B, 1, 1, L].
    at::Tensor key_bias;
    if (!cpu) {
      key_bias = (1.0 - mask).mul(std::numeric_limits<float>::lowest()).view({b, 1, 1, len});
    }
    bool padded = false;
    for (int64_t n : lens) padded = padded || n != len;
    // Other devices: the relative bias of every (query, key) pair [1, nh, L, L] (MPNet), the
    // sliding window's mask and the causal one [1, 1, L, L].
    at::Tensor pair_bias, window_bias, causal_bias;
    if (!cpu) {
      const at::Tensor pos = at::arange(len, at::TensorOptions().dtype(at::kLong).device(device));
      const at::Tensor distance = pos.unsqueeze(0) - pos.unsqueeze(1);  // key - query [L, L]
      if (rel_bias_device.defined()) {
        const at::Tensor rows = (distance + (cfg.max_tokens() - 1)).flatten();
        pair_bias = rel_bias_device.index_select(1, rows).view({1, nh, len, len});
      }
      if (cfg.sliding_window > 0) {
        window_bias = (distance.abs() > cfg.sliding_window)
                          .to(at::kFloat)
                          .mul(std::numeric_limits<float>::lowest())
                          .view({1, 1, len, len});
      }
      if (cfg.causal) {
        causal_bias = (distance > 0)
                          .to(at::kFloat)
                          .mul(std::numeric_limits<float>::lowest())
                          .view({1, 1, len, len});
      }
    }
#ifdef EMBER_HAVE_CUDA_ENCODER
    // The decoders' element-wise passes as ember's kernels (EncoderOptions::cuda_decoder_kernels),
    // RoPE at each padded row's position in its sequence.
    const bool kernels = cuda_decoder_kernels && device.is_cuda();
    at::Tensor row_positions;
    if (kernels && rope.cos.defined()) {
      row_positions =
          at::arange(len, at::TensorOptions().dtype(at::kInt).device(device)).repeat({b});
    }
#endif
    // RMSNorm over the last dim, in float32 as HF's (Qwen3RMSNorm, MistralRMSNorm).
    const auto rms = [&](const at::Tensor& t, const at::Tensor& w) {
#ifdef EMBER_HAVE_CUDA_ENCODER
      if (kernels) return cuda::RmsNormRows(t.contiguous(), w, cfg.eps);
#endif
      const at::Tensor f = t.to(at::kFloat);
      return (w.to(at::kFloat) * (f * at::rsqrt(f.pow(2).mean(-1, true) + cfg.eps)))
          .to(t.scalar_type());
    };
    // Self-attention of `in` [B*L, H] in layer i: the context [B*L, q_width].
    const auto attention = [&](const Layer& l, const at::Tensor& in, int64_t i) {
      at::Tensor qkv = l.qkv(in).to(act_dtype);  // [B*L, q_width + 2 kv_width], Q pre-scaled
      const bool rotate_or_norm = rope.cos.defined() || l.q_norm_w.defined();
#ifdef EMBER_HAVE_CUDA_ENCODER
      if (kernels && rotate_or_norm) {
        qkv = qkv.contiguous();
        const RotaryTable& table = cfg.sliding(i) ? sliding_rope : rope;
        const auto f32 = [](const at::Tensor& t) {
          return t.defined() ? t.to(at::kFloat).contiguous() : t;
        };
        cuda::NormAndRotateHeads(qkv, nh, nkv, hd, l.q_norm_w, l.k_norm_w, cfg.eps, row_positions,
                                 f32(table.cos), f32(table.sin));
      } else if (rotate_or_norm) {
#else
      if (rotate_or_norm) {
#endif
        at::Tensor q = qkv.narrow(1, 0, qw).view({b, len, nh, hd});
        at::Tensor k = qkv.narrow(1, qw, kvw).view({b, len, nkv, hd});
        if (l.q_norm_w.defined()) {
          q = rms(q, l.q_norm_w);
          k = rms(k, l.k_norm_w);
        }
        if (rope.cos.defined()) {
          const RotaryTable& table = cfg.sliding(i) ? sliding_rope : rope;
          q = ApplyRotary(q, table);
          k = ApplyRotary(k, table);
        }
        qkv = at::cat(
            {q.reshape({b * len, qw}), k.reshape({b * len, kvw}), qkv.narrow(1, qw + kvw, kvw)}, 1);
      }
      const int64_t window = cfg.sliding(i) ? cfg.sliding_window : 0;
      if (cpu) {
        // Padded query rows are not computed (see CpuAttention); zero them so they stay finite.
        at::Tensor ctx =
            padded ? at::zeros({b * len, qw}, x.options()) : at::empty({b * len, qw}, x.options());
        std::vector<int64_t> starts(lens.size());
        for (size_t s = 0; s < starts.size(); ++s) starts[s] = static_cast<int64_t>(s) * len;
        CpuAttention(qkv.contiguous().data_ptr<float>(), starts, lens, {nh, nkv, hd},
                     ctx.data_ptr<float>(), relative_bias(),
                     {.window = window, .causal = cfg.causal});
        return ctx;
      }
      // [B*L, q_width + 2 kv_width] -> [B, heads, L, hd]; grouped keys and values repeated for
      // each query head that reads them.
      const auto heads_of = [&](int64_t first, int64_t count) {
        at::Tensor t = qkv.narrow(1, first, count * hd).view({b, len, count, hd}).transpose(1, 2);
        return count == nh ? t : t.repeat_interleave(nh / count, 1);
      };
      const at::Tensor q = heads_of(0, nh), k = heads_of(qw, nkv), v = heads_of(qw + kvw, nkv);
      at::Tensor scores = at::matmul(q, k.transpose(-2, -1));  // [B, nh, L, L]
      if (pair_bias.defined()) scores.add_(pair_bias);
      if (window > 0) scores.add_(window_bias);
      if (causal_bias.defined()) scores.add_(causal_bias);
      scores.add_(key_bias);
      return at::matmul(at::softmax(scores, -1), v).transpose(1, 2).reshape({b * len, qw});
    };
    // The feed-forward's inner activations of `in`; bf16 on CPU: the activation runs on the
    // bf16 GEMM output and feeds the next GEMM as is.
    const auto feed_forward_inner = [&](const Layer& l, const at::Tensor& in) {
      const at::Tensor inner = l.inter(in);
      if (!cfg.gated_ffn) return Activate(inner);
#ifdef EMBER_HAVE_CUDA_ENCODER
      if (kernels) return cuda::GatedActivationRows(inner.contiguous(), cfg.act);
#endif
      const int64_t n = cfg.intermediate;
      return Activate(inner.narrow(-1, 0, n)) * inner.narrow(-1, n, n);
    };
    const auto norm = [&](const at::Tensor& t, const at::Tensor& w, const at::Tensor& bias) {
      if (cfg.norm == EncoderConfig::Norm::kRms) return rms(t, w);
      return at::layer_norm(t, {h}, w, bias, cfg.eps);
    };
    for (int64_t i = 0; i < static_cast<int64_t>(layers.size()); ++i) {
      const Layer& l = layers[static_cast<size_t>(i)];
      if (cfg.pre_norm) {
        const at::Tensor in = l.ln1_w.defined() ? norm(x, l.ln1_w, l.ln1_b) : x;
        x = x + l.attn_out(attention(l, in, i)).to(act_dtype);
        x = x + l.out(feed_forward_inner(l, norm(x, l.ln2_w, l.ln2_b))).to(act_dtype);
      } else {
        x = norm(l.attn_out(attention(l, x, i)).to(act_dtype).add_(x), l.ln1_w, l.ln1_b);
        x = norm(l.out(feed_forward_inner(l, x)).to(act_dtype).add_(x), l.ln2_w, l.ln2_b);
      }
    }
    if (final_ln_w.defined()) x = norm(x, final_ln_w, final_ln_b);
    return x.view({b, len, h}).to(at::kFloat);
  }

  // The ATen forward of `batch` padded to its longest sequence: the last hidden states, float32
  // [batch.size() * longest, H] on the host, sequence i's `lens[i]` rows from `starts[i]`.
  at::Tensor PaddedForward(const TokenBatch& batch, std::vector<int64_t>* starts,
                           std::vector<int64_t>* lens) const;

  RelativeBias relative_bias() const {
    if (!rel_bias.defined()) return {};
    return {.table = rel_bias.data_ptr<float>(), .span = cfg.max_tokens()};
  }
};

EncoderModel::EncoderModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
EncoderModel::~EncoderModel() = default;

std::unique_ptr<EncoderModel> EncoderModel::Load(const fs::path& dir,
                                                 const EncoderOptions& options) {
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
  impl->precision = options.precision;
  impl->cuda_decoder_kernels = options.cuda_decoder_kernels;
  switch (options.precision) {
    case Precision::kFp32:
      break;
    case Precision::kBf16:
      // CPU bf16 GEMMs go through oneDNN; without it LibTorch 1.13 falls back to a slow
      // reference kernel, which would make "bf16" a slowdown.
      if (!impl->device.is_cuda() && !at::hasMKLDNN()) {
        Fail(
            "precision \"bf16\" on CPU needs LibTorch built with oneDNN (MKLDNN); this one "
            "is not");
      }
      if (!impl->device.is_cuda() && !PackedDense::Supports(PackedDense::Math::kBf16)) {
        // Below AVX-512, oneDNN and LibTorch have only reference bf16 kernels: a slowdown.
        Fail(
            "precision \"bf16\" on CPU needs AVX-512 (avx512_core) for fast bf16 kernels, "
            "which this CPU lacks; use \"fp32\" or \"int8\" here");
      }
      break;
    case Precision::kFp16:
      if (!impl->device.is_cuda()) {
        Fail("precision \"fp16\" is only supported on CUDA devices (device \"" + options.device +
             "\"): LibTorch has no fast float16 GEMM on CPU; use \"bf16\" or \"int8\" there");
      }
      break;
    case Precision::kInt8: {
      if (impl->device.is_cuda()) {
        Fail(
            "precision \"int8\" is only supported on CPU (LibTorch's dynamic quantization); "
            "use \"fp16\" or \"bf16\" on \"" +
            options.device + "\"");
      }
      const auto& engines = at::globalContext().supportedQEngines();
      if (std::find(engines.begin(), engines.end(), at::QEngine::ONEDNN) == engines.end()) {
        Fail(
            "precision \"int8\" needs LibTorch's oneDNN quantized engine, which this build "
            "lacks");
      }
      // Process-wide: the engine LibTorch's quantized ops dispatch to. oneDNN uses VNNI int8
      // instructions where the CPU has them; qnnpack (the other engine in Debian's build) is
      // a mobile ARM-first kernel and measured several times slower than fp32 here.
      at::globalContext().setQEngine(at::QEngine::ONEDNN);
      break;
    }
  }
  if (impl->device.is_cuda()) {
    if (options.precision == Precision::kBf16) impl->act_dtype = at::kBFloat16;
    if (options.precision == Precision::kFp16) impl->act_dtype = at::kHalf;
    impl->streams.emplace(impl->device);
  }

  SentenceTransformersConfig st;
  try {
    st = ParseSentenceTransformers(dir);
    const fs::path config_file = st.transformer_dir / "config.json";
    if (!fs::exists(config_file)) Fail("missing " + config_file.string());
    EncoderSpec spec = ReadEncoderSpec(config_file);
    impl->cfg = std::move(spec.config);
    impl->layout = std::move(spec.layout);
  } catch (const nlohmann::json::exception& e) {  // a value of the wrong JSON type
    Fail("unexpected JSON content in the model folder " + dir.string() + ": " + e.what());
  }
  const fs::path& mdir = st.transformer_dir;
  const EncoderConfig& c = impl->cfg;

  switch (options.pooling) {
    case Pooling::kMean:
    case Pooling::kCls:
    case Pooling::kLastToken:
      impl->pooling = options.pooling;
      break;
    case Pooling::kAuto:
      if (!st.pooling_problem.empty()) Fail(st.pooling_problem);
      impl->pooling = st.pooling.value_or(Pooling::kMean);
      break;
  }
  impl->normalize = options.normalize;
  if (!c.labels.empty()) {
    // A classifier's head reads the [CLS] token's hidden state (or their mean) as it is.
    impl->pooling = c.classifier_mean ? Pooling::kMean : Pooling::kCls;
    impl->normalize = false;
  }
  impl->threads = options.threads;
  impl->max_length = std::min(c.max_tokens(), st.max_seq_length.value_or(c.max_tokens()));

  RequireMemory(dir, c, impl->device, impl->precision);

  fs::path weights = mdir / "model.safetensors";
  if (!fs::exists(weights) && !fs::exists(mdir / "model.safetensors.index.json")) {
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
    const Checkpoint file = Checkpoint::Open(mdir);
    weights = file.path();
    // A task model's checkpoint (BertForXxx, XLMRobertaForXxx, older sentence-transformers) keeps
    // the encoder under its base prefix ("bert.", "roberta."); a bare encoder's under none.
    const EncoderLayout& layout = impl->layout;
    const std::string prefix =
        file.contains(layout.base_prefix + layout.word_embeddings + ".weight") ? layout.base_prefix
                                                                               : "";
    // A tensor on the device in `dtype` (by default the compute dtype, act_dtype), converted
    // from the stored one as it is copied there: on CUDA a bf16 checkpoint's tensors go to the
    // device as they are, and no float32 copy of them exists on the host or the device.
    uint64_t bytes_read = 0;  // for EncoderOptions::progress
    auto load = [&](const std::string& name, const std::vector<int64_t>& shape,
                    std::optional<at::ScalarType> dtype = std::nullopt) {
      const at::Tensor stored = LoadTensor(file, prefix + name, shape);
      bytes_read += stored.nbytes();
      return stored.to(impl->device, dtype.value_or(impl->act_dtype));
    };
    // The dense layers' dtype as loaded: float32 on CPU (PackedDense and Dense round it to
    // their precision themselves), the compute dtype on CUDA.
    const at::ScalarType dense_dtype = impl->device.is_cpu() ? at::kFloat : impl->act_dtype;
    // Weight [out, in] and bias [out] in dense_dtype. Weight before bias (statements, not
    // arguments, so that a shape error names the weight first, whatever the compiler's argument
    // order). `scaled_rows` > 0: the first rows (and their biases) multiplied by `scale` in
    // float32, before any rounding to the compute dtype (one tensor's float32 copy at a time).
    using WeightBias = std::pair<at::Tensor, at::Tensor>;
    // A checkpoint without biases (EncoderLayout) adds zeros, so that every path runs one form.
    auto weight_bias = [&](const std::string& name, int64_t out, int64_t in, bool has_bias,
                           int64_t scaled_rows = 0, double scale = 1.0) {
      const at::ScalarType dtype = scaled_rows > 0 ? at::kFloat : dense_dtype;
      at::Tensor w = load(name + ".weight", {out, in}, dtype);
      at::Tensor b = has_bias ? load(name + ".bias", {out}, dtype)
                              : at::zeros({out}, at::TensorOptions(dtype).device(impl->device));
      if (scaled_rows > 0) {
        w.narrow(0, 0, scaled_rows).mul_(scale);
        b.narrow(0, 0, scaled_rows).mul_(scale);
        w = w.to(dense_dtype);
        b = b.to(dense_dtype);
      }
      return WeightBias{std::move(w), std::move(b)};
    };
    // A LayerNorm's weight and bias, in the compute dtype on the device.
    auto layer_norm = [&](const std::string& name) {
      at::Tensor w = load(name + ".weight", {c.hidden});
      at::Tensor b = layout.norm_bias ? load(name + ".bias", {c.hidden}) : at::zeros_like(w);
      return std::pair{std::move(w), std::move(b)};
    };
    // fp32 (and bf16 where PackedDense can) on CPU: the fused encoder's packed layers instead
    // of ATen Dense ones.
    const PackedDense::Math math =
        impl->precision == Precision::kBf16 ? PackedDense::Math::kBf16 : PackedDense::Math::kFp32;
    const bool fused = options.fused && impl->device.is_cpu() &&
                       (impl->precision == Precision::kFp32 ||
                        (impl->precision == Precision::kBf16 && PackedDense::Supports(math)));
    auto packed = [math](const WeightBias& wb, std::optional<Activation> act) {
      const at::Tensor wt = wb.first.t().contiguous();  // [in, out]
      return PackedDense(wt.data_ptr<float>(), wb.second.data_ptr<float>(), wt.size(0), wt.size(1),
                         act, math);
    };
    CpuEncoderWeights encoder;
#ifdef EMBER_HAVE_CUDA_ENCODER
    // The CUDA encoder adds token type 0 to every token, so a classifier, which takes pairs,
    // runs the ATen forward there (docs/status.md: token types in the CUDA encoder are open).
    // Nor does it run layers other than BERT's (EncoderConfig::bert_layers: MPNet's relative
    // attention bias; ModernBERT's pre-norm, RoPE, gated feed-forward and sliding windows): the
    // ATen forward there too, as does last-token pooling, which its pooling kernel lacks.
    const bool cuda_fused = options.fused && impl->device.is_cuda() && c.labels.empty() &&
                            c.bert_layers() && impl->pooling != Pooling::kLastToken;
    CudaEncoderWeights cuda_encoder;
    // The decoders' packed forward (cuda_decoder.h), only with cuda_decoder_kernels until it has
    // run on a GPU: a decoder's layers, no norm after the embeddings, biases on the query, key
    // and value projections only (Qwen2's), and sliding windows only where flash attention takes
    // them (float16, bfloat16). Anything else runs the ATen forward.
    const bool cuda_decoder = options.fused && options.cuda_decoder_kernels &&
                              impl->device.is_cuda() && c.labels.empty() && c.decoder_layers() &&
                              layout.embedding_ln.empty() && !layout.attn_out_bias &&
                              !layout.ffn_bias &&
                              (impl->act_dtype != at::kFloat || c.sliding_layer.empty());
    CudaDecoderWeights decoder;
    // In the compute dtype (float32 for norm weights: the kernels' gamma), contiguous, on the
    // device.
    auto to_act = [&](const at::Tensor& t) { return t.to(impl->act_dtype).contiguous(); };
    auto to_f32 = [](const at::Tensor& t) { return t.to(at::kFloat).contiguous(); };
#endif
    const int64_t h = c.hidden, in = c.intermediate;
    // bf16 on CPU: a bf16 checkpoint's token embeddings stay as stored (exactly), at half the
    // memory (a decoder's 151k x 4096 table is 1.2 GiB so); rows are widened as they are read.
    const bool bf16_table =
        impl->device.is_cpu() && impl->precision == Precision::kBf16 &&
        file.at(prefix + layout.word_embeddings + ".weight").info->dtype == "BF16";
    impl->word_emb = load(layout.word_embeddings + ".weight", {c.vocab, h},
                          bf16_table ? std::optional(at::kBFloat16) : std::nullopt);
    if (c.rope_theta == 0) {
      impl->pos_emb = load("embeddings.position_embeddings.weight", {c.max_pos, h});
    } else {
      const auto table = [&](double theta) {
        RotaryTable t = MakeRotaryTable(theta, c.head_size(), c.max_tokens());
        return RotaryTable{.cos = t.cos.to(impl->device), .sin = t.sin.to(impl->device)};
      };
      impl->rope = table(c.rope_theta);
      // One table where both thetas are one (a decoder's 32k positions take 16 MB each).
      const bool own = c.sliding_rope_theta > 0 && c.sliding_rope_theta != c.rope_theta;
      impl->sliding_rope = own ? table(c.sliding_rope_theta) : impl->rope;
    }
    // Single texts are all token type 0; a pair's second text is type 1 (TokenBatch).
    impl->type_emb =
        layout.token_type_embeddings
            ? load("embeddings.token_type_embeddings.weight", {c.type_vocab, h})
            : at::zeros({c.type_vocab, h}, at::TensorOptions(impl->act_dtype).device(impl->device));
    impl->type_emb0 = impl->type_emb[0];
    if (!layout.embedding_ln.empty()) {
      std::tie(impl->emb_ln_w, impl->emb_ln_b) = layer_norm(layout.embedding_ln);
    }
    const int64_t hd = c.head_size(), qw = c.q_width(), kvw = c.kv_width();
    for (int64_t i = 0; i < c.layers; ++i) {
      const std::string p = layout.layer_prefix + std::to_string(i) + ".";
      Layer l;
      WeightBias qkv;
      // Fold attention's 1/sqrt(head_dim) into the query projection (in float32, before any
      // rounding to the compute precision): one op less per layer. Qwen3 norms each query
      // head after the projection, which would undo that: its norm's weights take it instead.
      const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
      const int64_t scaled = c.qk_norm ? 0 : qw;
      if (!layout.qkv.empty()) {
        qkv = weight_bias(p + layout.qkv, qw + 2 * kvw, h, layout.attention_bias, scaled, scale);
      } else {
        const WeightBias q =
            weight_bias(p + layout.query, qw, h, layout.attention_bias, scaled, scale);
        const WeightBias k = weight_bias(p + layout.key, kvw, h, layout.attention_bias);
        const WeightBias v = weight_bias(p + layout.value, kvw, h, layout.attention_bias);
        qkv = {at::cat({q.first, k.first, v.first}), at::cat({q.second, k.second, v.second})};
      }
      if (c.qk_norm) {
        l.q_norm_w = load(p + layout.q_norm + ".weight", {hd}, at::kFloat).mul_(scale);
        l.k_norm_w = load(p + layout.k_norm + ".weight", {hd}, at::kFloat);
      }
      WeightBias attn_out = weight_bias(p + layout.attn_out, h, qw, layout.attn_out_bias);
      // A pre-norm model with a norm after its embeddings takes it as its first layer's
      // (ModernBERT); a decoder's first layer has its own.
      if (!(c.pre_norm && i == 0 && impl->emb_ln_w.defined())) {
        std::tie(l.ln1_w, l.ln1_b) = layer_norm(p + layout.attn_ln);
      }
      WeightBias inter;
      if (!layout.gate.empty()) {
        // [gate; up]: GatedActivation's act(first half) * second half is SwiGLU's
        // silu(gate) * up.
        const WeightBias gate = weight_bias(p + layout.gate, in, h, layout.ffn_bias);
        const WeightBias up = weight_bias(p + layout.inter, in, h, layout.ffn_bias);
        inter = {at::cat({gate.first, up.first}), at::cat({gate.second, up.second})};
      } else {
        inter = weight_bias(p + layout.inter, c.gated_ffn ? 2 * in : in, h, layout.ffn_bias);
      }
      WeightBias out = weight_bias(p + layout.out, h, in, layout.ffn_bias);
      std::tie(l.ln2_w, l.ln2_b) = layer_norm(p + layout.ffn_ln);
      if (fused) {
        const RotaryTable& rope = c.sliding(i) ? impl->sliding_rope : impl->rope;
        const auto data = [](const at::Tensor& t) {
          return t.defined() ? t.data_ptr<float>() : nullptr;
        };
        encoder.layers.push_back(
            {.qkv = packed(qkv, std::nullopt),
             .q_norm = data(l.q_norm_w),
             .k_norm = data(l.k_norm_w),
             .attn_out = packed(attn_out, std::nullopt),
             .ln1_w = data(l.ln1_w),
             .ln1_b = data(l.ln1_b),
             .inter = packed(inter, c.gated_ffn ? std::nullopt : std::optional(c.act)),
             .out = packed(out, std::nullopt),
             .ln2_w = l.ln2_w.data_ptr<float>(),
             .ln2_b = l.ln2_b.data_ptr<float>(),
             .rope_cos = data(rope.cos),
             .rope_sin = data(rope.sin),
             .window = c.sliding(i) ? c.sliding_window : 0});
      }
#ifdef EMBER_HAVE_CUDA_ENCODER
      else if (cuda_fused) {
        cuda_encoder.layers.push_back({.qkv_w = to_act(qkv.first),
                                       .qkv_b = to_act(qkv.second),
                                       .attn_out_w = to_act(attn_out.first),
                                       .attn_out_b = to_act(attn_out.second),
                                       .ln1_w = l.ln1_w,
                                       .ln1_b = l.ln1_b,
                                       .inter_w = to_act(inter.first),
                                       .inter_b = to_act(inter.second),
                                       .out_w = to_act(out.first),
                                       .out_b = to_act(out.second),
                                       .ln2_w = l.ln2_w,
                                       .ln2_b = l.ln2_b});
      } else if (cuda_decoder) {
        const RotaryTable& rope = c.sliding(i) ? impl->sliding_rope : impl->rope;
        decoder.layers.push_back(
            {.ln1_w = to_f32(l.ln1_w),
             .qkv_w = to_act(qkv.first),
             .qkv_b = layout.attention_bias ? to_act(qkv.second) : at::Tensor(),
             .q_norm_w = l.q_norm_w,
             .k_norm_w = l.k_norm_w,
             .out_w = to_act(attn_out.first),
             .ln2_w = to_f32(l.ln2_w),
             .gate_up_w = to_act(inter.first),
             .down_w = to_act(out.first),
             .rope_cos = rope.cos.contiguous(),
             .rope_sin = rope.sin.contiguous(),
             .window = c.sliding(i) ? c.sliding_window : 0});
      }
#endif
      else {
        l.qkv = Dense(std::move(qkv.first), std::move(qkv.second), impl->precision);
        l.attn_out = Dense(std::move(attn_out.first), std::move(attn_out.second), impl->precision);
        l.inter = Dense(std::move(inter.first), std::move(inter.second), impl->precision);
        l.out = Dense(std::move(out.first), std::move(out.second), impl->precision);
      }
      impl->layers.push_back(std::move(l));
      if (options.progress) {
        options.progress({.layers_loaded = i + 1,
                          .layers = c.layers,
                          .bytes_read = bytes_read,
                          .bytes_total = file.bytes()});
      }
      // The layer's float32 copies are freed now, but glibc keeps freed blocks below its mmap
      // threshold (which grows to 32 MB as large blocks are freed) in the heap, between the
      // small tensors that stay: handing them back each layer kept a 4B decoder's peak at
      // 1.12x its bf16 files instead of 1.22x (docs/models.md "Large decoders").
      malloc_trim(0);
    }
    if (!c.labels.empty()) {
      // Float32 on the host, where ClassifierHead runs.
      const auto labels = static_cast<int64_t>(c.labels.size());
      ClassifierHead head;
      const std::string dense = (layout.head_dense_in_base ? prefix : "") + layout.head_dense;
      head.dense_w = LoadFloat(file, dense + ".weight", {h, h});
      if (layout.head_dense_bias) head.dense_b = LoadFloat(file, dense + ".bias", {h});
      head.gelu = c.classifier_gelu;
      if (!layout.head_norm.empty()) {
        head.norm_w = LoadFloat(file, layout.head_norm + ".weight", {h});
        if (layout.norm_bias) head.norm_b = LoadFloat(file, layout.head_norm + ".bias", {h});
        head.norm_eps = c.eps;
      }
      head.w = LoadFloat(file, layout.head_out + ".weight", {labels, h});
      head.b = LoadFloat(file, layout.head_out + ".bias", {labels});
      impl->head = std::move(head);
    }
    if (c.relative_buckets > 0) {
      const at::Tensor table =
          LoadFloat(file, prefix + layout.relative_attention_bias, {c.relative_buckets, c.heads});
      impl->rel_bias = RelativeAttentionBias(table, c.max_tokens());
      if (!impl->device.is_cpu())
        impl->rel_bias_device = impl->rel_bias.to(impl->device, impl->act_dtype);
    }
    if (!layout.final_ln.empty()) {
      std::tie(impl->final_ln_w, impl->final_ln_b) = layer_norm(layout.final_ln);
    }
    if (file.contains(prefix + layout.layer_prefix + std::to_string(c.layers) + "." +
                      (layout.qkv.empty() ? layout.query : layout.qkv) + ".weight")) {
      Fail(weights.string() + " has more encoder layers than num_hidden_layers=" +
           std::to_string(c.layers) + " in config.json");
    }
    if (fused) {
      encoder.hidden = h;
      encoder.heads = {.heads = c.heads, .kv_heads = c.kv_head_count(), .head_dim = hd};
      encoder.intermediate = in;
      encoder.eps = static_cast<float>(c.eps);
      if (impl->word_emb.scalar_type() == at::kBFloat16) {
        encoder.word_emb_bf16 = reinterpret_cast<const uint16_t*>(impl->word_emb.data_ptr());
      } else {
        encoder.word_emb = impl->word_emb.data_ptr<float>();
      }
      // Row position_offset is a sequence's first position; a padding token's is the one before.
      if (impl->pos_emb.defined()) {
        encoder.pos_emb = impl->pos_emb.data_ptr<float>() + c.position_offset * h;
      }
      encoder.pad_id = c.pad_id;
      encoder.type_emb0 = impl->type_emb0.data_ptr<float>();
      if (c.type_vocab > 1) encoder.type_emb1 = impl->type_emb[1].data_ptr<float>();
      if (impl->emb_ln_w.defined()) {
        encoder.emb_ln_w = impl->emb_ln_w.data_ptr<float>();
        encoder.emb_ln_b = impl->emb_ln_b.data_ptr<float>();
      }
      encoder.relative_bias = impl->relative_bias();
      encoder.pre_norm = c.pre_norm;
      encoder.rms_norm = c.norm == EncoderConfig::Norm::kRms;
      encoder.causal = c.causal;
      if (impl->final_ln_w.defined()) {
        encoder.final_ln_w = impl->final_ln_w.data_ptr<float>();
        encoder.final_ln_b = impl->final_ln_b.data_ptr<float>();
      }
      encoder.gated_ffn = c.gated_ffn;
      encoder.act = c.act;
      // Every batch size compiled now, not on the first request of each size.
      for (const CpuEncoderWeights::Layer& l : encoder.layers) {
        for (const PackedDense* d : {&l.qkv, &l.attn_out, &l.inter, &l.out}) d->Precompile();
      }
      impl->fused = std::move(encoder);
    }
#ifdef EMBER_HAVE_CUDA_ENCODER
    if (cuda_fused) {
      cuda_encoder.hidden = h;
      cuda_encoder.heads = c.heads;
      cuda_encoder.intermediate = in;
      cuda_encoder.eps = static_cast<float>(c.eps);
      cuda_encoder.act = c.act;
      cuda_encoder.pad_id = c.pad_id;
      cuda_encoder.layernorm =
          options.cuda_warp_layernorm ? cuda::RowLayout::kWarp : cuda::RowLayout::kBlock;
      cuda_encoder.word_emb = impl->word_emb;
      cuda_encoder.pos_emb = impl->pos_emb.narrow(0, c.position_offset, c.max_tokens());
      cuda_encoder.type_emb0 = impl->type_emb0;
      cuda_encoder.emb_ln_w = impl->emb_ln_w;
      cuda_encoder.emb_ln_b = impl->emb_ln_b;
      impl->cuda_fused = std::move(cuda_encoder);
    }
    if (cuda_decoder) {
      decoder.hidden = h;
      decoder.heads = c.heads;
      decoder.kv_heads = c.kv_head_count();
      decoder.head_dim = hd;
      decoder.intermediate = in;
      decoder.eps = static_cast<float>(c.eps);
      decoder.act = c.act;
      decoder.causal = c.causal;
      decoder.word_emb = impl->word_emb.contiguous();
      decoder.final_norm_w = to_f32(impl->final_ln_w);
      impl->cuda_decoder = std::move(decoder);
    }
#endif
  } catch (const c10::Error& e) {
    Fail("loading " + weights.string() + ": " + e.what_without_backtrace());
  }
  return std::unique_ptr<EncoderModel>(new EncoderModel(std::move(impl)));
}

namespace {

// Throws std::invalid_argument for a sequence EncoderModel cannot run (encoder_model.h).
void CheckBatch(const EncoderConfig& cfg, const TokenBatch& batch) {
  for (size_t i = 0; i < batch.size(); ++i) {
    const auto seq = batch.sequence(i);
    if (seq.empty()) {
      throw std::invalid_argument("EncoderModel::Embed: sequence " + std::to_string(i) +
                                  " is empty");
    }
    if (static_cast<int64_t>(seq.size()) > cfg.max_tokens()) {
      throw std::invalid_argument("EncoderModel::Embed: sequence " + std::to_string(i) + " has " +
                                  std::to_string(seq.size()) + " tokens, more than the model's " +
                                  std::to_string(cfg.max_tokens()) + " positions");
    }
    // A model with one token type (XLM-R, MPNet, ModernBERT: no token_type_ids in HF) reads
    // every token as type 0, whatever segments its tokenizer marks.
    if (const size_t second = batch.second_start(i); second != 0 && second >= seq.size()) {
      throw std::invalid_argument("EncoderModel::Embed: sequence " + std::to_string(i) +
                                  " has its second segment at " + std::to_string(second) + " of " +
                                  std::to_string(seq.size()) + " tokens");
    }
    for (int32_t id : seq) {
      if (id < 0 || id >= cfg.vocab) {
        throw std::invalid_argument("EncoderModel::Embed: sequence " + std::to_string(i) +
                                    " has token id " + std::to_string(id) + " outside [0, " +
                                    std::to_string(cfg.vocab) + ")");
      }
    }
  }
}

// at::set_num_threads also sets the calling thread's OpenMP ICV, which OpenBLAS/OpenMP read
// per thread: a thread other than the loading one would otherwise run BLAS with the OpenMP
// default (all cores). Once per thread.
void ApplyThreads(int threads) {
  if (threads <= 0) return;
  thread_local int applied = 0;
  if (applied != threads) {
    at::set_num_threads(threads);
    applied = threads;
  }
}

// CUDA: a stream of the model's own (StreamLanes), leased to one call and current on its thread
// for the call's copies and kernels until it ends. Nothing on CPU (no lanes).
class OwnStream {
 public:
  explicit OwnStream(std::optional<StreamLanes>& lanes) {
    if (lanes) {
      lease_.emplace(lanes->Acquire());
      guard_.emplace(lease_->stream());
    }
  }

 private:
  std::optional<StreamLanes::Lease> lease_;
  std::optional<c10::StreamGuard> guard_;  // declared after the lease: released before it
};

}  // namespace

at::Tensor EncoderModel::Impl::PaddedForward(const TokenBatch& batch, std::vector<int64_t>* starts,
                                             std::vector<int64_t>* lens) const {
  const auto b = static_cast<int64_t>(batch.size());
  const auto len = static_cast<int64_t>(batch.max_length());
  // The ATen forward pads to the longest sequence. CUDA: page-locked host buffers, so the
  // copies below run asynchronously on the model's stream (LibTorch's caching host
  // allocator keeps them alive until the copy has finished).
  const bool cuda = device.is_cuda();
  const auto host = at::TensorOptions().pinned_memory(cuda);
  at::Tensor id_t = at::zeros({b, len}, host.dtype(at::kLong));  // pad id 0; masked out anyway
  at::Tensor mask_t = at::zeros({b, len}, host.dtype(at::kFloat));
  at::Tensor pos_t = at::full({b, len}, cfg.position_offset, host.dtype(at::kLong));
  at::Tensor type_t;  // only for pairs; undefined: all token type 0
  const bool typed = batch.has_pairs() && cfg.type_vocab > 1;
  if (typed) type_t = at::zeros({b, len}, host.dtype(at::kLong));
  auto* id_p = id_t.data_ptr<int64_t>();
  auto* mask_p = mask_t.data_ptr<float>();
  starts->resize(batch.size());
  lens->resize(batch.size());
  for (int64_t i = 0; i < b; ++i) {
    const auto seq = batch.sequence(static_cast<size_t>(i));
    (*starts)[static_cast<size_t>(i)] = i * len;
    (*lens)[static_cast<size_t>(i)] = static_cast<int64_t>(seq.size());
    std::copy(seq.begin(), seq.end(), id_p + i * len);
    PositionRows(seq, cfg.position_offset, cfg.pad_id, pos_t.data_ptr<int64_t>() + i * len);
    std::fill_n(mask_p + i * len, seq.size(), 1.0f);
    if (const size_t second = batch.second_start(static_cast<size_t>(i)); typed && second != 0) {
      std::fill_n(type_t.data_ptr<int64_t>() + i * len + static_cast<int64_t>(second),
                  static_cast<int64_t>(seq.size() - second), int64_t{1});
    }
  }
  // The last hidden states come back to the host; the copy to pageable memory synchronises
  // with the stream.
  return Forward(
             id_t.to(device, at::kLong, /*non_blocking=*/cuda),
             mask_t.to(device, at::kFloat, /*non_blocking=*/cuda), *lens,
             pos_t.to(device, at::kLong, /*non_blocking=*/cuda),
             type_t.defined() ? type_t.to(device, at::kLong, /*non_blocking=*/cuda) : at::Tensor())
      .to(at::kCPU)
      .contiguous();
}

std::vector<float> EncoderModel::Embed(const TokenBatch& batch) const {
  const Impl& m = *impl_;
  const auto b = static_cast<int64_t>(batch.size());
  if (b == 0) return {};
  CheckBatch(m.cfg, batch);
  ApplyThreads(m.threads);

  c10::InferenceMode guard;
  try {
    // A classifier's head turns the pooled [CLS] rows into logits.
    const auto finish = [&](std::vector<float> pooled) {
      return m.head ? m.head->Apply(pooled.data(), b) : pooled;
    };
    if (m.fused) {
      std::vector<float> out(batch.size() * static_cast<size_t>(m.cfg.hidden));
      CpuEncode(*m.fused, batch, m.pooling, m.normalize, out.data());
      return finish(std::move(out));
    }
    const OwnStream stream(m.streams);
#ifdef EMBER_HAVE_CUDA_ENCODER
    if (m.cuda_decoder) return CudaDecode(*m.cuda_decoder, batch, m.pooling, m.normalize);
    if (m.cuda_fused) {
      // Never for a classifier (Load); an encoder is never given pairs (EncoderBackend).
      if (batch.has_pairs())
        throw std::invalid_argument("EncoderModel::Embed: pairs on an encoder");
      return CudaEncode(*m.cuda_fused, batch, m.pooling, m.normalize);
    }
#endif
    // Pooled on the host as every backend pools (engine/pooling.h).
    std::vector<int64_t> starts, lens;
    const at::Tensor hidden = m.PaddedForward(batch, &starts, &lens);
    std::vector<float> out(batch.size() * static_cast<size_t>(m.cfg.hidden));
    PoolRows(hidden.data_ptr<float>(), m.cfg.hidden, starts, lens, m.pooling, m.normalize,
             out.data());
    return finish(std::move(out));
  } catch (const c10::Error& e) {
    throw std::runtime_error(std::string("EncoderModel::Embed: ") + e.what_without_backtrace());
  }
}

std::vector<float> EncoderModel::TokenStates(const TokenBatch& batch) const {
  const Impl& m = *impl_;
  if (batch.empty()) return {};
  if (m.head) throw std::logic_error("EncoderModel::TokenStates: a classifier has none");
  CheckBatch(m.cfg, batch);
  ApplyThreads(m.threads);
  c10::InferenceMode guard;
  try {
    const auto h = static_cast<size_t>(m.cfg.hidden);
    std::vector<float> out(batch.tokens() * h);
    if (m.fused) {
      CpuEncodeTokens(*m.fused, batch, out.data());
      return out;
    }
    const OwnStream stream(m.streams);
#ifdef EMBER_HAVE_CUDA_ENCODER
    if (m.cuda_decoder) return CudaDecodeTokens(*m.cuda_decoder, batch);
    if (m.cuda_fused) return CudaEncodeTokens(*m.cuda_fused, batch);
#endif
    std::vector<int64_t> starts, lens;
    const at::Tensor hidden = m.PaddedForward(batch, &starts, &lens);
    const float* rows = hidden.data_ptr<float>();
    for (size_t i = 0; i < batch.size(); ++i) {
      std::copy_n(rows + starts[i] * m.cfg.hidden, lens[i] * m.cfg.hidden,
                  out.begin() + batch.offsets()[i] * m.cfg.hidden);
    }
    return out;
  } catch (const c10::Error& e) {
    throw std::runtime_error(std::string("EncoderModel::TokenStates: ") +
                             e.what_without_backtrace());
  }
}

int64_t EncoderModel::dim() const {
  return impl_->head ? impl_->head->labels() : impl_->cfg.hidden;
}
const std::vector<std::string>& EncoderModel::labels() const { return impl_->cfg.labels; }

uint64_t EncoderModel::memory_bytes() const {
  const Impl& m = *impl_;
  uint64_t bytes = 0;
  for (const at::Tensor* t : {&m.word_emb, &m.pos_emb, &m.type_emb, &m.emb_ln_w, &m.emb_ln_b}) {
    if (t->defined()) bytes += t->nbytes();
  }
  if (m.head) {
    for (const at::Tensor* t : {&m.head->dense_w, &m.head->dense_b, &m.head->norm_w,
                                &m.head->norm_b, &m.head->w, &m.head->b}) {
      if (t->defined()) bytes += t->nbytes();
    }
  }
  for (const Layer& l : m.layers) {
    for (const Dense* d : {&l.qkv, &l.attn_out, &l.inter, &l.out}) bytes += d->bytes();
    for (const at::Tensor* t : {&l.ln1_w, &l.ln1_b, &l.ln2_w, &l.ln2_b, &l.q_norm_w, &l.k_norm_w}) {
      if (t->defined()) bytes += t->nbytes();
    }
  }
  for (const at::Tensor* t : {&m.final_ln_w, &m.final_ln_b, &m.rope.cos, &m.rope.sin}) {
    if (t->defined()) bytes += t->nbytes();
  }
  if (m.sliding_rope.cos.defined() && !m.sliding_rope.cos.is_same(m.rope.cos)) {
    bytes += m.sliding_rope.cos.nbytes() + m.sliding_rope.sin.nbytes();
  }
  if (m.fused) {
    for (const CpuEncoderWeights::Layer& l : m.fused->layers) {
      for (const PackedDense* d : {&l.qkv, &l.attn_out, &l.inter, &l.out}) bytes += d->bytes();
    }
  }
#ifdef EMBER_HAVE_CUDA_ENCODER
  if (m.cuda_fused) bytes += m.cuda_fused->dense_bytes();
  if (m.cuda_decoder) bytes += m.cuda_decoder->dense_bytes();
#endif
  return bytes;
}
int64_t EncoderModel::max_length() const { return impl_->max_length; }
int64_t EncoderModel::max_tokens() const { return impl_->cfg.max_tokens(); }
int64_t EncoderModel::vocab_size() const { return impl_->cfg.vocab; }
bool EncoderModel::packs() const {
#ifdef EMBER_HAVE_CUDA_ENCODER
  if (impl_->cuda_fused || impl_->cuda_decoder) return true;
#endif
  return impl_->fused.has_value();
}
Pooling EncoderModel::pooling() const { return impl_->pooling; }
bool EncoderModel::normalize() const { return impl_->normalize; }
std::string EncoderModel::device() const { return impl_->device.str(); }
Precision EncoderModel::precision() const { return impl_->precision; }

}  // namespace ember::engine
