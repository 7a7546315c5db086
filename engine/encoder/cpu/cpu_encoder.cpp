#include "engine/encoder/cpu/cpu_encoder.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "engine/encoder/cpu/cpu_kernels.h"
#include "engine/encoder/cpu/sgemm.h"
#include "engine/encoder/positions.h"

namespace ember::engine {

// One head's causal or windowed attention over a sequence of n tokens: each block of queries
// scores only the keys it may see, [r - before, r + after] for query r, so a decoder's causal
// attention computes about half the scores and a 128-token window a fixed number per query
// (the full path computes all n x n and masks). q, k, v: the head's rows (stride ld); bias_head:
// the relative bias table's row for distance 0 of this head, or null; scratch: kQueryBlock x n
// floats.
constexpr int64_t kQueryBlock = 128;
void BandedHeadAttention(const float* q, const float* k, const float* v, int64_t ld, int64_t n,
                         int64_t hd, const float* bias_head, int64_t before, int64_t after,
                         float* ctx, int64_t ld_ctx, float* scratch) {
  constexpr float kMasked = -std::numeric_limits<float>::infinity();
  for (int64_t r0 = 0; r0 < n; r0 += kQueryBlock) {
    const int64_t r1 = std::min(n, r0 + kQueryBlock), rows = r1 - r0;
    const int64_t k0 = std::max<int64_t>(0, r0 - before);
    const int64_t keys = std::min(n, r1 + after) - k0;
    // Row-major S [rows x keys] = Q[r0, r1) K[k0, k0 + keys)^T, as in CpuAttention.
    Sgemm(true, false, keys, rows, hd, k + k0 * ld, ld, q + r0 * ld, ld, scratch, keys);
    for (int64_t r = r0; r < r1; ++r) {
      float* row = scratch + (r - r0) * keys;
      if (bias_head != nullptr) {
        const float* add = bias_head - r + k0;
        for (int64_t c = 0; c < keys; ++c) row[c] += add[c];
      }
      // Keys outside [r - before, r + after] weigh exactly 0 after the softmax.
      std::fill(row, row + std::clamp<int64_t>(r - before - k0, 0, keys), kMasked);
      std::fill(row + std::clamp<int64_t>(r + after + 1 - k0, 0, keys), row + keys, kMasked);
    }
    at::Tensor scores = at::from_blob(scratch, {rows, keys}, at::kFloat);
    at::_softmax_out(scores, scores, -1, false);  // row-wise, safe in place
    Sgemm(false, false, hd, rows, keys, v + k0 * ld, ld, scratch, keys, ctx + r0 * ld_ctx, ld_ctx);
  }
}

// Work is split into items of (sequence, group of heads) sized so one item's score block stays
// in the core's L2 cache between its QK^T, softmax and PV (instead of one pass per op over all
// B x nh x L x L scores in memory). Only a sequence's own keys and queries are used, which is
// what an additive -inf key mask over padding yields (exp underflows to exactly 0).
void CpuAttention(const float* qkv, std::span<const int64_t> starts, std::span<const int64_t> lens,
                  AttentionHeads shape, float* ctx, RelativeBias bias, AttentionMask mask) {
  const auto b = static_cast<int64_t>(lens.size());
  const int64_t nh = shape.heads, hd = shape.head_dim, h = shape.q_width();
  const int64_t ld_qkv = shape.row_width(), per_kv = nh / shape.kv_heads;
  const int64_t window = mask.window;
  // Score floats per item: 256 KiB, a quarter of this CPU's 1 MiB per-core L2.
  constexpr int64_t kScoreBudget = 64 * 1024;
  const int64_t longest = *std::max_element(lens.begin(), lens.end());
  const int64_t group = std::clamp<int64_t>(kScoreBudget / (longest * longest), 1, nh);
  const int64_t groups = (nh + group - 1) / group;
  at::parallel_for(0, b * groups, 1, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t bi = item / groups, h0 = (item % groups) * group;
      const int64_t heads = std::min(group, nh - h0), n = lens[static_cast<size_t>(bi)];
      const float* base = qkv + starts[static_cast<size_t>(bi)] * ld_qkv;
      // Keys further than `window` from the query, or after it, weigh exactly 0 after the
      // softmax: query r sees keys [r - before, r + after].
      const bool masked = (window > 0 && window < n - 1) || mask.causal;
      const int64_t before = window > 0 ? window : n, after = mask.causal ? 0 : before;
      // The relative bias table's row of `head` at distance 0, or null.
      const auto bias_row = [&](int64_t head) -> const float* {
        return bias.table == nullptr ? nullptr
                                     : bias.table + head * (2 * bias.span - 1) + bias.span - 1;
      };
      if (masked && n > 2 * kQueryBlock) {
        const at::Tensor scratch = at::empty({kQueryBlock * n}, at::kFloat);
        for (int64_t head = h0; head < h0 + heads; ++head) {
          BandedHeadAttention(base + head * hd, base + h + head / per_kv * hd,
                              base + h + shape.kv_width() + head / per_kv * hd, ld_qkv, n, hd,
                              bias_row(head), before, after,
                              ctx + starts[static_cast<size_t>(bi)] * h + head * hd, h,
                              scratch.data_ptr<float>());
        }
        continue;
      }
      at::Tensor scores = at::empty({heads, n, n}, at::kFloat);
      float* s = scores.data_ptr<float>();
      for (int64_t i = 0; i < heads; ++i) {
        const float* q = base + (h0 + i) * hd;
        const float* k = base + h + (h0 + i) / per_kv * hd;
        // Column-major S^T [keys x queries] = K * Q^T, i.e. row-major S [queries x keys].
        Sgemm(true, false, n, n, hd, k, ld_qkv, q, ld_qkv, s + i * n * n, n);
        if (const float* head = bias_row(h0 + i)) {
          // Query row r adds the table's distances -r .. n - 1 - r, contiguous.
          for (int64_t r = 0; r < n; ++r) {
            float* row = s + i * n * n + r * n;
            const float* add = head - r;
            for (int64_t c = 0; c < n; ++c) row[c] += add[c];
          }
        }
        if (masked) {  // short sequences only: longer ones took BandedHeadAttention
          constexpr float kMasked = -std::numeric_limits<float>::infinity();
          for (int64_t r = 0; r < n; ++r) {
            float* row = s + i * n * n + r * n;
            std::fill(row, row + std::max<int64_t>(0, r - before), kMasked);
            std::fill(row + std::min(n, r + after + 1), row + n, kMasked);
          }
        }
      }
      at::_softmax_out(scores, scores, -1, false);  // row-wise, safe in place
      for (int64_t i = 0; i < heads; ++i) {
        const float* v = base + h + shape.kv_width() + (h0 + i) / per_kv * hd;
        // Column-major C^T [hd x queries] = V^T * P^T, i.e. row-major context rows.
        Sgemm(false, false, hd, n, n, v, ld_qkv, s + i * n * n, n,
              ctx + starts[static_cast<size_t>(bi)] * h + (h0 + i) * hd, h);
      }
    }
  });
}

