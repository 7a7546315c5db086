// A Backend for BERT-family text encoders in HuggingFace / sentence-transformers
// folders: the WordPiece tokenizer (vocab.txt or tokenizer.json) feeding the
// LibTorch BertModel. Free of LibTorch includes.
#ifndef EMBER_WORKER_BERT_BACKEND_H_
#define EMBER_WORKER_BERT_BACKEND_H_

#include <filesystem>
#include <memory>

#include "worker/backend.h"
#include "worker/bert_model.h"

namespace ember::worker {

// Loads `dir` (config.json, model.safetensors, vocab.txt or tokenizer.json,
// optional sentence-transformers files). `max_length` > 0 caps tokens per
// text below the model's own limit. Throws std::runtime_error naming what is
// missing or wrong.
std::unique_ptr<Backend> LoadBertBackend(const std::filesystem::path& dir,
                                         const BertOptions& options, std::size_t max_length = 0);

}  // namespace ember::worker

#endif  // EMBER_WORKER_BERT_BACKEND_H_
