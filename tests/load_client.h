// Drives a cluster with concurrent pipelined clients and checks every reply
// against reference vectors: the shared core of the cluster and fault tests.
#ifndef EMBER_TESTS_LOAD_CLIENT_H_
#define EMBER_TESTS_LOAD_CLIENT_H_

#include <atomic>
#include <chrono>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "common/error_code.h"

namespace ember {
class Client;
}  // namespace ember

namespace ember::testing {

// Texts and the vectors the model gives for each alone (from the generator).
struct Reference {
  std::vector<std::string> texts;
  std::vector<std::vector<float>> vectors;
};
Reference LoadTinyReference();

// Whether a and b hold the same floats, bit for bit.
bool SameBits(std::span<const float> a, std::span<const float> b);

// Requests all workers have completed, as the router's status counts them.
std::uint64_t Completed(Client& client);

// Largest |a[i] - b[i]|; infinity when the lengths differ.
float MaxAbsDiff(std::span<const float> a, const std::vector<float>& b);

struct LoadOptions {
  std::string model = "tiny";
  int clients = 8;
  int requests_per_client = 125;
  int window = 4;             // requests in flight per client
  int texts_per_request = 0;  // 0: 1, 2, 3 texts in turn
  std::uint32_t timeout_ms = 60'000;
  std::chrono::seconds limit{120};  // hard bound on the whole run
  // When set, clients stop sending once it is true (requests_per_client
  // still bounds them), for load that lasts as long as something else does.
  const std::atomic<bool>* until = nullptr;
  bool record = false;  // keep a Served entry per reply
};

// One reply as a client saw it, for checking which version served when.
struct Served {
  std::chrono::steady_clock::time_point sent, received;
  std::uint32_t version = 0;
};

struct LoadResult {
  int sent = 0;
  int replies = 0;     // REPLY with the right number of vectors
  int wrong = 0;       // vectors that differ from the reference, or foreign ids
  int duplicates = 0;  // second answers to one request
  int missing = 0;     // requests never answered within the limit
  std::map<ErrorCode, int> errors;
  std::map<std::string, int> served_by;  // worker id -> replies
  std::uint32_t largest_batch = 0;       // texts in the largest batch a reply came from
  std::vector<Served> served;            // with LoadOptions::record
  int error_count() const;
};

// Runs `options.clients` threads, each with its own DEALER socket keeping
// `window` requests of 1-3 (or texts_per_request) reference texts in flight. `answered` (if given)
// counts answers as they arrive, so a test can act mid-run.
LoadResult RunLoad(const std::string& frontend, const Reference& reference,
                   const LoadOptions& options, std::atomic<int>* answered = nullptr);

}  // namespace ember::testing

#endif  // EMBER_TESTS_LOAD_CLIENT_H_
