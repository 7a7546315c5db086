// ember_fuzz_seeds KIND DIR: writes the seed inputs of fuzz target KIND
// (protocol, tokenizer or gateway) into DIR, one file each, for libFuzzer's corpus.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "fuzz/seeds.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s protocol|tokenizer|gateway DIR\n", argv[0]);
    return 2;
  }
  const std::string kind = argv[1];
  if (kind != "protocol" && kind != "tokenizer" && kind != "gateway") {
    std::fprintf(stderr, "unknown kind '%s'\n", argv[1]);
    return 2;
  }
  const auto seeds = kind == "protocol"    ? ember::fuzz::ProtocolSeeds()
                     : kind == "tokenizer" ? ember::fuzz::TokenizerSeeds()
                                           : ember::fuzz::GatewaySeeds();
  const std::filesystem::path dir = argv[2];
  std::filesystem::create_directories(dir);
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    std::ofstream(dir / ("seed-" + std::to_string(i)), std::ios::binary) << seeds[i];
  }
  std::printf("%zu seeds written to %s\n", seeds.size(), argv[2]);
  return 0;
}
