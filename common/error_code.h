// Typed errors that travel on the wire. Every error reply a client sees carries
// one of these codes plus a human-readable message (see docs/protocol.md).
#ifndef EMBER_COMMON_ERROR_CODE_H_
#define EMBER_COMMON_ERROR_CODE_H_

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ember {

enum class ErrorCode {
  kBadRequest,    // malformed or invalid request (bad UTF-8, empty input, bad frame)
  kUnknownModel,  // no worker serves the requested model (or version)
  kOverloaded,    // queue full: retry later
  kTimeout,       // the request's deadline passed before a result was ready
  kUnavailable,   // the model is known but no worker can serve it right now
  kTooLong,       // an input exceeds the model's maximum length and truncation is off
  kInternal,      // a bug or a failure inside ember; the message says what
  kUnauthorized,  // the caller's key may not do this (model management needs an admin key)
};

// The wire name, e.g. "UNKNOWN_MODEL".
std::string_view ErrorCodeName(ErrorCode code);

// Inverse of ErrorCodeName; nullopt for names this version does not know.
std::optional<ErrorCode> ParseErrorCode(std::string_view name);

// An error with a code, thrown by the client SDK and used inside processes to
// carry a typed failure up to the point where it becomes an ERROR reply.
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace ember

#endif  // EMBER_COMMON_ERROR_CODE_H_
