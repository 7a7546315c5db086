#include <string>
#include <vector>

#include "fuzz/seeds.h"

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
  };
  std::vector<std::string> seeds;
  // Flags 0x29 = lowercase + chinese + truncate; 0x00 = cased, no truncation; 0x69 and 0x40:
  // the same for pairs (the texts split at a NUL: "nul\0byte" is one).
  for (const char flags : {'\x29', '\x00', '\x3f', '\x0f', '\x69', '\x40'}) {
    for (const char length : {'\x00', '\x02', '\x03'}) {
      for (const auto& t : texts) seeds.push_back(std::string{flags, length} + t);
    }
  }
  return seeds;
}

}  // namespace ember::fuzz
