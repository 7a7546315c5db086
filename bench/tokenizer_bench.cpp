// ember-tokenizer-bench: a tokenizer's Encode on one thread, one text at a time, over a file of
// texts (one per line), as the worker's tokenizer threads run it; bench/tokenizer.sh runs it
// beside HF tokenizers on the same texts.
//
//   ember-tokenizer-bench --model DIR --texts FILE [--loops 5] [--max-length 256]
//
// The tokenizer is HfTokenizer: the folder's tokenizer.json, or its vocab.txt.
//
// Prints one JSON object: the median and range over the loops of microseconds per text, and
// the tokens made (equal between loops, a check that each loop did the same work).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "engine/tokenizer/hf_tokenizer.h"

int main(int argc, char** argv) {
  std::string model, texts_file;
  int loops = 5;
  std::size_t max_length = 256;
  CLI::App app{"ember-tokenizer-bench: a tokenizer's time per text"};
  app.add_option("--model", model, "model folder (vocab.txt or tokenizer.json)")->required();
  app.add_option("--texts", texts_file, "texts, one per line")->required();
  app.add_option("--loops", loops, "passes over the texts")->check(CLI::Range(1, 1000));
  app.add_option("--max-length", max_length, "tokens per text at most (truncating)");
  CLI11_PARSE(app, argc, argv);

  const auto tokenizer = ember::engine::HfTokenizer::FromDirectory(model);
  const auto encode = [&](const std::string& text) {
    return tokenizer->Encode(text, {.max_length = max_length}).ids.size();
  };
  std::vector<std::string> texts;
  std::ifstream in(texts_file);
  for (std::string line; std::getline(in, line);) texts.push_back(line);
  if (texts.empty()) {
    std::cerr << "ember-tokenizer-bench: no texts in " << texts_file << "\n";
    return 1;
  }
  std::vector<double> us;
  std::size_t tokens = 0;
  for (int loop = 0; loop < loops; ++loop) {
    std::size_t made = 0;
    const auto start = std::chrono::steady_clock::now();
    for (const std::string& text : texts) made += encode(text);
    const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
    us.push_back(took.count() / static_cast<double>(texts.size()));
    if (loop > 0 && made != tokens) {
      std::cerr << "ember-tokenizer-bench: loop " << loop << " made " << made
                << " tokens, the first " << tokens << "\n";
      return 1;
    }
    tokens = made;
  }
  std::sort(us.begin(), us.end());
  std::cout << "{\"texts\": " << texts.size() << ", \"tokens\": " << tokens
            << ", \"us_per_text\": {\"median\": " << us[us.size() / 2]
            << ", \"min\": " << us.front() << ", \"max\": " << us.back() << "}}\n";
  return 0;
}
