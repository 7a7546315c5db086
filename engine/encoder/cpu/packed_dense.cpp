#include "engine/encoder/cpu/packed_dense.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#ifdef EMBER_HAVE_DNNL
#include <oneapi/dnnl/dnnl.hpp>
#else
#include "engine/encoder/cpu/sgemm.h"
#endif

namespace ember::engine {

#ifdef EMBER_HAVE_DNNL

namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

// Rows per GEMM call: longer inputs run as blocks of this many rows, so a layer compiles at most
// kMaxRows primitives (one per row count, JIT-compiled on first use in ~0.2-0.4 ms) however the
// batches vary. 256 rows already reach the kernel's full speed.
constexpr int64_t kMaxRows = 256;

dnnl::algorithm Algorithm(Activation act) {
  switch (act) {
    case Activation::kGeluTanh:
      return dnnl::algorithm::eltwise_gelu_tanh;
    case Activation::kRelu:
      return dnnl::algorithm::eltwise_relu;
    case Activation::kSilu:
      return dnnl::algorithm::eltwise_swish;  // x * sigmoid(alpha x): alpha 1 below
    case Activation::kGeluErf:
      break;
  }
  return dnnl::algorithm::eltwise_gelu_erf;
}

}  // namespace

struct PackedDense::Impl {
  struct Primitive {
    dnnl::matmul matmul;
    dnnl::memory::desc src, dst, scratchpad;
  };

  int64_t in = 0, out = 0;
  Math math = Math::kFp32;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::primitive_attr attr;
  dnnl::memory::desc bias_md;
  dnnl::memory weights, bias;  // weights in the layout the kernel chose at load
  std::string kernel;
  mutable std::mutex mu;
  mutable std::vector<std::shared_ptr<const Primitive>> by_rows;  // [rows], filled on first use

  dnnl::matmul::primitive_desc Describe(int64_t rows, const dnnl::memory::desc& weights_md) const {
    return dnnl::matmul::primitive_desc(
        dnnl::matmul::desc(dnnl::memory::desc({rows, in}, Type(), tag::ab), weights_md, bias_md,
                           dnnl::memory::desc({rows, out}, dt::f32, tag::ab)),
        attr, engine);
  }

  dt Type() const { return math == Math::kBf16 ? dt::bf16 : dt::f32; }

  std::shared_ptr<const Primitive> Get(int64_t rows) const {
    const std::lock_guard lock(mu);
    auto& slot = by_rows[static_cast<size_t>(rows)];
    if (!slot) {
      // Every row count takes the weights as packed at load: oneDNN picks the same layout for
      // all of them on the CPUs measured, and it checks that here.
      const auto pd = Describe(rows, weights.get_desc());
      slot = std::make_shared<const Primitive>(
          Primitive{dnnl::matmul(pd), pd.src_desc(), pd.dst_desc(), pd.scratchpad_desc()});
    }
    return slot;
  }
};

