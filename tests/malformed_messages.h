// A seeded source of broken ember messages for robustness tests: wrong frame
// counts, bad headers, versions, commands and id lengths, truncated and
// mutated msgpack, wrong field types, over-deep nesting, invalid UTF-8,
// empty and oversized inputs. Each message carries its own request id, so a
// test can tell which answers belong to which message.
#ifndef EMBER_TESTS_MALFORMED_MESSAGES_H_
#define EMBER_TESTS_MALFORMED_MESSAGES_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>
#include <zmq.hpp>

namespace ember::testing {

class MalformedMessages {
 public:
  // `model` is a model the cluster serves: some messages are valid requests
  // for it except for one defect (bad UTF-8, a text too long, ...).
  MalformedMessages(std::uint64_t seed, std::string model);

  // Frames a client could send to the router. Most are malformed at the
  // frame level or in the body; some are well-formed requests the router
  // must refuse (limits, unknown model, empty input) or pass on for a worker
  // to refuse (invalid UTF-8). Any may, rarely, mutate into a valid request.
  std::vector<std::string> ClientMessage(std::uint64_t request_id);

  // A REQUEST body (or not quite one), as ClientMessage uses.
  std::string RequestBody();

  // Bytes that are not what they claim: random, a truncated or mutated
  // msgpack map, a map with wrong types, or msgpack nested too deep.
  std::string BrokenBody(const std::string& valid);

  // Frames with a frame-level defect (count, header, version, command byte,
  // request id length), built around `body`.
  std::vector<std::string> BrokenFrames(std::uint64_t request_id, const std::string& body);

 private:
  std::size_t Pick(std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_);
  }
  std::string RandomBytes(std::size_t max_length);
  std::string Mutate(std::string s);

  std::mt19937_64 rng_;
  std::string model_;
};

// Converts frames for zmq::send_multipart.
std::vector<zmq::message_t> ToMessages(const std::vector<std::string>& frames);

}  // namespace ember::testing

#endif  // EMBER_TESTS_MALFORMED_MESSAGES_H_
