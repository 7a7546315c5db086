#include "gateway/http_error.h"

#include <nlohmann/json.hpp>

namespace ember::gateway {

HttpError BadRequest(const std::string& message) {
  return HttpError(400, "invalid_request_error", "BAD_REQUEST", message);
}

HttpError FromEmberError(const ember::Error& error) {
  const std::string code(ErrorCodeName(error.code()));
  switch (error.code()) {
    case ErrorCode::kBadRequest:
    case ErrorCode::kTooLong:
      return HttpError(400, "invalid_request_error", code, error.what());
    case ErrorCode::kUnknownModel:
      return HttpError(404, "invalid_request_error", code, error.what());
    case ErrorCode::kOverloaded:
      return HttpError(429, "rate_limit_error", code, error.what());
    case ErrorCode::kUnavailable:
      return HttpError(503, "service_unavailable", code, error.what());
    case ErrorCode::kTimeout:
      return HttpError(504, "timeout", code, error.what());
    case ErrorCode::kUnauthorized:
      return HttpError(403, "permission_error", code, error.what());
    case ErrorCode::kInternal:
      break;
  }
  return HttpError(500, "server_error", code, error.what());
}

std::string OpenAiErrorJson(const HttpError& error) {
  const nlohmann::json body = {{"error",
                                {{"message", error.what()},
                                 {"type", error.type()},
                                 {"code", error.code()},
                                 {"param", nullptr}}}};
  // Replace, not throw, on invalid UTF-8 echoed from a request.
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ember::gateway