bool PackedDense::Supports(Math math) {
  if (math == Math::kFp32) return true;
  // bf16: only where oneDNN has a JIT kernel for it (avx512_core and up in 2.6). Below that it
  // has no bf16 matmul at all, or only its plain C++ reference one, many times slower than
  // fp32. Asked once per process; the answer is the CPU's.
  static const bool bf16 = [] {
    try {
      const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
      const dnnl::matmul::primitive_desc pd(
          dnnl::matmul::desc(dnnl::memory::desc({16, 64}, dt::bf16, tag::ab),
                             dnnl::memory::desc({64, 64}, dt::bf16, tag::any),
                             dnnl::memory::desc({16, 64}, dt::f32, tag::ab)),
          engine);
      return std::string(pd.impl_info_str()).rfind("ref", 0) != 0;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return bf16;
}

PackedDense::PackedDense(const float* wt, const float* bias, int64_t in, int64_t out,
                         std::optional<Activation> act, Math math)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.in = in;
  m.out = out;
  m.math = math;
  if (!Supports(math)) {
    throw std::runtime_error(
        "bf16 math needs a CPU with AVX-512 (avx512_core) for oneDNN's bf16 kernels; this one "
        "has none (only a reference kernel, slower than fp32, or none at all); use fp32 here");
  }
  try {
    // User scratchpad: each call brings its own, so one primitive can run on several threads
    // at once (with the library's, concurrent calls corrupted each other's results here).
    m.attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (act) {
      dnnl::post_ops ops;
      const float alpha = *act == Activation::kSilu ? 1.0f : 0.0f;
      ops.append_eltwise(1.0f, Algorithm(*act), alpha, 0.0f);
      m.attr.set_post_ops(ops);
    }
    m.bias_md = dnnl::memory::desc({1, out}, dt::f32, tag::ab);
    const auto reference = m.Describe(kMaxRows, dnnl::memory::desc({in, out}, m.Type(), tag::any));
    m.kernel = std::string("onednn:") + reference.impl_info_str();
    // oneDNN runs bf16 on a plain C++ reference kernel where the CPU lacks AVX-512 (no bf16
    // JIT kernels in 2.6 below avx512_core): many times slower than fp32, so refuse it.
    if (math == Math::kBf16 && m.kernel.rfind("onednn:ref", 0) == 0) {
      throw std::runtime_error("bf16 math on this CPU would run oneDNN's reference kernel (" +
                               m.kernel + "), slower than fp32; use fp32 here");
    }
    dnnl::memory plain(dnnl::memory::desc({in, out}, dt::f32, tag::ab), m.engine,
                       const_cast<float*>(wt));
    m.weights = dnnl::memory(reference.weights_desc(), m.engine);
    dnnl::stream stream(m.engine);
    dnnl::reorder(plain, m.weights).execute(stream, plain, m.weights);  // converts to bf16 too
    stream.wait();
    m.bias = dnnl::memory(m.bias_md, m.engine);
    std::memcpy(m.bias.get_data_handle(), bias, static_cast<size_t>(out) * sizeof(float));
  } catch (const dnnl::error& e) {
    throw std::runtime_error("PackedDense [" + std::to_string(in) + " x " + std::to_string(out) +
                             "]: oneDNN: " + e.what());
  }
  m.by_rows.resize(kMaxRows + 1);
}

void PackedDense::Precompile() const {
  try {
    for (int64_t rows = 1; rows <= kMaxRows; ++rows) (void)impl_->Get(rows);
  } catch (const dnnl::error& e) {
    throw std::runtime_error("PackedDense: oneDNN: " + std::string(e.what()));
  }
}

void PackedDense::Apply(const float* x, int64_t rows, float* y) const {
  const Impl& m = *impl_;
  try {
    dnnl::stream stream(m.engine);
    std::vector<uint16_t> bf16;  // bf16 math: the block's input rows, rounded
    if (m.math == Math::kBf16) bf16.resize(static_cast<size_t>(std::min(kMaxRows, rows) * m.in));
    for (int64_t r0 = 0; r0 < rows; r0 += kMaxRows) {
      const int64_t n = std::min(kMaxRows, rows - r0);
      const auto p = m.Get(n);
      void* input = const_cast<float*>(x + r0 * m.in);
      if (m.math == Math::kBf16) {
        ToBf16(x + r0 * m.in, n * m.in, bf16.data());
        input = bf16.data();
      }
      dnnl::memory src(p->src, m.engine, input);
      dnnl::memory dst(p->dst, m.engine, y + r0 * m.out);
      std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, src},
                                                 {DNNL_ARG_WEIGHTS, m.weights},
                                                 {DNNL_ARG_BIAS, m.bias},
                                                 {DNNL_ARG_DST, dst}};
      if (p->scratchpad.get_size() > 0) {
        args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(p->scratchpad, m.engine));
      }
      p->matmul.execute(stream, args);
      stream.wait();  // before the next block overwrites the bf16 input
    }
  } catch (const dnnl::error& e) {
    throw std::runtime_error("PackedDense [" + std::to_string(m.in) + " x " +
                             std::to_string(m.out) + "] on " + std::to_string(rows) +
                             " rows: oneDNN: " + e.what());
  }
}

uint64_t PackedDense::bytes() const {
  return impl_->weights.get_desc().get_size() + impl_->bias_md.get_size();
}
const char* PackedDense::kernel() const { return impl_->kernel.c_str(); }

#else  // no oneDNN: the system BLAS (or at::mm) on the plain weights, then a bias pass

struct PackedDense::Impl {
  int64_t in = 0, out = 0;
  std::vector<float> wt, bias;
  std::optional<Activation> act;
};

bool PackedDense::Supports(Math math) { return math == Math::kFp32; }

PackedDense::PackedDense(const float* wt, const float* bias, int64_t in, int64_t out,
                         std::optional<Activation> act, Math math)
    : impl_(std::make_unique<Impl>()) {
  if (!Supports(math)) throw std::runtime_error("PackedDense: bf16 needs a build with oneDNN");
  impl_->in = in;
  impl_->out = out;
  impl_->wt.assign(wt, wt + in * out);
  impl_->bias.assign(bias, bias + out);
  impl_->act = act;
}

void PackedDense::Apply(const float* x, int64_t rows, float* y) const {
  const Impl& m = *impl_;
  // Column-major: y^T [out x rows] = wt^T [out x in] * x^T [in x rows].
  Sgemm(false, false, m.out, rows, m.in, m.wt.data(), m.out, x, m.in, y, m.out);
  if (m.act) {
    BiasActivation(y, rows, m.out, m.bias.data(), *m.act);
  } else {
    AddBias(y, rows, m.out, m.bias.data());
  }
}

void PackedDense::Precompile() const {}

uint64_t PackedDense::bytes() const {
  return (impl_->wt.size() + impl_->bias.size()) * sizeof(float);
}
const char* PackedDense::kernel() const { return "blas"; }

#endif

PackedDense::~PackedDense() = default;
PackedDense::PackedDense(PackedDense&&) noexcept = default;
PackedDense& PackedDense::operator=(PackedDense&&) noexcept = default;
int64_t PackedDense::in() const { return impl_->in; }
int64_t PackedDense::out() const { return impl_->out; }

}  // namespace ember::engine
