// A stand-in for libFuzzer where it is not available (GCC builds, CI): runs
// a fuzz target's LLVMFuzzerTestOneInput over given files (to replay a
// crash), its seeds, then random mutations of the seeds for a bounded time.
// No coverage guidance, so it finds less than libFuzzer (scripts/fuzz.sh),
// but every build runs the targets and their property checks.
//
//   FUZZER [--seconds S] [--runs N] [--seed K] [FILE...]
//
// If an input crashes the target, it is written to fuzz-crash.bin first.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "fuzz/seeds.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

// The input being run, for the crash handler.
const std::string* g_current = nullptr;

void OnCrash(int signal) {
  if (g_current != nullptr) {
    const int fd = ::open("fuzz-crash.bin", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ssize_t ignored = ::write(fd, g_current->data(), g_current->size());
      (void)ignored;
      ::close(fd);
    }
    const char note[] = "fuzz driver: crashing input written to fuzz-crash.bin\n";
    ssize_t ignored = ::write(2, note, sizeof note - 1);
    (void)ignored;
  }
  ::signal(signal, SIG_DFL);
  ::raise(signal);
}

void Run(const std::string& input) {
  g_current = &input;
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
  g_current = nullptr;
}

// One random edit of the kinds that break parsers: bit flips, interesting
// bytes, insertions, deletions, truncation, duplication, splicing.
std::string Mutate(std::string s, const std::vector<std::string>& pool, std::mt19937_64& rng) {
  auto pick = [&](std::size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
  };
  static constexpr std::uint8_t kInteresting[] = {
      0x00, 0x01, 0x7f, 0x80, 0xff, 0xc0, 0xc1, 0xca, 0xcb, 0xcc, 0xcd, 0xce, 0xcf, 0xd9, 0xda,
      0xdb, 0xdc, 0xdd, 0xde, 0xdf, 0x90, 0x9f, 0xa0, 0xbf, 0xc4, 0xc5, 0xc6, 0xed, 0xf4};
  const int edits = 1 + static_cast<int>(pick(4));
  for (int e = 0; e < edits; ++e) {
    switch (pick(8)) {
      case 0:
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1u << pick(8));
        break;
      case 1:
        if (!s.empty())
          s[pick(s.size())] = static_cast<char>(kInteresting[pick(std::size(kInteresting))]);
        break;
      case 2:
        s.insert(pick(s.size() + 1), 1, static_cast<char>(pick(256)));
        break;
      case 3:
        if (!s.empty()) s.erase(pick(s.size()), 1 + pick(8));
        break;
      case 4:
        s.resize(pick(s.size() + 1));
        break;
      case 5:
        if (!s.empty() && s.size() < 1 << 16) {
          const std::size_t from = pick(s.size());
          const std::size_t len = 1 + pick(s.size() - from);
          s.insert(pick(s.size() + 1), s.substr(from, len));
        }
        break;
      case 6: {
        const std::string& other = pool[pick(pool.size())];
        if (!other.empty()) s = s.substr(0, pick(s.size() + 1)) + other.substr(pick(other.size()));
        break;
      }
      default:
        // A run of 0xff or 0x00: huge lengths, empty containers.
        s.insert(pick(s.size() + 1), 1 + pick(8), pick(2) ? '\xff' : '\0');
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 5;
  long long runs = -1;
  std::uint64_t seed = 1;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--seconds" && i + 1 < argc) {
      seconds = std::stod(argv[++i]);
    } else if (arg == "--runs" && i + 1 < argc) {
      runs = std::stoll(argv[++i]);
    } else if (arg == "--seed" && i + 1 < argc) {
      seed = std::stoull(argv[++i]);
    } else {
      files.push_back(arg);
    }
  }
  for (int s : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) ::signal(s, OnCrash);

  long long executed = 0;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    Run(std::string(std::istreambuf_iterator<char>(in), {}));
    ++executed;
  }
  if (!files.empty()) {
    std::printf("replayed %lld file(s): no crash\n", executed);
    return 0;
  }
  std::vector<std::string> pool = EMBER_FUZZ_SEEDS();
  for (const auto& s : pool) Run(s), ++executed;

  std::mt19937_64 rng(seed);
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while ((runs < 0 || executed < runs) && std::chrono::steady_clock::now() < end) {
    for (int i = 0; i < 64; ++i, ++executed) {
      std::string input = Mutate(pool[rng() % pool.size()], pool, rng);
      Run(input);
      // Keep some mutants as parents, so edits compound (bounded pool).
      if (rng() % 16 == 0) {
        if (pool.size() < 4096) {
          pool.push_back(std::move(input));
        } else {
          pool[rng() % pool.size()] = std::move(input);
        }
      }
    }
  }
  std::printf("%lld inputs, seed %llu: no crash, no property violated\n", executed,
              static_cast<unsigned long long>(seed));
  return 0;
}
