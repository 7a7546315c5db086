// A flash-style fused attention kernel for the CPU encoder's packed layout, kept in bench/ as
// the candidate measured against the encoder's CpuAttention (per-head GEMMs with the score
// block kept in L2) by ember-attention-bench (docs/performance.md "Fused attention"). It never
// writes a score matrix: per (sequence, head) and block of queries it walks the keys in
// blocks, keeping a running max, sum and context (online softmax). Adopted into
// engine/encoder/cpu only if it measures faster.
#ifndef EMBER_BENCH_ATTENTION_FLASH_ATTENTION_H_
#define EMBER_BENCH_ATTENTION_FLASH_ATTENTION_H_

#include <cstdint>
#include <span>

namespace ember::bench {

// Same contract as engine::CpuAttention: qkv [rows x 3H] (queries pre-scaled), sequences at
// `starts` of `lens` rows, nh heads of hd (<= 128) dims; ctx [rows x H].
void FlashAttention(const float* qkv, std::span<const int64_t> starts,
                    std::span<const int64_t> lens, int64_t nh, int64_t hd, float* ctx);

}  // namespace ember::bench

#endif  // EMBER_BENCH_ATTENTION_FLASH_ATTENTION_H_
