#include "common/curve.h"

#include <sys/stat.h>
#include <toml++/toml.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <zmq.hpp>

namespace ember::curve {
namespace {

[[noreturn]] void Fail(const std::filesystem::path& path, const std::string& why) {
  throw std::runtime_error(path.string() + ": " + why);
}

bool ValidZ85Key(const std::string& key) {
  if (key.size() != kZ85KeyLength) return false;
  std::uint8_t decoded[32];
  return zmq_z85_decode(decoded, key.c_str()) != nullptr;
}

void WriteNew(const std::filesystem::path& path, const std::string& text, mode_t mode) {
  if (std::filesystem::exists(path)) Fail(path, "exists already; not overwriting a key");
  {
    std::ofstream out(path);
    if (!out) Fail(path, "cannot create");
  }
  // Restrict before writing the secret, so it is never readable by others.
  if (::chmod(path.c_str(), mode) != 0) Fail(path, "cannot set its permissions");
  std::ofstream out(path, std::ios::trunc);
  out << text;
  if (!out.flush()) Fail(path, "cannot write");
}

}  // namespace

bool Available() { return zmq_has("curve") != 0; }

KeyPair Generate() {
  char public_key[kZ85KeyLength + 1];
  char secret_key[kZ85KeyLength + 1];
  if (zmq_curve_keypair(public_key, secret_key) != 0) {
    throw std::runtime_error("cannot make a CURVE key pair: " + std::string(zmq_strerror(errno)) +
                             " (libzmq built without libsodium?)");
  }
  return {public_key, secret_key};
}

void WriteKeyFiles(const KeyPair& keys, const std::filesystem::path& prefix) {
  const std::string pub = "public-key = \"" + keys.public_key + "\"\n";
  WriteNew(prefix.string() + ".key",
           "# ember CURVE key pair (docs/security.md). Keep this file secret.\n" + pub +
               "secret-key = \"" + keys.secret_key + "\"\n",
           0600);
  WriteNew(
      prefix.string() + ".pub",
      "# ember CURVE public key (docs/security.md): put it on the router's allow-list.\n" + pub,
      0644);
}

KeyPair LoadKeyFile(const std::filesystem::path& path, bool need_secret) {
  toml::table table;
  try {
    table = toml::parse_file(path.string());
  } catch (const toml::parse_error& e) {
    Fail(path, std::string(e.description()));
  }
  for (const auto& [key, value] : table) {
    if (key != "public-key" && key != "secret-key") {
      Fail(path, "unknown key '" + std::string(key.str()) + "'");
    }
  }
  KeyPair keys;
  keys.public_key = table["public-key"].value_or(std::string());
  keys.secret_key = table["secret-key"].value_or(std::string());
  if (!ValidZ85Key(keys.public_key)) Fail(path, "public-key must be 40 Z85 characters");
  if (!keys.secret_key.empty() && !ValidZ85Key(keys.secret_key)) {
    Fail(path, "secret-key must be 40 Z85 characters");
  }
  if (need_secret && keys.secret_key.empty()) Fail(path, "has no secret-key (a .pub file?)");
  return keys;
}

std::set<std::string> LoadPublicKeys(const std::filesystem::path& path) {
  std::set<std::string> keys;
  if (path.empty()) return keys;
  if (!std::filesystem::is_directory(path)) {
    keys.insert(LoadKeyFile(path, /*need_secret=*/false).public_key);
    return keys;
  }
  for (const auto& entry : std::filesystem::directory_iterator(path)) {
    const auto ext = entry.path().extension();
    if (entry.is_regular_file() && (ext == ".pub" || ext == ".key")) {
      keys.insert(LoadKeyFile(entry.path(), /*need_secret=*/false).public_key);
    }
  }
  return keys;
}

ClientKeys ClientKeys::Load(const std::filesystem::path& own_key_file,
                            const std::filesystem::path& server_key_file) {
  if (own_key_file.empty() && server_key_file.empty()) return {};
  if (own_key_file.empty() || server_key_file.empty()) {
    throw std::runtime_error(
        "CURVE needs both a key pair (--curve-key) and the router's public key "
        "(--curve-server-key)");
  }
  ClientKeys keys;
  keys.own = LoadKeyFile(own_key_file, /*need_secret=*/true);
  keys.server_public_key = LoadKeyFile(server_key_file, /*need_secret=*/false).public_key;
  return keys;
}

ClientKeys ClientKeys::FromEnvironment() {
  const char* own = std::getenv("EMBER_CURVE_KEY");
  const char* server = std::getenv("EMBER_CURVE_SERVER_KEY");
  return Load(own ? own : "", server ? server : "");
}

void MakeServer(zmq::socket_t& socket, const KeyPair& keys, const std::string& zap_domain) {
  socket.set(zmq::sockopt::curve_server, 1);
  socket.set(zmq::sockopt::curve_secretkey, keys.secret_key);
  socket.set(zmq::sockopt::zap_domain, zap_domain);
}

void MakeClient(zmq::socket_t& socket, const ClientKeys& keys) {
  if (!keys.enabled()) return;
  socket.set(zmq::sockopt::curve_serverkey, keys.server_public_key);
  socket.set(zmq::sockopt::curve_publickey, keys.own.public_key);
  socket.set(zmq::sockopt::curve_secretkey, keys.own.secret_key);
}

}  // namespace ember::curve
