// ZeroMQ CURVE for ember (docs/security.md): key pairs, key files, and the
// socket options that make a socket a CURVE server or client.
//
// CURVE encrypts every connection and, with the router's ZAP handler
// (router/zap_handler.h), admits only peers whose public keys are on an
// allow-list. It is off unless a key is configured: the localhost demo and
// the tests run without it.
//
// Key file format (TOML, written by `emberctl keys generate --out PREFIX`):
//
//   # PREFIX.key: keep secret (mode 0600)     # PREFIX.pub: give to the router
//   public-key = "<40 Z85 characters>"        public-key = "<40 Z85 characters>"
//   secret-key = "<40 Z85 characters>"
//
// Keys are Z85 text (ZeroMQ RFC 32), as zmq_curve_keypair makes them.
#ifndef EMBER_COMMON_CURVE_H_
#define EMBER_COMMON_CURVE_H_

#include <filesystem>
#include <set>
#include <string>

namespace zmq {
class socket_t;  // <zmq.hpp>, kept out of the client SDK's header
}  // namespace zmq

namespace ember::curve {

inline constexpr std::size_t kZ85KeyLength = 40;

struct KeyPair {
  std::string public_key;  // Z85
  std::string secret_key;  // Z85; empty when only the public half is known
};

// Whether this libzmq was built with CURVE (Debian's is, via libsodium).
bool Available();

// A fresh key pair. Throws std::runtime_error if CURVE is unavailable.
KeyPair Generate();

// Writes PREFIX.key (both keys, mode 0600) and PREFIX.pub (public key only).
// Throws std::runtime_error if a file exists already or cannot be written.
void WriteKeyFiles(const KeyPair& keys, const std::filesystem::path& prefix);

// Reads a key file. `need_secret`: a missing secret-key is an error.
// Throws std::runtime_error naming the file and the problem.
KeyPair LoadKeyFile(const std::filesystem::path& path, bool need_secret);

// Public keys of an allow-list: `path` is one key file, or a directory whose
// *.pub and *.key files are read (other files are ignored). Empty path:
// an empty list. Throws std::runtime_error on an unreadable or bad file.
std::set<std::string> LoadPublicKeys(const std::filesystem::path& path);

// What a CURVE client (a worker, the SDK) needs: its own key pair and the
// server's public key. Empty keys: CURVE off, plain connection.
struct ClientKeys {
  KeyPair own;
  std::string server_public_key;
  bool enabled() const { return !server_public_key.empty(); }

  // Loads both from key files (own: PREFIX.key; server: the router's .pub or
  // .key). Either path empty: CURVE off; one without the other is an error.
  static ClientKeys Load(const std::filesystem::path& own_key_file,
                         const std::filesystem::path& server_key_file);
  // Load() of the files named by $EMBER_CURVE_KEY and $EMBER_CURVE_SERVER_KEY
  // (unset: CURVE off): how emberctl's flags and tools built on the SDK
  // reach a router with CURVE on without a flag of their own.
  static ClientKeys FromEnvironment();
};

// Makes `socket` a CURVE server with `keys` before it binds; the router's ZAP
// handler sees `zap_domain` and decides who may connect.
void MakeServer(zmq::socket_t& socket, const KeyPair& keys, const std::string& zap_domain);

// Makes `socket` a CURVE client before it connects, if `keys` are enabled.
void MakeClient(zmq::socket_t& socket, const ClientKeys& keys);

}  // namespace ember::curve

#endif  // EMBER_COMMON_CURVE_H_
