#include <string>
#include <vector>

#include "fuzz/seeds.h"
#include "fuzz/tokenizer_pipelines.h"

namespace ember::fuzz {

std::vector<std::string> TokenizerSeeds() {
  const std::vector<std::string> texts = {
      "hello world",
      "Hello, World! embedding unaffable",
      "你好，世界",
      "Café naïve STRASSE straße ǆ ﬁ İ",
      "[CLS] [MASK] [SEP] [UNK]",
      "tabs\tand\nnewlines\r\u2028\u00a0nbsp",
      std::string("nul\0byte", 8),
      "\xef\xbf\xbd replacement \xe2\x80\x8b zero width",
      "a\xcc\x81\xcc\xa3 combining marks",
      std::string(150, 'x') + " very long word",
      "\xf0\x9f\x98\x80 emoji \xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x92\xbb",
      "bad \xff\xfe utf-8",
      "\xc0\xaf overlong \xed\xa0\x80 surrogate \xf4\x90\x80\x80 too big",
      "truncated \xe4\xbd",
      "<|endoftext|> <s> </s> <unk> \xe2\x96\x81hello \xe2\x96\x81\xe2\x96\x81 spaces",
      "the world's 123 \xc3\xbf\xc3\xbe byte-level",
  };
  std::vector<std::string> seeds;
  // Byte 0: the pipeline (bits 0-1), offsets 4, skip specials 8, truncate 32, pair 64; byte 1:
  // max_length none, 2, 3, 16 (0..3). A pair's texts split at a NUL: "nul\0byte" is one.
  for (const char pipeline : {0, 1, 2, 3}) {
    for (const char flags : {'\x00', '\x24', '\x2c', '\x60', '\x44'}) {
      for (const char length : {'\x00', '\x02', '\x03'}) {
        for (const auto& t : texts)
          seeds.push_back(std::string{char(flags | pipeline), length} + t);
      }
    }
    // The loader: the pipeline's own file, for the mutations to break.
    seeds.push_back(std::string{'\x80', '\x00'} + PipelineJson(kPipelines[pipeline]));
  }
  return seeds;
}

}  // namespace ember::fuzz
