// Seed inputs for the fuzz targets: valid messages and texts, so the fuzzer
// starts from the structure it has to break instead of discovering msgpack
// from nothing. scripts/fuzz.sh writes them to disk with ember_fuzz_seeds;
// the replay driver (fuzz_driver.cpp) mutates them directly.
#ifndef EMBER_FUZZ_SEEDS_H_
#define EMBER_FUZZ_SEEDS_H_

#include <string>
#include <vector>

namespace ember::fuzz {

// Inputs for protocol_fuzzer (see the input layout in protocol_fuzzer.cpp).
std::vector<std::string> ProtocolSeeds();

// Inputs for tokenizer_fuzzer (see the input layout in tokenizer_fuzzer.cpp).
std::vector<std::string> TokenizerSeeds();

// Inputs for gateway_fuzzer (see the input layout in gateway_fuzzer.cpp).
std::vector<std::string> GatewaySeeds();

}  // namespace ember::fuzz

#endif  // EMBER_FUZZ_SEEDS_H_