namespace {

// f(first_row, end_row) over row blocks of at least ~16K floats each, in parallel unless the
// caller is already inside a parallel region (at::parallel_for then runs inline).
template <class F>
void ForRows(int64_t rows, int64_t cols, F&& f) {
  at::parallel_for(0, rows, std::max<int64_t>(1, 16384 / cols), std::forward<F>(f));
}

// The whole encoder for sequences [first, first + count) of the batch, packed back to back as
// they lie in it; their pooled (and normalised) rows go to out [count x H], or, with no
// pooling, their tokens' last hidden states to out [their tokens x H].
void EncodeChunk(const CpuEncoderWeights& w, const TokenBatch& batch, size_t first, size_t count,
                 std::optional<Pooling> pooling, bool normalize, float* out) {
  const int64_t h = w.hidden, ffn = w.intermediate, hd = w.heads.head_dim;
  const int64_t qw = w.heads.q_width(), ld = w.heads.row_width();
  const int32_t base = batch.offsets()[first];
  std::vector<int64_t> starts(count), lens(count);
  for (size_t i = 0; i < count; ++i) {
    starts[i] = batch.offsets()[first + i] - base;
    lens[i] = static_cast<int64_t>(batch.length(first + i));
  }
  const int64_t rows = batch.offsets()[first + count] - base;
  // x: the hidden states; qkv: the fused QKV output, then (its first rows * h floats) the
  // output of the attention-output and FFN-output GEMMs; ctx: attention context; inner: the
  // FFN's intermediate activations (gated: its 2I, then the I after the gate); normed: a
  // pre-norm layer's norm of x.
  const int64_t inner_cols = w.gated_ffn ? 3 * ffn : ffn;
  const int64_t normed_cols = w.pre_norm ? h : 0;
  const int64_t qkv_cols = std::max(ld, h);
  const at::Tensor buffer =
      at::empty({rows * (h + qkv_cols + qw + inner_cols + normed_cols)}, at::kFloat);
  float* const x = buffer.data_ptr<float>();
  float* const qkv = x + rows * h;
  float* const ctx = qkv + rows * qkv_cols;
  float* const inner = ctx + rows * qw;
  float* const gated = inner + rows * 2 * ffn;  // gated_ffn only
  float* const normed = inner + rows * inner_cols;
  float* const tmp = qkv;

  at::parallel_for(0, static_cast<int64_t>(count), 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const auto seq = batch.sequence(first + static_cast<size_t>(i));
      float* row = x + starts[static_cast<size_t>(i)] * h;
      for (size_t t = 0; t < seq.size(); ++t) {
        const int64_t id = seq[t];
        if (w.word_emb_bf16 != nullptr) {
          FromBf16(w.word_emb_bf16 + id * h, h, row + static_cast<int64_t>(t) * h);
        } else {
          std::copy_n(w.word_emb + id * h, h, row + static_cast<int64_t>(t) * h);
        }
      }
      if (w.emb_ln_w == nullptr) continue;  // a decoder's: the token embeddings as they are
      // + position (rows 0..len-1 of the table, contiguous) + token type (0; a pair's
      // second segment 1), then LayerNorm.
      const auto len = lens[static_cast<size_t>(i)];
      // One token type (no type_emb1): a pair's second segment is type 0 too.
      const auto second =
          w.type_emb1 == nullptr
              ? int64_t{0}
              : static_cast<int64_t>(batch.second_start(first + static_cast<size_t>(i)));
      if (HasPaddingToken(seq, w.pad_id)) {
        // A typed padding token (RoBERTa): each token's own position row, one row at a time.
        std::vector<int64_t> positions(seq.size());
        PositionRows(seq, 0, w.pad_id, positions.data());
        for (int64_t t = 0; t < len; ++t) {
          AddLayerNorm(row + t * h, w.pos_emb + positions[static_cast<size_t>(t)] * h,
                       second != 0 && t >= second ? w.type_emb1 : w.type_emb0, w.emb_ln_w,
                       w.emb_ln_b, 1, h, w.eps);
        }
        continue;
      }
      const int64_t ones = second == 0 ? 0 : len - second;
      AddLayerNorm(row, w.pos_emb, w.type_emb0, w.emb_ln_w, w.emb_ln_b, len - ones, h, w.eps);
      if (ones > 0) {
        AddLayerNorm(row + second * h, w.pos_emb ? w.pos_emb + second * h : nullptr, w.type_emb1,
                     w.emb_ln_w, w.emb_ln_b, ones, h, w.eps);
      }
    }
  });

  // y = norm(y) in place, rows [r0, r1) (pre-norm: LayerNorm or RMSNorm).
  const auto norm_rows = [&](float* y, int64_t r0, int64_t r1, const float* gamma,
                             const float* beta) {
    if (w.rms_norm) {
      RmsNorm(y + r0 * h, gamma, r1 - r0, h, w.eps);
    } else {
      AddLayerNorm(y + r0 * h, nullptr, nullptr, gamma, beta, r1 - r0, h, w.eps);
    }
  };
  // normed = norm(x) (pre-norm).
  const auto norm_into = [&](const float* gamma, const float* beta) {
    ForRows(rows, h, [&](int64_t r0, int64_t r1) {
      std::copy(x + r0 * h, x + r1 * h, normed + r0 * h);
      norm_rows(normed, r0, r1, gamma, beta);
    });
  };
  // x += tmp (pre-norm's residual).
  const auto add_residual = [&] {
    ForRows(rows, h,
            [&](int64_t r0, int64_t r1) { AddRows(x + r0 * h, tmp + r0 * h, (r1 - r0) * h); });
  };
  for (const CpuEncoderWeights::Layer& l : w.layers) {
    const float* attn_in = x;
    if (w.pre_norm && l.ln1_w != nullptr) {
      norm_into(l.ln1_w, l.ln1_b);
      attn_in = normed;
    }
    l.qkv.Apply(attn_in, rows, qkv);
    if (l.q_norm != nullptr) {
      // Each query head, then each key head, normed over its head_dim floats.
      ForRows(rows, ld, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          RmsNorm(qkv + r * ld, l.q_norm, w.heads.heads, hd, w.eps);
          RmsNorm(qkv + r * ld + qw, l.k_norm, w.heads.kv_heads, hd, w.eps);
        }
      });
    }
    if (l.rope_cos != nullptr) {
      // Queries and keys: the first heads + kv_heads heads of each row, at positions 0.. per
      // sequence.
      at::parallel_for(0, static_cast<int64_t>(count), 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          RotateHalf(qkv + starts[static_cast<size_t>(i)] * ld, ld, lens[static_cast<size_t>(i)],
                     w.heads.heads + w.heads.kv_heads, hd, l.rope_cos, l.rope_sin);
        }
      });
    }
    CpuAttention(qkv, starts, lens, w.heads, ctx, w.relative_bias,
                 {.window = l.window, .causal = w.causal});
    l.attn_out.Apply(ctx, rows, tmp);
    const float* ffn_in = x;
    if (w.pre_norm) {
      add_residual();
      norm_into(l.ln2_w, l.ln2_b);
      ffn_in = normed;
    } else {
      ForRows(rows, h, [&](int64_t r0, int64_t r1) {
        AddLayerNorm(x + r0 * h, tmp + r0 * h, nullptr, l.ln1_w, l.ln1_b, r1 - r0, h, w.eps);
      });
    }
    l.inter.Apply(ffn_in, rows, inner);
    if (w.gated_ffn) {
      ForRows(rows, 2 * ffn, [&](int64_t r0, int64_t r1) {
        GatedActivation(inner + r0 * 2 * ffn, r1 - r0, ffn, w.act, gated + r0 * ffn);
      });
    }
    l.out.Apply(w.gated_ffn ? gated : inner, rows, tmp);
    if (w.pre_norm) {
      add_residual();
    } else {
      ForRows(rows, h, [&](int64_t r0, int64_t r1) {
        AddLayerNorm(x + r0 * h, tmp + r0 * h, nullptr, l.ln2_w, l.ln2_b, r1 - r0, h, w.eps);
      });
    }
  }
  if (w.final_ln_w != nullptr) {
    ForRows(rows, h,
            [&](int64_t r0, int64_t r1) { norm_rows(x, r0, r1, w.final_ln_w, w.final_ln_b); });
  }

  if (pooling) {
    PoolRows(x, h, starts, lens, *pooling, normalize, out);
  } else {
    std::copy_n(x, rows * h, out);
  }
}

