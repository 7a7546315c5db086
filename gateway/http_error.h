// An HTTP failure as the gateway answers it: status, OpenAI error type and a
// code, plus the mapping from ember's wire error codes (docs/protocol.md) to
// HTTP statuses, so that HTTP clients can tell "fix your request" (4xx) from
// "retry later" (429/503/504) without parsing messages.
#ifndef EMBER_GATEWAY_HTTP_ERROR_H_
#define EMBER_GATEWAY_HTTP_ERROR_H_

#include <stdexcept>
#include <string>

#include "common/error_code.h"

namespace ember::gateway {

class HttpError : public std::runtime_error {
 public:
  // `type` is OpenAI's error type (invalid_request_error, ...); `code` is
  // ember's error code name (BAD_REQUEST, UNKNOWN_MODEL, ...).
  HttpError(int status, std::string type, std::string code, const std::string& message)
      : std::runtime_error(message),
        status_(status),
        type_(std::move(type)),
        code_(std::move(code)) {}

  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::string& code() const { return code_; }

 private:
  int status_;
  std::string type_;
  std::string code_;
};

// A malformed HTTP request (400, BAD_REQUEST): never reaches the router.
HttpError BadRequest(const std::string& message);

// BAD_REQUEST/TOO_LONG -> 400, UNKNOWN_MODEL -> 404, OVERLOADED -> 429,
// UNAVAILABLE -> 503, TIMEOUT -> 504, UNAUTHORIZED -> 403, INTERNAL -> 500.
HttpError FromEmberError(const ember::Error& error);

// {"error": {"message": ..., "type": ..., "code": ..., "param": null}}
std::string OpenAiErrorJson(const HttpError& error);

}  // namespace ember::gateway

#endif  // EMBER_GATEWAY_HTTP_ERROR_H_
