// Four small tokenizer.json files, one per kind of pipeline ember serves, for tokenizer_fuzzer:
// BERT (BertNormalizer, WordPiece), GPT-2 / Qwen (byte-level BPE after a regex Split),
// XLM-R (Metaspace, Unigram) and Llama / Mistral (SentencePiece BPE with byte fallback). Their
// vocabularies are tiny, so that unknown pieces, byte fallback and truncation all happen.
#ifndef EMBER_FUZZ_TOKENIZER_PIPELINES_H_
#define EMBER_FUZZ_TOKENIZER_PIPELINES_H_

#include <array>
#include <string>

namespace ember::fuzz {

enum class Pipeline { kBert, kByteLevel, kUnigram, kSentencePieceBpe };
inline constexpr std::array<Pipeline, 4> kPipelines = {
    Pipeline::kBert, Pipeline::kByteLevel, Pipeline::kUnigram, Pipeline::kSentencePieceBpe};

// The pipeline's tokenizer.json text.
std::string PipelineJson(Pipeline pipeline);

}  // namespace ember::fuzz

#endif  // EMBER_FUZZ_TOKENIZER_PIPELINES_H_