// Tokens per EncodeChunk: a batch's sequences run in chunks of at most this many rows (a longer
// sequence alone), so that the activations (x, qkv, ctx and the FFN's: 13.5 KiB per row for
// MiniLM, 7 MiB per chunk) stay in cache from one op to the next instead of streaming through
// memory at every op of a large batch. The weights are read again per chunk, which at 512 rows is
// one byte per 256 FLOPs.
constexpr int64_t kChunkRows = 512;

// EncodeChunk over the batch, a chunk at a time (kChunkRows).
void EncodeChunks(const CpuEncoderWeights& w, const TokenBatch& batch,
                  std::optional<Pooling> pooling, bool normalize, float* out) {
  // Where sequence i's output starts: its pooled row, or its first token's.
  const auto out_of = [&](size_t i) {
    return out + (pooling ? static_cast<int64_t>(i) : batch.offsets()[i]) * w.hidden;
  };
  size_t first = 0;
  int64_t rows = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    const auto len = static_cast<int64_t>(batch.length(i));
    if (i > first && rows + len > kChunkRows) {
      EncodeChunk(w, batch, first, i - first, pooling, normalize, out_of(first));
      first = i;
      rows = 0;
    }
    rows += len;
  }
  if (first < batch.size()) {
    EncodeChunk(w, batch, first, batch.size() - first, pooling, normalize, out_of(first));
  }
}

}  // namespace

void CpuEncode(const CpuEncoderWeights& w, const TokenBatch& batch, Pooling pooling, bool normalize,
               float* out) {
  EncodeChunks(w, batch, pooling, normalize, out);
}

void CpuEncodeTokens(const CpuEncoderWeights& w, const TokenBatch& batch, float* out) {
  EncodeChunks(w, batch, std::nullopt, false, out);
}

}  // namespace ember::engine
